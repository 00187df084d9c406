// Replay: re-simulate a recorded trace and hold its observations to the model.
//
// The trace's actions run, one by one, in a fresh World with the recorded
// config and seed; after each action the events the model produced are
// compared, in order, with the event lines that follow it in the trace (only
// the kinds the producer declares that it observed). The first event where
// they part is the divergence: the recorded line, the event the model
// predicted there, the first field that differs, and the last matching lines
// for context. Replay goes on after it, without comparing, to collect every
// invariant violation:
//   - from the recorded events alone (they hold for any producer): a replay
//     that found other static pointers than its recording baked in
//     (`static_pointers_stable`), a copy-in of other than the recording's
//     non-static inputs (`copies_non_static_only`), a compiled-autograd
//     capture that read proxy metadata (`no_proxy_metadata_reads`);
//   - from the re-simulation, which checks every replay against eager
//     execution (`replay_equals_eager`), every static input it reads
//     (`static_inputs_alive`), and every compiled-autograd backward against
//     an eager backward (`compiled_backward_equals_eager`).
// Bad input (a malformed line, an action the World refuses) is an Error
// naming file:line:column; a divergence or a violation is a report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/world/world.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

struct ResimulationOptions {
  std::size_t context = 3;  // matching lines shown before a divergence
  // WorldOptions's; 0: the trace's default (walk_trace: larger for a trace
  // written with values off).
  std::uint64_t memory_budget_bytes = 0;
  // Re-simulate under this release's rules instead of the header's profile.
  std::optional<TorchProfile> torch_profile;
  // Compare captured graphs structurally (canonical targets and dataflow)
  // rather than node for node: the fallback a trace opts into where capsim
  // does not lay the graph out as the release does (docs/fidelity.md).
  bool structural = false;
  // Re-simulate with values off (no kernel runs, no replay is compared with
  // eager). resimulate_file sets it itself, with the reason, when values on
  // refuses an action of a trace it can read again.
  bool values_off = false;
};
inline constexpr std::size_t kMaxReplayContext = 1000;

struct Divergence {
  std::size_t line = 0;  // the trace line where recorded and predicted part
  // The first field that differs: "event" (the kind), "action", a field
  // key, or "" when one side has no event at all.
  std::string field;
  std::string recorded;              // the recorded line, "" when the trace has none there
  std::string predicted;             // the model's event as a trace line, "" when it predicts none
  std::vector<std::string> context;  // "LINE: text" of the last matching lines
  // For a captured graph that differs node for node, the two nodes.
  std::string detail;
};

struct Violation {
  std::size_t line = 0;
  std::string invariant;
  std::string message;
};

struct ResimulationReport {
  std::string file;
  TraceHeader header;
  std::size_t lines = 0;
  std::size_t actions = 0;
  std::size_t events_recorded = 0;
  std::size_t events_matched = 0;
  std::optional<Divergence> divergence;
  std::vector<Violation> violations;
  std::vector<std::string> warnings;
  // Why the run went with values off when the trace was written with values
  // on: the refusal of values on that resimulate_file met first.
  std::optional<std::string> values_off;
  bool ok() const { return !divergence && violations.empty(); }
};

// The limit on violations one report lists (the count goes on).
inline constexpr std::size_t kMaxReportedViolations = 100;

Result<ResimulationReport> resimulate_trace(TraceReader& reader,
                                            const ResimulationOptions& options);
Result<ResimulationReport> resimulate_file(const std::string& path,
                                           const ResimulationOptions& options);

// "FILE: ok, ..." or "FILE:LINE: diverged at field 'f': ..." (one line).
std::string report_summary(const ResimulationReport& report);
// The whole report as one JSON object (capsim replay --json).
Json report_to_json(const ResimulationReport& report);

}  // namespace capsim
