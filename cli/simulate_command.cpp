#include "cli/simulate_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/input_guards.hpp"
#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "sim/scenarios/autograd_scenarios.hpp"
#include "sim/world/world.hpp"
#include "traces/program_file.hpp"
#include "traces/trace_writer.hpp"

namespace capsim::cli {

namespace {

int bad_input(const std::string& message) {
  std::fprintf(stderr, "capsim: error: %s\n", message.c_str());
  return kExitBadInput;
}

// An action line without its envelope, for people: `[3] call {...}`.
std::string action_text(std::size_t index, const Action& action) {
  Json j = Json::parse(action_line(0, index, action));
  const std::string kind = j.value("action", "");
  for (const char* key : {"seq", "type", "index", "action"}) j.erase(key);
  return fmt::format("[{}] {} {}", index, kind, j.dump());
}

}  // namespace

int simulate_command(const std::string& path, const std::string& output,
                     std::optional<TorchProfile> torch) {
  Result<ProgramFile> file = read_program_file(path);
  if (!file) return bad_input(file.error().message);
  if (torch) file->header.config.torch_profile = *torch;
  WorldOptions options;
  options.config = file->header.config;
  options.seed = file->header.seed;
  options.autograd_scenarios = find_autograd_scenario;
  World world(options);
  if (Status s = world.begin(file->program); !s) {
    return bad_input(fmt::format("{}: {}", path, s.error().message));
  }
  std::vector<Event> events;
  std::vector<std::string> listing;
  for (std::size_t i = 0; i < file->program.actions.size(); ++i) {
    const Action& action = file->program.actions[i];
    if (Status s = world.run_action(i, action); !s) {
      return bad_input(
          fmt::format("{}:{}: action {}: {}", path, file->action_lines[i], i, s.error().message));
    }
    listing.push_back(action_text(i, action));
    for (Event& e : world.take_events()) {
      listing.push_back("    " + format_event(e));
      events.push_back(std::move(e));
    }
  }
  TraceHeader header = file->header;
  header.producer = std::string(kModelProducer);
  header.observes.reset();
  if (!output.empty()) {
    Result<std::vector<std::string>> lines = trace_lines(header, file->program, events);
    if (!lines) return bad_input(fmt::format("{}: {}", path, lines.error().message));
    if (Status w = write_trace_file(output, *lines); !w) return bad_input(w.error().message);
  }
  // With "-o -" the trace is stdout, and the listing goes to stderr.
  std::FILE* out = output == kStdoutPath ? stderr : stdout;
  for (const std::string& line : listing) std::fprintf(out, "%s\n", line.c_str());
  const Counters& c = world.counters();
  std::fprintf(
      out,
      "simulated %s: %zu actions, %zu events; %llu recorded, %llu re-recorded, %llu "
      "replays, %llu copies (%llu bytes), %llu errors\n",
      path.c_str(), file->program.actions.size(), events.size(),
      static_cast<unsigned long long>(c.graphs_recorded),
      static_cast<unsigned long long>(c.rerecords), static_cast<unsigned long long>(c.replays),
      static_cast<unsigned long long>(c.copies), static_cast<unsigned long long>(c.copy_bytes),
      static_cast<unsigned long long>(c.errors));
  return 0;
}

}  // namespace capsim::cli
