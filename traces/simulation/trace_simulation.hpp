// Walking a trace through the model: the one loop behind replay, the Chrome
// export and the drawings of a trace.
//
// The walk reads a trace line by line, collects its functions, and runs each
// action in one World made from the header's config and seed (plus whatever
// else the caller sets in WorldOptions), telling a visitor about every action
// (before and after it ran) and every event line. The World is never shown
// an event line: the trace's events are what a visitor compares with, or
// draws, against the World's own.
#pragma once

#include "model/result.hpp"
#include "sim/world/world.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

class TraceVisitor {
 public:
  virtual ~TraceVisitor() = default;
  // Before the action of `item` runs (not called once the simulation stopped).
  virtual Status before_action(const TraceItem& item, const World& world);
  // After it ran. `ran` is the World's verdict: an Error when it refused the
  // action (bad input: an unknown name, a function the trace never defined).
  // Return an Error to end the walk with it, false to stop simulating (the
  // walk still reads, and shows the visitor, every later line), true to go on.
  virtual Result<bool> after_action(const TraceItem& item, World& world, const Status& ran) = 0;
  // Every event line, in order; an action's events follow its action line.
  virtual Status on_event(const TraceItem& item);
  // Actions read after the simulation stopped.
  virtual Status on_unsimulated_action(const TraceItem& item);
  // After the last line, while the World still exists.
  virtual Status on_end(const World& world);
};

// `options.config` and `options.seed` are taken from the trace's header;
// `torch_profile`, when given, replaces the header's profile. A header that
// says values off turns them off. A budget of 0 is the trace's default:
// kDefaultMemoryBudget, or kValuesOffMemoryBudget with values off.
Status walk_trace(TraceReader& reader, WorldOptions options, TraceVisitor& visitor,
                  std::optional<TorchProfile> torch_profile = std::nullopt);

}  // namespace capsim
