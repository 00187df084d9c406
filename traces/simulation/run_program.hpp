// Running a program through a World: the one loop behind simulate, explain,
// the what-ifs, replay, the Chrome export and the drawings of a trace.
//
// A source hands over a program's lines in order (a trace read line by line,
// or a program file already in memory); run_program collects the functions,
// runs each action in one World, and tells an observer about every action
// (before and after it ran, with the events it made) and every event line.
// The World is never shown an event line: a trace's events are what an
// observer compares with, or draws, against the World's own.
//
// One stop rule for every caller (OnRaise): a run ends at its first raise,
// as a real run dies at the first RuntimeError it does not catch, or keeps
// going past it; an action refused after a raise ends the run (it needs what
// the raise left unmade); one refused with no raise before it is bad input,
// which the observer turns into an error (or, for an export that goes on
// without the model, into the end of the simulation).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/world/world.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

// What a simulated run does at a raise (an `error` event: E1, E3, E4, E8,
// ...; each a RuntimeError in PyTorch).
enum class OnRaise : std::uint8_t {
  // As a real run: the script dies at the first RuntimeError it does not
  // catch, and a program has no way to catch one, so the run ends after the
  // action that raised. The default of every prediction (simulate, explain,
  // what-ifs).
  kStop,
  // Every action runs on past a raise, so that each later error shows; an
  // action refused after one (it needs what the raise left unmade: a call
  // that raised binds no outputs) ends the run instead of failing it. Replay,
  // the export and the drawings walk a trace so: its events say what came.
  kKeepGoing,
};

// Why a run ended before its last action.
enum class RunStop : std::uint8_t { kNone, kRaise, kRefusedAfterRaise, kRefused };

// Where a run ended, against where a real one would.
struct RunEnd {
  std::optional<std::size_t> error_at;    // the first action that raised
  std::optional<std::size_t> stopped_at;  // the first action not run
  RunStop stop = RunStop::kNone;
};

// Where a program's lines come from. `next` gives the next line after the
// header (a function, an action or an event), nullptr at the end; the item
// stays valid until the next call.
class ProgramSource {
 public:
  virtual ~ProgramSource() = default;
  virtual const TraceHeader& header() const = 0;
  virtual const std::string& name() const = 0;
  virtual Result<TraceItem*> next() = 0;
};

// A trace, read a line at a time (memory stays flat however long it is).
class TraceSource final : public ProgramSource {
 public:
  explicit TraceSource(TraceReader& reader) : reader_(reader) {}
  const TraceHeader& header() const override { return reader_.header(); }
  const std::string& name() const override { return reader_.name(); }
  Result<TraceItem*> next() override { return reader_.advance(); }

 private:
  TraceReader& reader_;
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // Before the action of `item` runs (not called once the simulation stopped).
  virtual Status before_action(const TraceItem& item, const World& world);
  // After it ran, with the events it made, taken from the World (which keeps
  // no history, so a long trace's memory stays flat).
  virtual Status after_action(const TraceItem& item, World& world, std::vector<Event>& events);
  // The World refused `action` (bad input: an unknown name, a function the
  // program never defined) with no raise before it; a null `action`: it
  // refused the program's functions (World::begin), before the first action
  // or, in a program without actions, at the end. An Error ends the run with
  // it; success stops the simulation, and every later line still comes to
  // the observer. By default: an error naming the source, the line and the
  // action.
  virtual Status on_refused(const TraceItem* action, const std::string& source, const Error& why);
  // Every event line, in order; an action's events follow its action line.
  virtual Status on_event(const TraceItem& item);
  // Actions read after the simulation stopped.
  virtual Status on_unsimulated_action(const TraceItem& item);
  // After the last line, while the World still exists.
  virtual Status on_end(const World& world, const RunEnd& end);
};

// Runs `source` in one World made from `options` (the caller fills them from
// the header: replay_world_options, or simulate_program's own). An Error
// from the source or the observer ends the run with it.
Status run_program(ProgramSource& source, WorldOptions options, OnRaise on_raise,
                   RunObserver& observer);

// A World's options for replaying a trace under its header: its config and
// seed (`torch_profile`, when given, replaces the header's profile), device
// evidence for a CUDA backend's trace, and values off for a trace written
// so. A budget of 0 is the trace's default: kDefaultMemoryBudget, or
// kValuesOffMemoryBudget with values off. An error when values off meets a
// reference mirror.
Result<WorldOptions> replay_world_options(const TraceHeader& header, WorldOptions options,
                                          std::optional<TorchProfile> torch_profile = std::nullopt);

// With values off and no budget given, the simulated device may take this
// much (no host bytes stand behind it): an 80 GiB device, as an H100's.
inline constexpr std::uint64_t kValuesOffMemoryBudget = std::uint64_t{80} << 30;

}  // namespace capsim
