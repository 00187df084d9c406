// The trace property checks (see trace_checks.hpp).
#include "properties/trace_checks.hpp"

#include <fmt/format.h>

#include <memory>
#include <sstream>

#include "traces/format/trace_format.hpp"
#include "traces/simulation/resimulation.hpp"

namespace capsim {

Result<std::vector<std::string>> generated_trace_lines(const GeneratedProgram& generated,
                                                       const WorldOptions& options,
                                                       const std::string& name) {
  Status status;
  const std::unique_ptr<World> world = run_generated(generated, options, status);
  CAPSIM_TRY(status);
  TraceHeader header;
  header.name = name;
  header.seed = generated.seed;
  header.config = options.config;
  header.config.torch_profile = generated.torch_profile;
  apply_knobs(generated.knobs, generated.numel, header.config);
  return trace_lines(header, generated.program, world->events());
}

Result<std::string> record_generated(const GeneratedProgram& generated, Fault fault) {
  WorldOptions options;
  options.fault = fault;
  CAPSIM_TRY_ASSIGN(const std::vector<std::string> lines,
                    generated_trace_lines(generated, options, "generated"));
  std::string text;
  for (const std::string& line : lines) text.append(line).append("\n");
  return text;
}

CheckResult check_trace_round_trip(const GeneratedProgram& generated, Fault recorded_with) {
  Result<std::string> text = record_generated(generated, recorded_with);
  if (!text) return "bad input: " + text.error().message;
  auto reader = TraceReader::open(std::make_unique<std::istringstream>(*text), "generated.jsonl");
  if (!reader) return "unreadable trace: " + reader.error().message;
  const Result<ResimulationReport> report = resimulate_trace(**reader, ResimulationOptions{});
  if (!report) return "bad trace: " + report.error().message;
  if (report->divergence) {
    const Divergence& d = *report->divergence;
    return fmt::format("line {} field '{}': recorded {} but the model predicts {}", d.line, d.field,
                       d.recorded.empty() ? "nothing" : d.recorded,
                       d.predicted.empty() ? "nothing" : d.predicted);
  }
  if (!report->violations.empty()) return report_summary(*report);
  if (report->events_matched != report->events_recorded) {
    return fmt::format("{} of {} recorded events matched", report->events_matched,
                       report->events_recorded);
  }
  return std::nullopt;
}

CheckResult check_trace_bytes_deterministic(const GeneratedProgram& generated, bool vary_seed,
                                            Fault recorded_with) {
  GeneratedProgram again = generated;
  if (vary_seed) ++again.seed;
  Result<std::string> a = record_generated(generated, recorded_with);
  Result<std::string> b = record_generated(again, recorded_with);
  if (!a || !b) {
    // A run that fails past the contract's end (run_twice): both must fail
    // alike, and the recordings of the actions before are compared.
    WorldOptions options;
    options.fault = recorded_with;
    const TwoRuns runs = run_twice(generated, again, options);
    if (runs.ending) return runs.ending;
    a = record_generated(first_actions(generated, runs.completed), recorded_with);
    b = record_generated(first_actions(again, runs.completed), recorded_with);
    if (!a) return "bad input: " + a.error().message;
    if (!b) return "bad input: " + b.error().message;
  }
  if (*a == *b) return std::nullopt;
  std::size_t at = 0;
  while (at < a->size() && at < b->size() && (*a)[at] == (*b)[at]) ++at;
  return fmt::format("two recordings differ from byte {}", at);
}

}  // namespace capsim
