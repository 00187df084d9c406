// The Chrome trace validator (chrome_export.hpp): what the viewers rely on
// and silently drop or misdraw otherwise. validate_chrome_trace checks a
// whole document (tests and fuzzing hold one); ChromeTraceChecker checks the
// export as it streams, one event at a time, in memory that does not grow
// with the trace's length.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "traces/analyses/chrome_export.hpp"

namespace capsim {

namespace {

struct Span {
  double ts = 0;
  double end = 0;
  std::size_t index = 0;
};
struct FlowEnd {
  std::size_t index = 0;
  double ts = 0;
  std::string name, cat;
  bool next_slice = false;  // an "f" without bp "e" binds to the next slice
};
using ThreadKey = std::pair<std::int64_t, std::int64_t>;

// The metadata events Chrome knows; it ignores others without a word.
bool known_metadata(std::string_view name) {
  static const std::set<std::string, std::less<>> kMetadata = {
      "process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"};
  return kMetadata.contains(name);
}

Error at(std::size_t i, const std::string& what) {
  return make_error(fmt::format("traceEvents[{}]: {}", i, what));
}

// Sorts each thread's slices and checks that any two are nested or disjoint.
Status check_nesting(std::map<ThreadKey, std::vector<Span>>& threads) {
  for (auto& [thread, spans] : threads) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.end != b.end ? a.end > b.end : a.index < b.index;
    });
    std::vector<const Span*> open;
    for (const Span& s : spans) {
      while (!open.empty() && open.back()->end <= s.ts) open.pop_back();
      if (!open.empty() && s.end > open.back()->end) {
        return at(s.index, fmt::format("X event overlaps traceEvents[{}] without nesting in it",
                                       open.back()->index));
      }
      open.push_back(&s);
    }
  }
  return {};
}

// The flow point must lie in a slice of its thread ("e": the enclosing one).
Status check_binding(const FlowEnd& f, const std::vector<Span>& spans) {
  for (const Span& s : spans) {
    if (f.next_slice ? s.ts >= f.ts : (s.ts <= f.ts && f.ts <= s.end)) return {};
  }
  return at(f.index, f.next_slice ? "flow event has no slice after it on its thread"
                                  : "flow event lies inside no X event of its thread");
}

// What one pass over the events gathers for the checks across events.
struct SeenEvents {
  std::map<ThreadKey, std::vector<Span>> slices;
  std::map<std::string, std::vector<FlowEnd>> starts, finishes;  // by id
  std::vector<ThreadKey> flow_threads;                           // by event index
};

// The fields of one phase: X (dur), M (a known metadata name and its arg),
// i/I (the scope), s/f (id, cat, binding point).
Status check_phase(std::size_t i, const Json& e, const std::string& ph) {
  const std::string name = e["name"].get<std::string>();
  if (ph == "X") {
    if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
      return at(i, "X event without a non-negative 'dur'");
    }
  } else if (ph == "M") {
    if (!known_metadata(name)) return at(i, fmt::format("unknown metadata '{}'", name));
    if (!e.contains("args") || !e["args"].is_object()) return at(i, "metadata without args");
    const bool sort = name.ends_with("sort_index");
    const char* key = sort ? "sort_index" : name.ends_with("labels") ? "labels" : "name";
    if (!e["args"].contains(key) ||
        !(sort ? e["args"][key].is_number_integer() : e["args"][key].is_string())) {
      return at(i, fmt::format("metadata '{}' without args.{}", name, key));
    }
  } else if (ph == "i" || ph == "I") {
    if (e.contains("s") && e["s"] != "g" && e["s"] != "p" && e["s"] != "t") {
      return at(i, "instant scope 's' must be g, p or t");
    }
  } else if (ph == "s" || ph == "f") {
    if (!e.contains("id") || !(e["id"].is_number_integer() || e["id"].is_string())) {
      return at(i, "flow event without an 'id'");
    }
    if (!e.contains("cat") || !e["cat"].is_string()) return at(i, "flow event without a 'cat'");
    if (e.contains("bp") && e["bp"] != "e") return at(i, "flow binding point 'bp' must be e");
  }
  return {};
}

ThreadKey thread_of(const Json& e) {
  return {e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>()};
}

// What the checks across events need of one event, once its fields hold.
void remember(std::size_t i, const Json& e, SeenEvents& seen) {
  const std::string ph = e["ph"].get<std::string>();
  const double ts = e["ts"].get<double>();
  if (ph == "X") seen.slices[thread_of(e)].push_back({ts, ts + e["dur"].get<double>(), i});
  if (ph != "s" && ph != "f") return;
  const bool next = ph == "f" && !(e.contains("bp") && e["bp"] == "e");
  auto& ends = ph == "s" ? seen.starts : seen.finishes;
  ends[e["id"].dump()].push_back(
      {i, ts, e["name"].get<std::string>(), e["cat"].get<std::string>(), next});
  seen.flow_threads[i] = thread_of(e);
}

// The fields every event has (name, ph, pid, tid, ts), then its phase's own.
Status check_fields(std::size_t i, const Json& e) {
  static const std::set<std::string, std::less<>> kPhases = {
      "B", "E", "X", "i", "I", "C", "b", "n", "e", "s", "t", "f", "M", "N", "O", "D", "P", "R"};
  if (!e.is_object()) return at(i, "not an object");
  for (const char* key : {"name", "ph", "pid", "tid", "ts"}) {
    if (!e.contains(key)) return at(i, fmt::format("missing '{}'", key));
  }
  if (!e["name"].is_string()) return at(i, "'name' is not a string");
  if (!e["ph"].is_string() || !kPhases.contains(e["ph"].get<std::string>())) {
    return at(i, "'ph' is not a known phase");
  }
  if (!e["pid"].is_number_integer() || !e["tid"].is_number_integer()) {
    return at(i, "'pid' and 'tid' must be integers");
  }
  if (!e["ts"].is_number()) return at(i, "'ts' is not a number");
  return check_phase(i, e, e["ph"].get<std::string>());
}

// Every flow id has one s and one f, of the same name and cat, f not before
// s, each bound to a slice of its thread.
Status check_flows(SeenEvents& seen) {
  for (const auto* side : {&seen.starts, &seen.finishes}) {
    for (const auto& [id, ends] : *side) {
      const auto& other = side == &seen.starts ? seen.finishes : seen.starts;
      if (ends.size() != 1) return at(ends[1].index, fmt::format("flow id {} repeats", id));
      if (!other.contains(id)) {
        return at(ends[0].index, fmt::format("flow id {} has no matching {} event", id,
                                             side == &seen.starts ? "f" : "s"));
      }
      CAPSIM_TRY(check_binding(ends[0], seen.slices[seen.flow_threads[ends[0].index]]));
    }
  }
  for (const auto& [id, s] : seen.starts) {
    const FlowEnd& f = seen.finishes.at(id).front();
    if (s[0].name != f.name || s[0].cat != f.cat) {
      return at(f.index, fmt::format("flow id {}: s and f differ in name or cat", id));
    }
    if (f.ts < s[0].ts) return at(f.index, fmt::format("flow id {} ends before it starts", id));
  }
  return {};
}

}  // namespace

Status validate_chrome_trace(const Json& doc) {
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    return make_error("the document is not an object with a traceEvents array");
  }
  if (doc.contains("displayTimeUnit")) {
    const Json& u = doc["displayTimeUnit"];
    if (!u.is_string() || (u != "ms" && u != "ns")) {
      return make_error("displayTimeUnit must be \"ms\" or \"ns\"");
    }
  }
  const Json& events = doc["traceEvents"];
  SeenEvents seen;
  seen.flow_threads.resize(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    CAPSIM_TRY(check_fields(i, events[i]));
    remember(i, events[i], seen);
  }
  CAPSIM_TRY(check_nesting(seen.slices));
  return check_flows(seen);
}

// --- The streaming check ------------------------------------------------------

Status ChromeTraceChecker::add(const ChromeEvent& e, bool may_start_flows) {
  const std::size_t i = count_++;
  switch (e.ph) {
    case ChromePhase::kComplete: return add_slice(i, e, may_start_flows);
    case ChromePhase::kFlowStart:
    case ChromePhase::kFlowEnd: return add_flow(i, e);
    case ChromePhase::kMetadata:
      if (!known_metadata(e.name)) return at(i, fmt::format("unknown metadata '{}'", e.name));
      return {};
    case ChromePhase::kInstant: return {};
  }
  return at(i, "'ph' is not a known phase");
}

// The thread's slices arrive in time order, so the nesting stack decides
// each one as it comes: what ended before it is popped; it must then end
// inside what is still open.
Status ChromeTraceChecker::add_slice(std::size_t i, const ChromeEvent& e, bool may_start_flows) {
  Thread& t = threads_[{e.pid, e.tid}];
  const Span span{e.ts, e.ts + e.dur};
  if (span.end < span.ts) return at(i, "X event's 'dur' runs past the clock");
  if (e.ts < t.last_ts) {
    return at(i,
              "X event before the last slice of its thread (a stream keeps each thread's "
              "slices in time order)");
  }
  t.last_ts = e.ts;
  while (!t.open.empty() && t.open.back().end <= e.ts) t.open.pop_back();
  if (!t.open.empty() && span.end > t.open.back().end) {
    return at(i, "X event overlaps an enclosing slice without nesting in it");
  }
  t.open.push_back(span);
  if (may_start_flows) t.flow_starts.push_back(span);
  return {};
}

// "f" binds to an open slice of its thread (its bp is "e"), "s" to a slice
// sent with may_start_flows; the two ends match once both came.
Status ChromeTraceChecker::add_flow(std::size_t i, const ChromeEvent& e) {
  const bool finish = e.ph == ChromePhase::kFlowEnd;
  const Thread& t = threads_[{e.pid, e.tid}];
  const auto inside = [&e](const Span& s) { return s.ts <= e.ts && e.ts <= s.end; };
  const bool bound = finish ? std::any_of(t.open.begin(), t.open.end(), inside)
                            : std::any_of(t.flow_starts.begin(), t.flow_starts.end(), inside);
  if (!bound) return at(i, "flow event lies inside no X event of its thread");
  if (e.cat.empty()) return at(i, "flow event without a 'cat'");
  FlowEnd end{i, e.ts, e.name, e.cat, e.ph};
  auto other = pending_.find(e.id);
  if (other == pending_.end()) {
    pending_.emplace(e.id, std::move(end));
    return {};
  }
  if (other->second.ph == e.ph) return at(i, fmt::format("flow id {} repeats", e.id));
  const FlowEnd& s = finish ? other->second : end;
  const FlowEnd& f = finish ? end : other->second;
  if (s.name != f.name || s.cat != f.cat) {
    return at(i, fmt::format("flow id {}: s and f differ in name or cat", e.id));
  }
  if (f.ts < s.ts) return at(i, fmt::format("flow id {} ends before it starts", e.id));
  pending_.erase(other);
  return {};
}

Status ChromeTraceChecker::finish() const {
  if (pending_.empty()) return {};
  const auto& [id, end] = *pending_.begin();
  return at(end.index, fmt::format("flow id {} has no matching {} event", id,
                                   end.ph == ChromePhase::kFlowStart ? "f" : "s"));
}

}  // namespace capsim
