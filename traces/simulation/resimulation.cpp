// Replay (see resimulation.hpp): the Resimulator that walks a trace and compares its events with
// the model's, the checks that hold for the recorded events alone, and the report in text and
// JSON.
#include "traces/simulation/resimulation.hpp"

#include <fmt/format.h>

#include <deque>
#include <map>

#include "sim/world/world.hpp"
#include "traces/format/event_schema.hpp"
#include "traces/simulation/event_compare.hpp"
#include "traces/simulation/run_program.hpp"

namespace capsim {

namespace {

// Invariants that the recorded events must satisfy whoever produced them.
class RecordedChecks {
 public:
  void observe(const TraceItem& item, std::vector<Violation>& out) {
    const Event& e = item.event;
    if (e.kind == EventKind::kMetadataRead) {
      observe_metadata_read(item, out);
      return;
    }
    if (e.kind == EventKind::kShutdown) graphs_.clear();  // graph ids restart per tree
    const std::int64_t* graph = e.get_if<std::int64_t>(F::graph);
    if (graph == nullptr || e.has(F::api)) return;
    if (e.kind == EventKind::kRecord) {
      Recording& r = graphs_[*graph];
      const AddressList* static_ptrs = e.get_if<AddressList>(F::static_ptrs);
      const IntList* static_idxs = e.get_if<IntList>(F::static_);
      r.static_ptrs = static_ptrs ? std::optional(*static_ptrs) : std::nullopt;
      r.static_idxs = static_idxs ? std::optional(*static_idxs) : std::nullopt;
      // The inputs each replay copies: non-static ones and (2.15) managed
      // ones demoted to copies.
      const IntList* non_static = e.get_if<IntList>(F::non_static);
      const IntList* demoted = e.get_if<IntList>(F::copied_managed);
      r.non_static = (non_static ? non_static->size() : 0) + (demoted ? demoted->size() : 0);
      r.copied_managed = demoted ? *demoted : IntList{};
      r.line = item.line;
      return;
    }
    auto it = graphs_.find(*graph);
    if (it == graphs_.end()) return;
    const Recording& r = it->second;
    const AddressList* ptrs = e.get_if<AddressList>(F::static_ptrs);
    if (e.kind == EventKind::kReplay && ptrs != nullptr && r.static_ptrs &&
        !baked_pointers_equal(r, *ptrs)) {
      out.push_back({item.line, "static_pointers_stable",
                     fmt::format("replay of graph {} found static pointers {} (inputs {}), but "
                                 "its recording at line {} baked in {}: the graph reads stale "
                                 "memory, a re-record was due",
                                 *graph, format_addresses(*ptrs),
                                 r.static_idxs ? format_list(*r.static_idxs) : "", r.line,
                                 format_addresses(*r.static_ptrs))});
    }
    if (e.kind == EventKind::kCopyIn) {
      const std::int64_t* copies = e.get_if<std::int64_t>(F::copies);
      if (copies == nullptr || *copies != static_cast<std::int64_t>(r.non_static)) {
        out.push_back(
            {item.line, "copies_non_static_only",
             fmt::format("copy-in for graph {} copied {} inputs, but its recording at "
                         "line {} has {} inputs to copy (non-static or demoted managed)",
                         *graph, copies ? std::to_string(*copies) : "", r.line, r.non_static)});
      }
    }
  }

 private:
  // The initial compiled-autograd capture must not read proxy metadata
  // (PR 144707): a read means the graph depends on dummy values. One
  // violation per backward, at its first read.
  void observe_metadata_read(const TraceItem& item, std::vector<Violation>& out) {
    const Event& e = item.event;
    const std::int64_t* backward = e.get_if<std::int64_t>(F::backward);
    const std::optional<std::int64_t> b = backward ? std::optional(*backward) : std::nullopt;
    if (b == last_read_backward_) return;
    last_read_backward_ = b;
    const std::int64_t* call = e.get_if<std::int64_t>(F::call);
    out.push_back({item.line, "no_proxy_metadata_reads",
                   fmt::format("the capture of backward {} read the {} of {}'s proxy (NodeCall {}, "
                               "{} mode): its graph depends on dummy metadata",
                               b ? std::to_string(*b) : "", e.text(F::metadata).value_or("?"),
                               e.text(F::autograd_node).value_or("?"),
                               call ? std::to_string(*call) : "?", e.text(F::mode).value_or("?"))});
  }

  struct Recording {
    std::optional<AddressList> static_ptrs;
    std::optional<IntList> static_idxs;
    IntList copied_managed;
    std::size_t non_static = 0;
    std::size_t line = 0;
  };

  // A replay's pointers against the recording's, at every static position
  // but the demoted managed ones (2.15): those stay in `static` as in
  // PyTorch, but are copied in, so their pointers may move.
  static bool baked_pointers_equal(const Recording& r, const AddressList& found) {
    const AddressList& baked = *r.static_ptrs;
    if (found.size() != baked.size()) return false;
    for (std::size_t k = 0; k < baked.size(); ++k) {
      if (found[k] == baked[k]) continue;
      const bool demoted =
          r.static_idxs && k < r.static_idxs->size() &&
          std::count(r.copied_managed.begin(), r.copied_managed.end(), (*r.static_idxs)[k]) != 0;
      if (!demoted) return false;
    }
    return true;
  }
  std::map<std::int64_t, Recording> graphs_;
  // The backward of the latest read (none before the first, as a read
  // without a backward).
  std::optional<std::int64_t> last_read_backward_;
};

// The last `capacity` matched event lines, for a divergence's report. A ring
// whose strings keep their capacity: recording one costs a copy into storage
// already there, not an allocation and a format per matched event.
class MatchedContext {
 public:
  explicit MatchedContext(std::size_t capacity) : ring_(capacity) {}
  void add(std::size_t line, const std::string& text) {
    if (ring_.empty()) return;
    auto& [at, copy] = ring_[next_];
    at = line;
    copy.assign(text);
    next_ = (next_ + 1) % ring_.size();
    count_ = std::min(count_ + 1, ring_.size());
  }
  // Oldest first, each "LINE: TEXT".
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < count_; ++i) {
      const auto& [at, text] = ring_[(next_ + ring_.size() - count_ + i) % ring_.size()];
      out.push_back(fmt::format("{}: {}", at, text));
    }
    return out;
  }

 private:
  std::vector<std::pair<std::size_t, std::string>> ring_;
  std::size_t next_ = 0, count_ = 0;
};

class Resimulator : public RunObserver {
 public:
  Resimulator(TraceReader& reader, const ResimulationOptions& options)
      : reader_(reader),
        options_(options),
        comparison_(reader.header().observes_real_run(), options.structural) {}

  Result<ResimulationReport> run() {
    report_.file = reader_.name();
    report_.header = reader_.header();
    WorldOptions wo;
    wo.verify_replays = !options_.values_off;
    wo.values = !options_.values_off;
    wo.memory_budget_bytes = options_.memory_budget_bytes;
    CAPSIM_TRY_ASSIGN(
        wo, replay_world_options(reader_.header(), std::move(wo), options_.torch_profile));
    TraceSource source(reader_);
    CAPSIM_TRY(run_program(source, std::move(wo), OnRaise::kKeepGoing, *this));
    report_.lines = reader_.lines_read();
    report_.warnings = reader_.warnings();
    // A cut trace ends wherever the recorder was killed: the last action's
    // missing events are not a divergence.
    if (!reader_.truncated()) unmatched_predictions(reader_.lines_read() + 1);
    return std::move(report_);
  }

  Status before_action(const TraceItem& item, const World& world) override {
    unmatched_predictions(item.line);
    ++report_.actions;
    before_ = world.counters();
    return {};
  }

  // The line of the action refused (the first action when the World refused
  // the functions: the reader has just read it).
  Status on_refused(const TraceItem* action, const std::string&, const Error& why) override {
    return bad_line(action != nullptr ? action->line : reader_.lines_read(), why);
  }

  Status after_action(const TraceItem& item, World& world, std::vector<Event>& events) override {
    for (Event& e : events) {
      if (reader_.header().observed(e.kind)) predicted_.push_back(std::move(e));
    }
    const Counters& after = world.counters();
    if (after.replay_mismatches > before_.replay_mismatches) {
      violate(item.line, "replay_equals_eager",
              fmt::format("action {}: a replay's outputs differ from eager execution on the same "
                          "inputs",
                          item.action_index));
    }
    if (after.ca_mismatches > before_.ca_mismatches) {
      violate(item.line, "compiled_backward_equals_eager",
              fmt::format("action {}: {} compiled-autograd backwards gave grads that differ from "
                          "an eager backward of the same forward",
                          item.action_index, after.ca_mismatches - before_.ca_mismatches));
    }
    if (after.static_violations > before_.static_violations) {
      violate(item.line, "static_inputs_alive",
              fmt::format("action {}: a replay read a static input whose storage was freed or "
                          "moved since the recording",
                          item.action_index));
    }
    return {};
  }

  Status on_event(const TraceItem& item) override {
    ++report_.events_recorded;
    std::vector<Violation> found;
    recorded_checks_.observe(item, found);
    for (Violation& v : found) violate(v.line, v.invariant, v.message);
    if (report_.divergence) return {};
    if (predicted_.empty()) {
      diverge(item.line, "", item.text, "");
      return {};
    }
    const Event p = std::move(predicted_.front());
    predicted_.pop_front();
    if (std::optional<std::string> field = comparison_.first_difference(p, item.event)) {
      diverge(item.line, *field, item.text, predicted_text(p, item.line));
      report_.divergence->detail = comparison_.detail();
      return {};
    }
    ++report_.events_matched;
    context_.add(item.line, item.text);
    return {};
  }

 private:
  // Events the model predicted that the trace does not have before `line`.
  void unmatched_predictions(std::size_t line) {
    if (predicted_.empty()) return;
    if (!report_.divergence) diverge(line, "", "", predicted_text(predicted_.front(), line));
    predicted_.clear();
  }

  std::string predicted_text(const Event& e, std::size_t line) const {
    Result<std::string> text = event_line(line - 1, e);
    return text ? *text : format_event(e);
  }

  void diverge(std::size_t line, std::string field, std::string recorded, std::string predicted) {
    report_.divergence = Divergence{
        line, std::move(field), std::move(recorded), std::move(predicted), context_.lines(), {}};
    predicted_.clear();
  }

  void violate(std::size_t line, std::string invariant, std::string message) {
    ++violations_;
    if (report_.violations.size() < kMaxReportedViolations) {
      report_.violations.push_back({line, std::move(invariant), std::move(message)});
    }
  }

  // The model refused the action on `line`: the trace asks for what cannot
  // happen (a bad trace), or for what capsim does not model (kept unsupported).
  Error bad_line(std::size_t line, const Error& refused) const {
    Error e = make_error(
        fmt::format("{}:{}:1: {}", reader_.name(), line, printable_message(refused.message)));
    const bool kept =
        refused.kind == ErrorKind::unsupported || refused.kind == ErrorKind::values_limit;
    e.kind = kept ? refused.kind : ErrorKind::bad_trace;
    return e;
  }

  TraceReader& reader_;
  ResimulationOptions options_;
  EventComparison comparison_;
  ResimulationReport report_;
  Counters before_;
  std::deque<Event> predicted_;
  MatchedContext context_{options_.context};
  RecordedChecks recorded_checks_;
  std::size_t violations_ = 0;
};

}  // namespace

Result<ResimulationReport> resimulate_trace(TraceReader& reader,
                                            const ResimulationOptions& options) {
  if (options.context > kMaxReplayContext) {
    return make_error(
        fmt::format("--context {}: the limit is {}", options.context, kMaxReplayContext));
  }
  return Resimulator(reader, options).run();
}

Result<ResimulationReport> resimulate_file(const std::string& path,
                                           const ResimulationOptions& options) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceReader> reader, TraceReader::open(path));
  Result<ResimulationReport> report = resimulate_trace(*reader, options);
  // A recorded model over what values on computes (a real batch's
  // activations): read again and re-simulated with values off, which makes
  // every decision the same, rather than refused. Standard input cannot be
  // read twice.
  if (report.ok() || report.error().kind != ErrorKind::values_limit || options.values_off ||
      path == "-") {
    return report;
  }
  ResimulationOptions off = options;
  off.values_off = true;
  CAPSIM_TRY_ASSIGN(reader, TraceReader::open(path));
  CAPSIM_TRY_ASSIGN(ResimulationReport again, resimulate_trace(*reader, off));
  again.values_off = report.error().message;
  return again;
}

namespace {
std::string violations_count(std::size_t n) {
  return fmt::format("{} invariant violation{}", n, n == 1 ? "" : "s");
}

// What the recorder said it left out or modelled, after an "ok": a trace
// without its compiled graphs must never read as a plain "ok".
std::string left_out_summary(const TraceHeader& h) {
  std::string out;
  if (!h.untranslated.empty()) {
    out += fmt::format("; incomplete: graphs left out over {} untranslated op{} ({}{})",
                       h.untranslated.size(), h.untranslated.size() == 1 ? "" : "s",
                       h.untranslated.front(), h.untranslated.size() > 1 ? ", ..." : "");
  }
  if (!h.notes.empty()) {
    out += fmt::format("; {} recorder note{} (x_notes): {}{}", h.notes.size(),
                       h.notes.size() == 1 ? "" : "s", h.notes.front().substr(0, 160),
                       h.notes.size() > 1 ? "; ..." : "");
  }
  return out;
}
}  // namespace

std::string report_summary(const ResimulationReport& r) {
  if (r.divergence) {
    const Divergence& d = *r.divergence;
    std::string what;
    if (d.recorded.empty()) {
      what = "the model predicts an event the trace does not have";
    } else if (d.predicted.empty()) {
      what = "the trace has an event the model does not predict";
    } else {
      what = fmt::format("field '{}' differs from the model", d.field);
    }
    return fmt::format(
        "{}:{}: diverged: {} ({} of {} recorded events matched before it{})", r.file, d.line, what,
        r.events_matched, r.events_recorded,
        r.violations.empty() ? "" : fmt::format("; {}", violations_count(r.violations.size())));
  }
  if (!r.violations.empty()) {
    const Violation& v = r.violations.front();
    return fmt::format("{}:{}: invariant {} violated: {} ({} in all)", r.file, v.line, v.invariant,
                       v.message, violations_count(r.violations.size()));
  }
  return fmt::format(
      "{}: ok, {} actions, {} events match the model{}{}", r.file, r.actions, r.events_matched,
      left_out_summary(r.header),
      r.values_off ? fmt::format("; values off, since values on refused: {}", *r.values_off) : "");
}

Json report_to_json(const ResimulationReport& r) {
  Json j = Json::object();
  j["file"] = r.file;
  j["ok"] = r.ok();
  j["producer"] = r.header.producer;
  j["name"] = r.header.name;
  j["lines"] = r.lines;
  j["actions"] = r.actions;
  j["events_recorded"] = r.events_recorded;
  j["events_matched"] = r.events_matched;
  if (r.divergence) {
    const Divergence& d = *r.divergence;
    Json dj = Json::object();
    dj["line"] = d.line;
    dj["field"] = d.field;
    dj["recorded"] = d.recorded.empty() ? Json(nullptr) : Json(d.recorded);
    dj["predicted"] = d.predicted.empty() ? Json(nullptr) : Json(d.predicted);
    if (!d.detail.empty()) dj["detail"] = d.detail;
    dj["context"] = d.context;
    j["divergence"] = std::move(dj);
  } else {
    j["divergence"] = nullptr;
  }
  Json vs = Json::array();
  for (const Violation& v : r.violations) {
    Json vj = Json::object();
    vj["line"] = v.line;
    vj["invariant"] = v.invariant;
    vj["message"] = v.message;
    vs.push_back(std::move(vj));
  }
  j["violations"] = std::move(vs);
  j["warnings"] = r.warnings;
  j["complete"] = r.header.untranslated.empty();
  j["untranslated"] = r.header.untranslated;
  j["recorder_notes"] = r.header.notes;
  j["values_off"] = r.values_off ? Json(*r.values_off) : Json(nullptr);
  return j;
}

}  // namespace capsim
