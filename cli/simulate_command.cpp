// The simulate subcommand (see simulate_command.hpp).
#include "cli/simulate_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "traces/analyses/explain.hpp"
#include "traces/format/trace_writer.hpp"
#include "traces/simulation/program_file.hpp"

namespace capsim::cli {

namespace {

void print_listing(std::FILE* out, const ProgramFile& file, const ProgramRun& run) {
  std::size_t next = 0;
  for (std::size_t i = 0; i < file.program.actions.size(); ++i) {
    std::fprintf(out, "[%zu] %s\n", i, action_summary(i, file.program.actions[i]).c_str());
    for (; next < run.events.size() && run.events[next].action == i; ++next) {
      std::fprintf(out, "    %s\n", format_event(run.events[next]).c_str());
    }
  }
}

}  // namespace

int simulate_command(const std::string& path, const std::string& output,
                     const ProgramRunOptions& options) {
  const std::optional<TorchProfile>& torch = options.torch;
  Result<ProgramFile> file = read_program_file(path);
  if (!file) return fail(file.error().message);
  Result<ProgramRun> run = run_program_file(*file, path, options);
  if (!run) return fail(run.error().message);
  if (!output.empty()) {
    TraceHeader header = file->header;
    header.producer = std::string(kModelProducer);
    header.observes.reset();
    if (torch) header.config.torch_profile = *torch;
    Result<std::vector<std::string>> lines = trace_lines(header, file->program, run->events);
    if (!lines) return fail(fmt::format("{}: {}", path, lines.error().message));
    if (Status w = write_trace_file(output, *lines); !w) return fail(w.error().message);
  }
  // With "-o -" the trace is stdout, and the listing goes to stderr.
  std::FILE* out = output == kStdoutPath ? stderr : stdout;
  print_listing(out, *file, *run);
  const Counters& c = run->counters;
  std::fprintf(
      out,
      "simulated %s: %zu actions, %zu events; %llu recorded, %llu re-recorded, %llu "
      "replays, %llu copies (%llu bytes), %llu errors\n",
      path.c_str(), file->program.actions.size(), run->events.size(),
      static_cast<unsigned long long>(c.graphs_recorded),
      static_cast<unsigned long long>(c.rerecords), static_cast<unsigned long long>(c.replays),
      static_cast<unsigned long long>(c.copies), static_cast<unsigned long long>(c.copy_bytes),
      static_cast<unsigned long long>(c.errors));
  if (run->values_off) {
    std::fprintf(out,
                 "values off (%s): sizes, addresses and decisions only; no kernel ran and "
                 "reads show no values\n",
                 run->values_off->c_str());
  }
  return 0;
}

}  // namespace capsim::cli
