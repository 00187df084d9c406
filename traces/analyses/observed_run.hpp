// A run as `capsim explain` reads it: a trace's actions and the events it
// observed (capsim's, the CUDA backend's, or a real PyTorch run's), or a
// program without events, which is simulated first (traces/simulation/program_file.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"
#include "sim/core/events.hpp"
#include "sim/core/function_def.hpp"
#include "sim/program/program.hpp"
#include "traces/format/trace_format.hpp"
#include "traces/simulation/program_file.hpp"

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
  // Simulated (a program, or as on a GPU): the first action that raised,
  // where a real run dies, and, when the simulation ended early, the first
  // action it did not run and why (ProgramRun). `kept_going`: it ran on past
  // the raise (OnRaise::kKeepGoing), so later decisions are beyond a real run.
  std::optional<std::size_t> error_at;
  std::optional<std::size_t> stopped_at;
  RunStop stop = RunStop::kNone;
  bool kept_going = false;
  // Simulated: per action run, the cudagraph pool's bytes after it
  // (ProgramRun::pool_bytes); empty for a trace's own events.
  std::vector<PoolBytes> pool_bytes;
  // The reader's warnings (a cut last line: docs/reliability.md), which every
  // command prints on stderr as replay does.
  std::vector<std::string> warnings;
};

// Reads a trace, or a program (a short header, or no events in a trace that
// is not a real run's), which it simulates. Bad input is an error naming the
// file, the line and the field. The file is opened once and read once, front
// to back (traces/format/input_file.hpp): a FIFO, a process substitution and
// "-" (standard input) work as a file does.
// A program runs as `how` says (by default it ends at its first raise, as a
// real run does; values auto; the default device budget).
Result<ObservedRun> observe_file(const std::string& path, const ProgramRunOptions& how = {});

// `run` with its events replaced by capsim's simulation of its program with
// CUDA graphs on, as on a GPU under mode="reduce-overhead": what a run
// recorded without them (a CPU run, `"cudagraphs": false`) would have met on
// a GPU. `explain --as-on-a-gpu` explains it, and what-ifs of such a run
// compare against it. The header is kept: it still says how the run went.
Result<ObservedRun> as_on_a_gpu(const ObservedRun& run, const ProgramRunOptions& how = {});

// Whether an event's `function` belongs to the function line `line`: the
// function itself, or one of its graph partitions ("f.partition_0").
bool belongs_to_function(std::string_view function, std::string_view line);

// Whether a `record` event re-records: a first recording at its point of the
// tree is "no_child"; every other reason is a failed check of an existing one.
bool is_rerecording(const Event& record);

// The pool's bytes after each action as capsim's model has them: a
// simulated run's own, or, for a trace's events, those of a simulation of
// its program under its header (a trace records no pool's bytes; the
// simulation ends where the run would, at its first raise). Shorter than the
// actions when the run ended early. An error when the World refuses the
// program (a trace that `capsim replay` would report).
Result<std::vector<PoolBytes>> modelled_pool_bytes(const ObservedRun& run,
                                                   const ProgramRunOptions& how = {});

}  // namespace capsim
