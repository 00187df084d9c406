// A run as `capsim explain` reads it: a trace's actions and the events it
// observed (capsim's, the CUDA backend's, or a real PyTorch run's), or a
// program without events, which is simulated first (traces/simulation/program_file.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/core/events.hpp"
#include "sim/core/function_def.hpp"
#include "sim/world/program.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim {

struct ObservedRun {
  TraceHeader header;
  std::vector<FunctionDef> functions;
  std::vector<Action> actions;
  std::vector<Event> events;
  std::vector<std::size_t> event_lines;     // per event; 0 when simulated
  std::vector<std::string> event_messages;  // per event: a recorder's x_message, or ""
  bool simulated = false;                   // the file was a program without events
  bool as_on_a_gpu = false;                 // events re-simulated with CUDA graphs on
  // As on a GPU: the first action the simulation could not run, because an
  // earlier error left unmade what it needs (ProgramRun), and that error's
  // action, where a GPU run itself would have stopped.
  std::optional<std::size_t> stopped_at;
  std::optional<std::size_t> error_at;
  // The reader's warnings (a cut last line: docs/reliability.md), which every
  // command prints on stderr as replay does.
  std::vector<std::string> warnings;
};

// Reads a trace, or a program (a short header, or no events in a trace that
// is not a real run's), which it simulates. Bad input is an error naming the
// file, the line and the field.
Result<ObservedRun> observe_file(const std::string& path);

// `run` with its events replaced by capsim's simulation of its program with
// CUDA graphs on, as on a GPU under mode="reduce-overhead": what a run
// recorded without them (a CPU run, `"cudagraphs": false`) would have met on
// a GPU. `explain --as-on-a-gpu` explains it, and what-ifs of such a run
// compare against it. The header is kept: it still says how the run went.
Result<ObservedRun> as_on_a_gpu(const ObservedRun& run);

}  // namespace capsim
