// The Chrome exporter and its validator (see chrome_export.hpp).
//
// Layout on the logical clock (1 us per tick, never the wall clock): each
// action opens a host slice at the clock; its events are laid out one after
// another on the stream from there, and the host slice ends where the last of
// them ends (at least 1 us later). A replay of n steps spans n + 3 ticks: one
// for the launch, where the flow from its recording lands, one per step (the
// nested kernel slices), one for the tail. Flow points sit strictly inside
// their slice and outside its children, so viewers bind them unambiguously.
#include "traces/analyses/chrome_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <set>

#include "sim/world/world.hpp"
#include "traces/format/event_schema.hpp"
#include "traces/format/program_json.hpp"
#include "traces/simulation/run_program.hpp"

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

// An args object being written; finish() closes it and hands it over.
struct ArgsText {
  ArgsText() = default;
  ArgsText(const ArgsText&) = delete;  // `members` writes into `text`
  ArgsText& operator=(const ArgsText&) = delete;
  std::string finish() {
    members.close();
    return std::move(text);
  }
  std::string text;
  JsonObjectText members{text};
};

ChromeEvent metadata(std::string name, int pid, int tid, std::string args) {
  return ChromeEvent{.ph = ChromePhase::kMetadata,
                     .name = std::move(name),
                     .pid = pid,
                     .tid = tid,
                     .args = std::move(args)};
}

ChromeEvent slice(std::string name, int pid, int tid, std::uint64_t ts, std::uint64_t dur,
                  std::string args) {
  return ChromeEvent{.ph = ChromePhase::kComplete,
                     .name = std::move(name),
                     .pid = pid,
                     .tid = tid,
                     .ts = ts,
                     .dur = dur,
                     .args = std::move(args)};
}

ChromeEvent instant(std::string name, int pid, int tid, std::uint64_t ts, std::string args) {
  return ChromeEvent{.ph = ChromePhase::kInstant,
                     .name = std::move(name),
                     .pid = pid,
                     .tid = tid,
                     .ts = ts,
                     .args = std::move(args)};
}

// A recorded tree graph, keyed by (tree generation, graph id): graph ids
// restart when a shutdown ends a tree manager.
using GraphKey = std::pair<std::uint64_t, std::int64_t>;
struct StepLabel {
  std::string name;
  std::string_view kind;
};

// Where every Chrome event goes: the sink, and its first failure (a full
// disk, a check that fails), kept so that the walk stops at the next callback.
struct Emitter {
  ChromeEventSink& sink;
  Status failed;
  void emit(const ChromeEvent& event, bool may_start_flows = false) {
    if (!failed) return;
    failed = sink.event(event, may_start_flows);
  }
};

// The model's kernel names for each graph it recorded, by (tree generation,
// graph id), as the simulation beside the export found them; `simulated`
// false (and `note` why) once the model refused the trace.
struct ModelKernelNames {
  // Keeps the steps of every graph the action recorded in the model.
  void keep(const World& world, const std::vector<Event>& events) {
    std::vector<GraphKey> recorded;
    for (const Event& e : events) {
      if (e.kind == EventKind::kShutdown) ++gen;
      if (e.kind != EventKind::kRecord || e.has(F::api)) continue;
      if (std::optional<std::int64_t> g = int_field(e, F::graph)) recorded.push_back({gen, *g});
    }
    // Only graphs of the manager alive now: a shutdown later in the action
    // took the earlier ones with it.
    const TreeManager* m = world.manager();
    for (const GraphKey& key : recorded) {
      if (m == nullptr || key.first != gen || key.second < 0) continue;
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
      steps[key] = std::move(labels);
    }
  }

  bool simulated = true;
  std::string note;
  std::uint64_t gen = 0;
  std::map<GraphKey, std::vector<StepLabel>> steps;
};

// The stream's lane: each of the trace's events laid out at the cursor, a
// replay with its nested steps (named by the model where it has them) and
// the arrow from its recording.
class StreamLane {
 public:
  StreamLane(Emitter& out, const ModelKernelNames& model) : out_(out), model_(model) {}

  std::uint64_t cursor = 0;  // where the next event goes; the host lane moves it to each action

  // One event line of the trace `file`.
  Status on_event_line(const TraceItem& item, const std::string& file) {
    const Event& e = item.event;
    // The event's fields, then where it is; no event has a field of either
    // name (sim/core/event_fields.hpp).
    ArgsText args;
    if (Status fields = append_event_fields(args.members, e); !fields) {
      return make_error(fmt::format("{}:{}:1: {}", file, item.line, fields.error().message));
    }
    args.members.add("generation", trace_gen_);
    args.members.add("line", static_cast<std::uint64_t>(item.line));
    draw_event(e, target_of(e), args);
    if (e.kind == EventKind::kShutdown) ++trace_gen_;
    return {};
  }

 private:
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

  void draw_event(const Event& e, const GraphTarget& t, ArgsText& args) {
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
        records_[key] = Recording{cursor + 1, steps};
        device(fmt::format("record {} ({})", target, fn), steps + 2, args.finish(), true);
        break;
      }
      case EventKind::kCopyIn: {
        const std::int64_t copies = int_field(e, F::copies).value_or(0);
        device(fmt::format("copy_in {}{}", target, plain),
               static_cast<std::uint64_t>(std::max<std::int64_t>(1, copies)), args.finish());
        break;
      }
      case EventKind::kReplay:
        on_replay(graph, key, fmt::format("{}{}", target, plain), args);
        break;
      case EventKind::kWarmup:
        device(fmt::format("warmup {} (node {})", fn, text_field(e, F::node)), 1, args.finish());
        break;
      case EventKind::kEager:
        device(fmt::format("eager {} ({})", fn, text_field(e, F::reason)), 1, args.finish());
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
        device(std::move(name), 1, args.finish());
        break;
      }
      case EventKind::kSkip:
      case EventKind::kWarning:
      case EventKind::kError:
        emit(instant(fmt::format("{} {}", kind, text_field(e, F::id)), kChromeDevicePid,
                     kChromeStreamTid, cursor, args.finish()));
        ++cursor;
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
        emit(instant(kind, kChromeHostPid, kChromeHostTid, cursor, args.finish()));
        ++cursor;
        break;
    }
  }

  void on_replay(std::optional<std::int64_t> graph, const std::string& key,
                 const std::string& target, ArgsText& args) {
    const std::uint64_t start = cursor;
    auto r = records_.find(key);
    const Recording* rec = r == records_.end() ? nullptr : &r->second;
    // The model's names only where its graph has the trace's step count.
    const auto l = graph ? model_.steps.find({trace_gen_, *graph}) : model_.steps.end();
    const std::vector<StepLabel>* labels =
        l != model_.steps.end() && (!rec || l->second.size() == rec->steps) ? &l->second : nullptr;
    const std::uint64_t steps = rec ? rec->steps : labels ? labels->size() : 0;
    args.members.add("steps", steps);
    // The nested slices are the export's one cost that a trace's numbers
    // multiply (replays times steps): past the budget a replay is one slice.
    const bool nested = steps <= kMaxStepSlicesPerReplay && step_slices_ + steps <= kMaxStepSlices;
    if (steps > kMaxStepSlicesPerReplay) {
      args.members.add("kernel_names",
                       fmt::format("not drawn: {} steps, more than the {} drawn per replay", steps,
                                   kMaxStepSlicesPerReplay));
    } else if (!nested) {
      args.members.add("kernel_names", "not drawn: the export's budget of step slices is spent");
    } else {
      args.members.add("kernel_names", labels ? "simulated" : "step k");
    }
    step_slices_ += nested ? steps : 0;
    device(fmt::format("replay {}", target), steps + 3, args.finish());
    const std::string graph_text = graph ? fmt::format("{}", *graph) : "null";
    for (std::uint64_t k = 0; nested && k < steps; ++k) {
      ArgsText kargs;
      kargs.members.add_raw("graph", graph_text);
      kargs.members.add("graph_node_id", k);
      kargs.members.add("step", labels ? (*labels)[k].kind : std::string_view("step"));
      ChromeEvent step =
          slice(labels ? (*labels)[k].name : fmt::format("step {}", k), kChromeDevicePid,
                kChromeStreamTid, start + 2 + k, 1, kargs.finish());
      step.replayed_step = true;
      emit(step);
    }
    if (!rec) return;
    // One arrow per replay: ids carry the tree generation, since graph ids
    // restart with every tree manager.
    const std::uint64_t id = (trace_gen_ << 32) | ++arrows_[trace_gen_];
    emit(flow(ChromePhase::kFlowStart, target, id, rec->flow_ts));
    emit(flow(ChromePhase::kFlowEnd, target, id, start + 1));
  }

  // An "f" binds to the enclosing slice (bp "e"): the replay.
  ChromeEvent flow(ChromePhase ph, const std::string& name, std::uint64_t id,
                   std::uint64_t ts) const {
    ArgsText args;
    args.members.add("generation", trace_gen_);
    return ChromeEvent{.ph = ph,
                       .name = name,
                       .pid = kChromeDevicePid,
                       .tid = kChromeStreamTid,
                       .ts = ts,
                       .id = id,
                       .cat = "graph",
                       .args = args.finish()};
  }

  // A slice on the stream at the cursor, which it advances.
  // `may_start_flows`: a recording, where the arrows of its later replays
  // start (the streaming check keeps such slices to bind them).
  void device(std::string name, std::uint64_t dur, std::string args, bool may_start_flows = false) {
    emit(slice(std::move(name), kChromeDevicePid, kChromeStreamTid, cursor, dur, std::move(args)),
         may_start_flows);
    cursor += dur;
  }

  struct Recording {
    std::uint64_t flow_ts = 0;  // inside the record slice: where its arrows start
    std::uint64_t steps = 0;
  };

  void emit(const ChromeEvent& event, bool may_start_flows = false) {
    out_.emit(event, may_start_flows);
  }

  Emitter& out_;
  const ModelKernelNames& model_;
  std::uint64_t trace_gen_ = 0;
  std::map<std::string, Recording> records_;       // by "generation:graph" or "plain:function"
  std::map<std::uint64_t, std::uint64_t> arrows_;  // per generation
  std::uint64_t step_slices_ = 0;
};

// The host lane (one slice per action) and the run beside it.
class Exporter : public RunObserver {
 public:
  Exporter(TraceReader& reader, std::uint64_t memory_budget_bytes, ChromeEventSink& sink)
      : reader_(reader), out_{sink, {}}, memory_budget_bytes_(memory_budget_bytes) {}

  // Streams every event to the sink; returns the document's other fields.
  Result<Json> run() {
    const TraceHeader& h = reader_.header();
    struct Lane {
      int pid, tid;
      const char *process, *thread;
    };
    for (const Lane& l :
         {Lane{kChromeHostPid, kChromeHostTid, "host: program actions", "program"},
          Lane{kChromeDevicePid, kChromeStreamTid, "cuda:0 (capsim model)", "stream 0"}}) {
      const auto one = [](std::string_view key, auto value) {
        ArgsText args;
        args.members.add(key, value);
        return args.finish();
      };
      out_.emit(metadata("process_name", l.pid, l.tid, one("name", l.process)));
      out_.emit(metadata("process_sort_index", l.pid, l.tid, one("sort_index", l.pid)));
      out_.emit(metadata("thread_name", l.pid, l.tid, one("name", l.thread)));
    }
    WorldOptions wo;
    wo.verify_replays = false;  // its verdicts are diagnostics; the export needs names only
    wo.memory_budget_bytes = memory_budget_bytes_;
    CAPSIM_TRY_ASSIGN(wo, replay_world_options(reader_.header(), std::move(wo)));
    TraceSource source(reader_);
    CAPSIM_TRY(run_program(source, std::move(wo), OnRaise::kKeepGoing, *this));
    close_action();
    CAPSIM_TRY(out_.failed);
    Json doc = Json::object();
    doc["displayTimeUnit"] = "ms";
    doc["otherData"] =
        Json{{"exporter", fmt::format("capsim {}", kCapsimVersion)},
             {"name", h.name},
             {"producer", h.producer},
             {"seed", h.seed},
             {"clock", "logical: 1 us per kernel, per event, per action"},
             {"kernel_names", model_.simulated ? "simulated" : "step k: " + model_.note}};
    return doc;
  }

  Status before_action(const TraceItem& item, const World&) override {
    open_action(item);
    return out_.failed;
  }
  Status on_unsimulated_action(const TraceItem& item) override {
    open_action(item);
    return out_.failed;
  }
  Status after_action(const TraceItem&, World& world, std::vector<Event>& events) override {
    model_.keep(world, events);
    return out_.failed;
  }
  Status on_end(const World&, const RunEnd& end) override {
    if (end.stop == RunStop::kRefusedAfterRaise && end.stopped_at) {
      model_.simulated = false;
      model_.note = fmt::format("the model raised, then refused action {}", *end.stopped_at);
    }
    return out_.failed;
  }
  // A refusal stops the simulation, not the export.
  Status on_refused(const TraceItem* action, const std::string&, const Error& why) override {
    model_.simulated = false;
    model_.note = fmt::format("the model refused line {}: {}",
                              action != nullptr ? action->line : reader_.lines_read(), why.message);
    return {};
  }
  Status on_event(const TraceItem& item) override {
    CAPSIM_TRY(stream_.on_event_line(item, reader_.name()));
    return out_.failed;
  }

 private:
  void open_action(const TraceItem& item) {
    close_action();
    action_start_ = clock_;
    stream_.cursor = clock_;
    const Json action = action_to_json(item.action);
    std::string name(action_name(item.action));
    for (const char* key : {"name", "function"}) {
      if (action.contains(key) && action[key].is_string())
        name.append(" ").append(action[key].get_ref<const std::string&>());
    }
    // The action's own fields, then where it is; no action has a field of
    // either name.
    CAPSIM_CHECK(!action.contains("index") && !action.contains("line"), "appended keys are new");
    std::string args = action.dump();
    args.pop_back();
    fmt::format_to(std::back_inserter(args), ",\"index\":{},\"line\":{}}}", item.action_index,
                   item.line);
    // Held until the action's last event says where it ends: the one event
    // the export keeps back (events may come in any order in the file).
    action_slice_ =
        slice(std::move(name), kChromeHostPid, kChromeHostTid, clock_, 1, std::move(args));
  }

  // The host slice ends where the action's last event ends.
  void close_action() {
    if (!action_slice_) return;
    const std::uint64_t end = std::max(stream_.cursor, action_start_ + 1);
    action_slice_->dur = end - action_start_;
    out_.emit(*action_slice_);
    clock_ = end;
    action_slice_.reset();
  }

  TraceReader& reader_;
  Emitter out_;
  ModelKernelNames model_;
  StreamLane stream_{out_, model_};
  std::uint64_t clock_ = 0;
  std::uint64_t action_start_ = 0;
  std::optional<ChromeEvent> action_slice_;
  std::uint64_t memory_budget_bytes_;
};

}  // namespace

Result<Json> stream_chrome_trace(TraceReader& reader, ChromeEventSink& sink,
                                 std::uint64_t memory_budget_bytes) {
  return Exporter(reader, memory_budget_bytes, sink).run();
}

namespace {

// Keeps every event: the whole document, for tests and fuzzing.
class CollectingSink : public ChromeEventSink {
 public:
  Status event(const ChromeEvent& event, bool) override {
    line.clear();
    append_chrome_event(line, event);
    events.push_back(Json::parse(line));
    return {};
  }
  std::string line;
  Json events = Json::array();
};

}  // namespace

Result<Json> chrome_trace(TraceReader& reader, std::uint64_t memory_budget_bytes) {
  CollectingSink sink;
  CAPSIM_TRY_ASSIGN(Json doc, stream_chrome_trace(reader, sink, memory_budget_bytes));
  doc["traceEvents"] = std::move(sink.events);
  return doc;
}

}  // namespace capsim
