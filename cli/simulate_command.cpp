// The simulate subcommand (see simulate_command.hpp).
#include "cli/simulate_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "traces/analyses/explain.hpp"
#include "traces/format/input_file.hpp"
#include "traces/format/trace_reader.hpp"
#include "traces/format/trace_writer.hpp"
#include "traces/simulation/program_file.hpp"

namespace capsim::cli {

namespace {

// Where a real run dies: after the events of the first action that raised.
std::string raise_marker(const ProgramRun& run, std::size_t n, OnRaise on_raise) {
  if (on_raise == OnRaise::kStop && run.stop != RunStop::kRaise) {
    return "-- a real run ends here: nothing catches the RuntimeError (the last action)";
  }
  if (run.stop == RunStop::kRaise) {
    return fmt::format(
        "-- a real run ends here: nothing catches the RuntimeError; actions {} to {} are not "
        "run (--keep-going runs them)",
        *run.stopped_at, n - 1);
  }
  return "-- a real run ends here: nothing catches the RuntimeError; what follows is beyond it";
}

void print_listing(std::FILE* out, const ProgramFile& file, const ProgramRun& run,
                   OnRaise on_raise) {
  const std::size_t n = file.program.actions.size();
  const std::size_t ran = run.stopped_at.value_or(n);
  std::size_t next = 0;
  for (std::size_t i = 0; i < ran; ++i) {
    std::fprintf(out, "[%zu] %s\n", i,
                 printable_message(action_summary(i, file.program.actions[i])).c_str());
    for (; next < run.events.size() && run.events[next].action == i; ++next) {
      std::fprintf(out, "    %s\n", printable_message(format_event(run.events[next])).c_str());
    }
    if (run.error_at == i) std::fprintf(out, "    %s\n", raise_marker(run, n, on_raise).c_str());
  }
  if (run.stop == RunStop::kRefusedAfterRaise) {
    std::fprintf(out, "[%zu] %s\n    not run: it needs what the error at action %zu left unmade\n",
                 ran, action_summary(ran, file.program.actions[ran]).c_str(), *run.error_at);
  }
}

}  // namespace

int simulate_command(const std::string& path, const std::string& output,
                     const ProgramRunOptions& options) {
  const std::optional<TorchProfile>& torch = options.torch;
  Result<ProgramFile> file = read_program_file(path);
  if (!file) return fail(file.error().message);
  const std::string name = input_name(path);
  Result<ProgramRun> run = simulate_program(*file, name, options);
  if (!run) return fail(run.error().message);
  if (!output.empty()) {
    // The trace holds the actions that ran, so that it replays as written.
    Program program = file->program;
    if (run->stopped_at) program.actions.resize(*run->stopped_at);
    TraceHeader header = file->header;
    header.producer = std::string(kModelProducer);
    header.observes.reset();
    header.values = !run->values_off.has_value();
    if (torch) header.config.torch_profile = *torch;
    Result<std::vector<std::string>> lines = trace_lines(header, program, run->events);
    if (!lines) {
      return fail(fmt::format("{}: {}", printable_message(name), lines.error().message));
    }
    if (Status w = write_trace_file(output, *lines); !w) return fail(w.error().message);
  }
  // With "-o -" the trace is stdout, and the listing goes to stderr.
  std::FILE* out = output == kStdoutPath ? stderr : stdout;
  print_listing(out, *file, *run, options.on_raise);
  const Counters& c = run->counters;
  std::fprintf(out,
               "simulated %s: %zu actions, %zu events; %llu recorded, %llu re-recorded, %llu "
               "replays, %llu copies (%s bytes), %llu errors\n",
               printable_message(name).c_str(), file->program.actions.size(), run->events.size(),
               static_cast<unsigned long long>(c.graphs_recorded),
               static_cast<unsigned long long>(c.rerecords),
               static_cast<unsigned long long>(c.replays),
               static_cast<unsigned long long>(c.copies), c.copy_bytes.text().c_str(),
               static_cast<unsigned long long>(c.errors));
  if (run->stopped_at) {
    std::fprintf(out, "stopped after action %zu of %zu: %s\n", *run->error_at,
                 file->program.actions.size(),
                 run->stop == RunStop::kRaise
                     ? "the first error, where a real run dies (--keep-going simulates on)"
                     : "the next action needs what that error left unmade");
  }
  if (run->values_off) {
    std::fprintf(out,
                 "values off (%s): sizes, addresses and decisions only; no kernel ran and "
                 "reads show no values\n",
                 run->values_off->c_str());
  }
  return 0;
}

}  // namespace capsim::cli
