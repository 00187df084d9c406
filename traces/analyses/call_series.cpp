// Call series (see call_series.hpp): one pass over the actions and, beside
// it, their events, which a run holds in action order.
#include "traces/analyses/call_series.hpp"

#include <algorithm>
#include <cstdint>
#include <map>

#include "sim/core/event_fields.hpp"

namespace capsim {

namespace {

// The function line a name belongs to: the longest line name that is the
// name or its prefix before a '.' (a partition, "f.partition_0"); the name
// itself when no line has it (an optimizer step's function has none).
std::string owner_of(const std::vector<FunctionDef>& defs, std::string_view name) {
  std::string_view best;
  for (const FunctionDef& d : defs) {
    if (belongs_to_function(name, d.name) && d.name.size() > best.size()) best = d.name;
  }
  return std::string(best.empty() ? name : best);
}

class SeriesBuilder {
 public:
  SeriesBuilder(const ObservedRun& run, std::span<const PoolBytes> pool) : run_(run), pool_(pool) {}

  // The point of `function`'s call at `action`, made on first use.
  CallPoint& point(std::string_view function, std::size_t action) {
    const std::string name = owner_of(run_.functions, function);
    auto [it, fresh] = index_.try_emplace(name, out_.functions.size());
    if (fresh) out_.functions.push_back(FunctionCalls{name, {}});
    std::vector<CallPoint>& calls = out_.functions[it->second].calls;
    if (calls.empty() || calls.back().action != action) {
      CallPoint p;
      p.action = action;
      if (action < pool_.size()) p.pool = pool_[action];
      calls.push_back(p);
      touched_.push_back(it->second);
    }
    return calls.back();
  }

  void add_event(const Event& e) {
    const std::optional<std::string_view> function = e.text(F::function);
    if (!function) {
      // An error of the call as a whole: every function the action called.
      if (e.kind != EventKind::kError) return;
      for (std::size_t f : touched_) out_.functions[f].calls.back().error = true;
      if (touched_.empty()) out_.errors_outside_calls.push_back(e.action);
      return;
    }
    CallPoint& p = point(*function, e.action);
    switch (e.kind) {
      case EventKind::kCopyIn: p.copy_bytes.add(e.count(F::bytes)); break;
      case EventKind::kRecord: (is_rerecording(e) ? p.rerecorded : p.recorded) = true; break;
      case EventKind::kEager: p.eager = true; break;
      case EventKind::kError: p.error = true; break;
      default: break;
    }
  }

  void next_action() { touched_.clear(); }
  CallSeries take() { return std::move(out_); }

 private:
  const ObservedRun& run_;
  std::span<const PoolBytes> pool_;
  CallSeries out_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::vector<std::size_t> touched_;  // functions with a point at this action
};

}  // namespace

CallSeries calls_by_function(const ObservedRun& run, std::span<const PoolBytes> pool) {
  SeriesBuilder builder(run, pool);
  std::size_t next = 0;
  // A simulation that ended early (at a raise) never ran the later actions.
  const std::size_t end = std::min(run.actions.size(), run.stopped_at.value_or(SIZE_MAX));
  for (std::size_t i = 0; i < end; ++i) {
    builder.next_action();
    if (const auto* call = std::get_if<Call>(&run.actions[i])) builder.point(call->function, i);
    for (; next < run.events.size() && run.events[next].action <= i; ++next) {
      builder.add_event(run.events[next]);
    }
  }
  return builder.take();
}

}  // namespace capsim
