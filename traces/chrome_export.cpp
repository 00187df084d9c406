// The Chrome exporter and its validator (see chrome_export.hpp).
//
// Layout on the logical clock (1 us per tick, never the wall clock): each
// action opens a host slice at the clock; its events are laid out one after
// another on the stream from there, and the host slice ends where the last of
// them ends (at least 1 us later). A replay of n steps spans n + 3 ticks: one
// for the launch, where the flow from its recording lands, one per step (the
// nested kernel slices), one for the tail. Flow points sit strictly inside
// their slice and outside its children, so viewers bind them unambiguously.
#include "traces/chrome_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <set>

#include "sim/world/world.hpp"
#include "traces/event_schema.hpp"
#include "traces/program_json.hpp"
#include "traces/trace_simulation.hpp"

namespace capsim {

namespace {

std::optional<std::int64_t> int_field(const Event& e, FieldKey key) {
  const std::int64_t* v = e.get_if<std::int64_t>(key);
  return v ? std::optional(*v) : std::nullopt;
}

// The field as the text printer writes it, for a slice's name.
std::string text_field(const Event& e, FieldKey key) {
  return e.printed(key).value_or("");
}

Json metadata(std::string_view name, int pid, int tid, Json args) {
  return Json{{"name", name}, {"ph", "M"}, {"ts", 0}, {"pid", pid}, {"tid", tid}, {"args", args}};
}

Json slice(std::string name, int pid, int tid, std::uint64_t ts, std::uint64_t dur, Json args) {
  return Json{
      {"name", std::move(name)}, {"ph", "X"}, {"ts", ts}, {"dur", dur}, {"pid", pid}, {"tid", tid},
      {"args", std::move(args)}};
}

Json instant(std::string name, int pid, int tid, std::uint64_t ts, Json args) {
  return Json{
      {"name", std::move(name)}, {"ph", "i"}, {"s", "t"}, {"ts", ts}, {"pid", pid}, {"tid", tid},
      {"args", std::move(args)}};
}

// A recorded tree graph, keyed by (tree generation, graph id): graph ids
// restart when a shutdown ends a tree manager.
using GraphKey = std::pair<std::uint64_t, std::int64_t>;
struct StepLabel {
  std::string name;
  std::string_view kind;
};

class Exporter : public TraceVisitor {
 public:
  Exporter(TraceReader& reader, std::uint64_t memory_budget_bytes)
      : reader_(reader), memory_budget_bytes_(memory_budget_bytes) {}

  Result<Json> run() {
    const TraceHeader& h = reader_.header();
    struct Lane {
      int pid, tid;
      const char *process, *thread;
    };
    for (const Lane& l :
         {Lane{kChromeHostPid, kChromeHostTid, "host: program actions", "program"},
          Lane{kChromeDevicePid, kChromeStreamTid, "cuda:0 (capsim model)", "stream 0"}}) {
      events_.push_back(metadata("process_name", l.pid, l.tid, {{"name", l.process}}));
      events_.push_back(metadata("process_sort_index", l.pid, l.tid, {{"sort_index", l.pid}}));
      events_.push_back(metadata("thread_name", l.pid, l.tid, {{"name", l.thread}}));
    }
    WorldOptions wo;
    wo.verify_replays = false;  // its verdicts are diagnostics; the export needs names only
    wo.memory_budget_bytes = memory_budget_bytes_;
    CAPSIM_TRY(walk_trace(reader_, wo, *this));
    close_action();
    Json doc = Json::object();
    doc["traceEvents"] = std::move(events_);
    doc["displayTimeUnit"] = "ms";
    doc["otherData"] = Json{{"exporter", fmt::format("capsim {}", kCapsimVersion)},
                            {"name", h.name},
                            {"producer", h.producer},
                            {"seed", h.seed},
                            {"clock", "logical: 1 us per kernel, per event, per action"},
                            {"kernel_names", simulated_ ? "simulated" : "step k: " + sim_note_}};
    return doc;
  }

  Status before_action(const TraceItem& item, const World&) override {
    open_action(item);
    return {};
  }
  Status on_unsimulated_action(const TraceItem& item) override {
    open_action(item);
    return {};
  }
  Result<bool> after_action(const TraceItem& item, World& world, const Status& ran) override {
    return simulate(item, world, ran);
  }
  Status on_event(const TraceItem& item) override { return on_event_line(item); }

 private:
  void open_action(const TraceItem& item) {
    close_action();
    action_start_ = clock_;
    cursor_ = clock_;
    Json args = action_to_json(item.action);
    std::string name(action_name(item.action));
    for (const char* key : {"name", "function"}) {
      if (args.contains(key) && args[key].is_string())
        name.append(" ").append(args[key].get<std::string>());
    }
    args["index"] = item.action_index;
    args["line"] = item.line;
    action_slice_ = events_.size();
    events_.push_back(slice(std::move(name), kChromeHostPid, kChromeHostTid, clock_, 1, args));
  }

  // The host slice ends where the action's last event ends.
  void close_action() {
    if (!action_slice_) return;
    const std::uint64_t end = std::max(cursor_, action_start_ + 1);
    events_[*action_slice_]["dur"] = end - action_start_;
    clock_ = end;
    action_slice_.reset();
  }

  // Keeps the steps of every graph the action recorded in the model. A
  // refusal stops the simulation, not the export.
  bool simulate(const TraceItem& item, World& world, const Status& ran) {
    if (!ran) {
      simulated_ = false;
      sim_note_ = fmt::format("the model refused line {}: {}", item.line, ran.error().message);
      return false;
    }
    const std::vector<Event>& events = world.events();
    std::vector<GraphKey> recorded;
    for (; seen_ < events.size(); ++seen_) {
      const Event& e = events[seen_];
      if (e.kind == EventKind::kShutdown) ++model_gen_;
      if (e.kind != EventKind::kRecord || e.has(F::api)) continue;
      if (std::optional<std::int64_t> g = int_field(e, F::graph))
        recorded.push_back({model_gen_, *g});
    }
    // Only graphs of the manager alive now: a shutdown later in the action
    // took the earlier ones with it.
    const TreeManager* m = world.manager();
    for (const GraphKey& key : recorded) {
      if (m == nullptr || key.first != model_gen_ || key.second < 0) continue;
      Result<const StepProgram*> program = m->graph_program(static_cast<GraphId>(key.second));
      if (!program) continue;
      std::vector<StepLabel> labels;
      for (const Step& step : (*program)->steps) {
        const StepKind kind = step_kind(step);
        std::string label = kind == StepKind::kKernel
                                ? std::string(kernel_name(std::get<KernelLaunch>(step.op).kind))
                            : kind == StepKind::kCopy ? "memcpy"
                                                      : "memset";
        labels.push_back({std::move(label), step_kind_name(kind)});
      }
      model_steps_[key] = std::move(labels);
    }
    return true;
  }

  Status on_event_line(const TraceItem& item) {
    const Event& e = item.event;
    Result<Json> fields = event_fields_to_json(e);
    if (!fields) {
      return make_error(
          fmt::format("{}:{}:1: {}", reader_.name(), item.line, fields.error().message));
    }
    Json args = std::move(*fields);
    args["generation"] = trace_gen_;
    args["line"] = item.line;
    draw_event(e, target_of(e), std::move(args));
    if (e.kind == EventKind::kShutdown) ++trace_gen_;
    return {};
  }

  // The graph an event is about, as slices name it.
  struct GraphTarget {
    std::optional<std::int64_t> graph;  // none for a plain-API graph
    std::string fn;
    std::string target;  // "graph 3" or "plain graph"
    std::string key;     // records_'s key
    std::string plain;   // " (fn)" for a plain-API graph
  };
  GraphTarget target_of(const Event& e) const {
    GraphTarget t;
    t.fn = text_field(e, F::function);
    t.graph = e.has(F::api) ? std::nullopt : int_field(e, F::graph);
    t.target = t.graph ? fmt::format("graph {}", *t.graph) : "plain graph";
    // Plain-API graphs have no ids: one per function, the latest recording.
    t.key = t.graph ? fmt::format("{}:{}", trace_gen_, *t.graph) : "plain:" + t.fn;
    t.plain = t.graph ? "" : " (" + t.fn + ")";
    return t;
  }

  void draw_event(const Event& e, const GraphTarget& t, Json args) {
    const std::string& fn = t.fn;
    const std::string& target = t.target;
    const std::string& key = t.key;
    const std::string& plain = t.plain;
    const std::optional<std::int64_t>& graph = t.graph;
    const std::string kind(event_kind_name(e.kind));
    switch (e.kind) {
      case EventKind::kRecord: {
        const std::uint64_t steps = static_cast<std::uint64_t>(
            std::max<std::int64_t>(0, int_field(e, F::steps).value_or(0)));
        records_[key] = Recording{cursor_ + 1, steps};
        device(fmt::format("record {} ({})", target, fn), steps + 2, std::move(args));
        break;
      }
      case EventKind::kCopyIn: {
        const std::int64_t copies = int_field(e, F::copies).value_or(0);
        device(fmt::format("copy_in {}{}", target, plain),
               static_cast<std::uint64_t>(std::max<std::int64_t>(1, copies)), std::move(args));
        break;
      }
      case EventKind::kReplay:
        on_replay(graph, key, fmt::format("{}{}", target, plain), std::move(args));
        break;
      case EventKind::kWarmup:
        device(fmt::format("warmup {} (node {})", fn, text_field(e, F::node)), 1, std::move(args));
        break;
      case EventKind::kEager:
        device(fmt::format("eager {} ({})", fn, text_field(e, F::reason)), 1, std::move(args));
        break;
      case EventKind::kCheckpoint:
      case EventKind::kDealloc:
      case EventKind::kGenerationClone:
      case EventKind::kAlignClone:
      case EventKind::kDemote:
      case EventKind::kRead: {
        std::string name = kind;
        if (e.kind == EventKind::kRead) name.append(" ").append(text_field(e, F::name));
        if (e.kind == EventKind::kAlignClone || e.kind == EventKind::kDemote)
          name += fmt::format(" {} input {}", fn, text_field(e, F::input));
        device(std::move(name), 1, std::move(args));
        break;
      }
      case EventKind::kSkip:
      case EventKind::kWarning:
      case EventKind::kError:
        events_.push_back(instant(fmt::format("{} {}", kind, text_field(e, F::id)),
                                  kChromeDevicePid, kChromeStreamTid, cursor_, std::move(args)));
        ++cursor_;
        break;
      case EventKind::kShutdown:
      case EventKind::kCompile:
      case EventKind::kPathEnd:
      case EventKind::kOutput:
      case EventKind::kOptimizer:
      case EventKind::kZeroGrad:
      // Compiled autograd captures on the host, outside any graph.
      case EventKind::kCaCacheHit:
      case EventKind::kCaCacheMiss:
      case EventKind::kMetadataRead:
      case EventKind::kCaCapture:
      case EventKind::kCaRun:
      case EventKind::kCaGraph:
      case EventKind::kBackward:
      // A backend's evidence of the replay just drawn.
      case EventKind::kDevice:
        events_.push_back(instant(kind, kChromeHostPid, kChromeHostTid, cursor_, std::move(args)));
        ++cursor_;
        break;
    }
  }

  void on_replay(std::optional<std::int64_t> graph, const std::string& key,
                 const std::string& target, Json args) {
    const std::uint64_t start = cursor_;
    auto r = records_.find(key);
    const Recording* rec = r == records_.end() ? nullptr : &r->second;
    // The model's names only where its graph has the trace's step count.
    const auto l = graph ? model_steps_.find({trace_gen_, *graph}) : model_steps_.end();
    const std::vector<StepLabel>* labels =
        l != model_steps_.end() && (!rec || l->second.size() == rec->steps) ? &l->second : nullptr;
    const std::uint64_t steps = rec ? rec->steps : labels ? labels->size() : 0;
    args["steps"] = steps;
    args["kernel_names"] = labels ? "simulated" : "step k";
    // The nested slices are the export's one cost that a trace's numbers
    // multiply (replays times steps): past the budget a replay is one slice.
    const bool nested = step_slices_ + steps <= kMaxStepSlices;
    if (!nested) args["kernel_names"] = "not drawn: the export's budget of step slices is spent";
    step_slices_ += nested ? steps : 0;
    device(fmt::format("replay {}", target), steps + 3, std::move(args));
    for (std::uint64_t k = 0; nested && k < steps; ++k) {
      Json kargs{{"graph", graph ? Json(*graph) : Json(nullptr)}, {"graph_node_id", k}};
      kargs["step"] = labels ? (*labels)[k].kind : "step";
      events_.push_back(slice(labels ? (*labels)[k].name : fmt::format("step {}", k),
                              kChromeDevicePid, kChromeStreamTid, start + 2 + k, 1,
                              std::move(kargs)));
    }
    if (!rec) return;
    // One arrow per replay: ids carry the tree generation, since graph ids
    // restart with every tree manager.
    const std::uint64_t id = (trace_gen_ << 32) | ++arrows_[trace_gen_];
    events_.push_back(flow("s", target, id, rec->flow_ts));
    events_.push_back(flow("f", target, id, start + 1));
  }

  Json flow(const char* ph, const std::string& name, std::uint64_t id, std::uint64_t ts) const {
    Json j{{"name", name}, {"cat", "graph"}, {"ph", ph}};
    if (ph[0] == 'f') j["bp"] = "e";  // bind to the enclosing slice: the replay
    j.update(Json{{"id", id}, {"ts", ts}, {"pid", kChromeDevicePid}, {"tid", kChromeStreamTid}});
    j["args"] = Json{{"generation", trace_gen_}};
    return j;
  }

  // A slice on the stream at the cursor, which it advances.
  void device(std::string name, std::uint64_t dur, Json args) {
    events_.push_back(
        slice(std::move(name), kChromeDevicePid, kChromeStreamTid, cursor_, dur, std::move(args)));
    cursor_ += dur;
  }

  struct Recording {
    std::uint64_t flow_ts = 0;  // inside the record slice: where its arrows start
    std::uint64_t steps = 0;
  };

  TraceReader& reader_;
  Json events_ = Json::array();
  std::uint64_t clock_ = 0;
  std::uint64_t action_start_ = 0;
  std::uint64_t cursor_ = 0;
  std::optional<std::size_t> action_slice_;
  std::uint64_t trace_gen_ = 0;
  std::map<std::string, Recording> records_;       // by "generation:graph" or "plain:function"
  std::map<std::uint64_t, std::uint64_t> arrows_;  // per generation
  std::uint64_t step_slices_ = 0;
  std::uint64_t memory_budget_bytes_;

  bool simulated_ = true;
  std::string sim_note_;
  std::size_t seen_ = 0;
  std::uint64_t model_gen_ = 0;
  std::map<GraphKey, std::vector<StepLabel>> model_steps_;
};

}  // namespace

Result<Json> chrome_trace(TraceReader& reader, std::uint64_t memory_budget_bytes) {
  return Exporter(reader, memory_budget_bytes).run();
}

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
// i/I (the scope), s/f (id, cat, binding point); recorded in `seen`.
Status check_phase(std::size_t i, const Json& e, const std::string& ph, const ThreadKey& thread,
                   SeenEvents& seen) {
  static const std::set<std::string, std::less<>> kMetadata = {
      "process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"};
  const std::string name = e["name"].get<std::string>();
  const double ts = e["ts"].get<double>();
  if (ph == "X") {
    if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
      return at(i, "X event without a non-negative 'dur'");
    }
    seen.slices[thread].push_back({ts, ts + e["dur"].get<double>(), i});
  } else if (ph == "M") {
    if (!kMetadata.contains(name)) return at(i, fmt::format("unknown metadata '{}'", name));
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
    const bool next = ph == "f" && !(e.contains("bp") && e["bp"] == "e");
    if (e.contains("bp") && e["bp"] != "e") return at(i, "flow binding point 'bp' must be e");
    auto& ends = ph == "s" ? seen.starts : seen.finishes;
    ends[e["id"].dump()].push_back({i, ts, name, e["cat"].get<std::string>(), next});
    seen.flow_threads[i] = thread;
  }
  return {};
}

// The fields every event has (name, ph, pid, tid, ts), then its phase's own.
Status check_event(std::size_t i, const Json& e, SeenEvents& seen) {
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
  const ThreadKey thread{e["pid"].get<std::int64_t>(), e["tid"].get<std::int64_t>()};
  return check_phase(i, e, e["ph"].get<std::string>(), thread, seen);
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
  for (std::size_t i = 0; i < events.size(); ++i) CAPSIM_TRY(check_event(i, events[i], seen));
  CAPSIM_TRY(check_nesting(seen.slices));
  return check_flows(seen);
}

}  // namespace capsim
