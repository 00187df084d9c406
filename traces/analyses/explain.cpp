// `capsim explain`'s explanations (see explain.hpp): each event's decision (read once,
// decision_of), the account of what happened in the program's names, and the text and JSON
// forms. The rules' words are the decisions table's, sim/core/decisions.def.
#include "traces/analyses/explain.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "model/saturating_sum.hpp"
#include "sim/core/decisions.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

namespace {

// The program's names for a call's inputs: a call's arguments, an optimizer
// step's params, their grads and their state (capsim's input order).
class InputNames {
 public:
  void see(const Action& a) {
    if (const auto* c = std::get_if<CreateOptimizer>(&a)) optimizers_[c->name] = c->params;
    if (const auto* t = std::get_if<NewTensor>(&a)) {
      std::int64_t n = 1;
      for (std::int64_t d : t->sizes) n *= d;
      numel_[t->name] = n;
    }
  }
  // An optimizer step's grads that `static_idxs` leaves out (the compiled
  // step's inputs n..2n-1 for n params with a grad), and their float32 bytes.
  // Their bytes are a sum of input sizes (each up to 2^40 elements): a
  // figure that saturates rather than wraps.
  std::pair<std::vector<std::string>, SaturatingSum> grads_not_static(
      const Action& a, const IntList& static_idxs, std::string_view function) const {
    const auto* s = std::get_if<OptimizerStep>(&a);
    auto it = s ? optimizers_.find(s->name) : optimizers_.end();
    if (it == optimizers_.end()) return {};
    const std::vector<std::string> params = kept_params(it->second, function);
    std::vector<std::string> out;
    SaturatingSum bytes;
    for (std::size_t k = 0; k < params.size(); ++k) {
      const auto i = static_cast<std::int64_t>(params.size() + k);
      if (std::find(static_idxs.begin(), static_idxs.end(), i) != static_idxs.end()) continue;
      out.push_back(params[k] + ".grad");
      auto n = numel_.find(params[k]);
      if (n != numel_.end()) bytes.add(4 * static_cast<std::uint64_t>(n->second));
    }
    return {out, bytes};
  }
  // A compiled step over only some of an optimizer's params (the others had
  // no grad) says which in its compile event's `step_params`: its input k is
  // then param step_params[k].
  void see(const Event& e) {
    if (e.kind != EventKind::kCompile) return;
    const IntList* kept = e.get_if<IntList>(F::step_params);
    const std::optional<std::string_view> function = e.text(F::function);
    if (kept != nullptr && function) step_params_[std::string(*function)] = *kept;
  }
  std::string name(const Action& a, std::int64_t i, std::string_view function = {}) const {
    if (const auto* c = std::get_if<Call>(&a)) {
      if (i >= 0 && static_cast<std::size_t>(i) < c->args.size()) return c->args[i];
    }
    if (const auto* s = std::get_if<OptimizerStep>(&a)) {
      auto it = optimizers_.find(s->name);
      if (it != optimizers_.end() && i >= 0) {
        const std::vector<std::string> params = kept_params(it->second, function);
        const auto n = static_cast<std::int64_t>(params.size());
        if (i < n) return params[i];
        if (i < 2 * n) return params[i - n] + ".grad";
        return fmt::format("{} state (input {})", s->name, i);
      }
    }
    return fmt::format("input {}", i);
  }
  std::vector<std::string> kept_params(const std::vector<std::string>& all,
                                       std::string_view function) const {
    auto it = step_params_.find(function);
    if (it == step_params_.end()) return all;
    std::vector<std::string> kept;
    for (std::int64_t k : it->second) {
      if (k >= 0 && static_cast<std::size_t>(k) < all.size()) kept.push_back(all[k]);
    }
    return kept;
  }
  std::vector<std::string> names(const Action& a, const IntList& idxs,
                                 std::string_view function = {}) const {
    std::vector<std::string> out;
    for (std::int64_t i : idxs) out.push_back(name(a, i, function));
    return out;
  }

 private:
  std::map<std::string, std::vector<std::string>> optimizers_;
  std::map<std::string, std::int64_t> numel_;                // by tensor name, from new_tensor
  std::map<std::string, IntList, std::less<>> step_params_;  // by step function
};

std::string text_or(const Event& e, FieldKey k, std::string_view fallback) {
  const std::optional<std::string_view> t = e.text(k);
  return std::string(t ? *t : fallback);
}

std::int64_t int_or(const Event& e, FieldKey k, std::int64_t fallback) {
  const std::int64_t* v = e.get_if<std::int64_t>(k);
  return v ? *v : fallback;
}

// The decision explain gives a paragraph, and its name in the report
// ("record:no_child", "error:E1", "copy_in"); an empty name when the event is
// nothing to explain.
struct ExplainedDecision {
  std::optional<Decision> decision;  // nullopt: an id or reason the table lacks
  std::string name;
};

ExplainedDecision named(Decision d) {
  return {d, decision_rule_key(decision_info(d))};
}

ExplainedDecision explained_decision(const Event& e) {
  std::optional<Decision> d;
  switch (e.kind) {
    case EventKind::kCopyIn:
      if (int_or(e, F::copies, 0) <= 0) return {};
      d = Decision::kCopyIn;
      break;
    case EventKind::kCompile:
      // A first compile is explained only where its grads are not static
      // (explain() decides, as it needs the program's names).
      d = e.has(F::recompile) ? decision_of(e) : Decision::kCompileGradsNotStatic;
      break;
    case EventKind::kRecord:
    case EventKind::kDemote:
    case EventKind::kSkip:
    case EventKind::kError:
    case EventKind::kWarning:
    case EventKind::kEager:
    case EventKind::kCaCacheMiss:
    case EventKind::kCaGraph: d = decision_of(e); break;
    default: return {};
  }
  if (d) return named(*d);
  if (e.kind == EventKind::kCaGraph) return {};  // a cache hit
  // An id or reason of a newer release: explained as written, without a rule.
  const bool by_id =
      e.kind == EventKind::kSkip || e.kind == EventKind::kError || e.kind == EventKind::kWarning;
  return {std::nullopt,
          fmt::format("{}:{}", event_kind_name(e.kind), text_or(e, by_id ? F::id : F::reason, ""))};
}

}  // namespace

std::optional<MovedInput> explain_rerecord(const std::vector<Action>& actions, const Event& event) {
  const std::int64_t* input = event.get_if<std::int64_t>(F::input);
  if (event.kind != EventKind::kRecord || input == nullptr || *input < 0 ||
      event.action >= actions.size()) {
    return std::nullopt;
  }
  const auto index = static_cast<std::size_t>(*input);
  const auto* call = std::get_if<Call>(&actions[event.action]);
  if (call == nullptr || index >= call->args.size()) return std::nullopt;
  MovedInput moved;
  moved.input = index;
  moved.name = call->args[index];
  for (std::size_t a = event.action; a-- > 0;) {
    if (action_binds(actions[a], moved.name)) {
      moved.bound_at = a;
      moved.bound_by = action_name(actions[a]);
      break;
    }
  }
  return moved;
}

std::string moved_input_text(const MovedInput& moved) {
  std::string text = fmt::format("input {} is '{}'", moved.input, moved.name);
  if (moved.bound_at) {
    text += fmt::format("; it last got storage at action {} ({})", *moved.bound_at, moved.bound_by);
  }
  return text;
}

namespace {

// What happened, in the program's words, and the tensors involved.
struct Account {
  std::string what;
  std::vector<std::string> inputs;
};

struct ExplainState {
  InputNames names;
  // (function, graph) -> the inputs its recording copies at each replay.
  std::map<std::pair<std::string, std::int64_t>, std::vector<std::string>> copied;
};

Account account_record(const Event& e, const Action& a, ExplainState& st) {
  const std::string f = text_or(e, F::function, "?");
  const std::int64_t graph = int_or(e, F::graph, -1);
  std::vector<std::string> copied;
  if (const IntList* ns = e.get_if<IntList>(F::non_static)) copied = st.names.names(a, *ns, f);
  if (const IntList* cm = e.get_if<IntList>(F::copied_managed)) {
    for (const std::string& n : st.names.names(a, *cm, f)) copied.push_back(n);
  }
  st.copied[{f, graph}] = copied;
  Account out;
  const std::string reason = text_or(e, F::reason, "no_child");
  if (e.has(F::input)) {
    const std::string moved = st.names.name(a, int_or(e, F::input, 0), f);
    out.inputs.push_back(moved);
    out.what = fmt::format(
        "'{}' recorded again as graph {}: its input {} ('{}') was at {} when "
        "the earlier graph was recorded and is at {} now.",
        f, graph, int_or(e, F::input, 0), moved, format_value(*e.find(F::old_ptr)),
        format_value(*e.find(F::new_ptr)));
    return out;
  }
  if (decision_of(e) != Decision::kRecordFirst) {
    out.what = fmt::format("'{}' recorded again as graph {} ({}).", f, graph, reason);
    return out;
  }
  std::vector<std::string> statics;
  if (const IntList* s = e.get_if<IntList>(F::static_)) statics = st.names.names(a, *s, f);
  out.what = fmt::format(
      "'{}' recorded as graph {}; static (baked in): {}; copied at each "
      "replay: {}.",
      f, graph, statics.empty() ? "none" : fmt::format("{}", fmt::join(statics, ", ")),
      copied.empty() ? "none" : fmt::format("{}", fmt::join(copied, ", ")));
  out.inputs = copied;
  return out;
}

Account account_of(const Event& e, const Action& a, ExplainState& st) {
  const std::string f = text_or(e, F::function, "");
  switch (e.kind) {
    case EventKind::kRecord: return account_record(e, a, st);
    case EventKind::kCopyIn: {
      Account out;
      auto it = st.copied.find({f, int_or(e, F::graph, -1)});
      if (it != st.copied.end()) out.inputs = it->second;
      out.what = fmt::format(
          "Before replaying graph {} of '{}', {} input(s) were copied in ({} "
          "bytes){}.",
          int_or(e, F::graph, -1), f, int_or(e, F::copies, 0), int_or(e, F::bytes, 0),
          out.inputs.empty() ? "" : fmt::format(": {}", fmt::join(out.inputs, ", ")));
      return out;
    }
    case EventKind::kSkip:
    case EventKind::kError:
    case EventKind::kWarning: {
      Account out;
      if (const IntList* in = e.get_if<IntList>(F::inputs)) out.inputs = st.names.names(a, *in);
      if (e.has(F::input)) out.inputs.push_back(st.names.name(a, int_or(e, F::input, 0)));
      out.what = text_or(e, F::message, "");
      return out;
    }
    case EventKind::kDemote: {
      const std::string name = st.names.name(a, int_or(e, F::input, 0));
      return {fmt::format("Input {} ('{}') of '{}' is copied from now on.", int_or(e, F::input, 0),
                          name, f),
              {name}};
    }
    case EventKind::kEager: return {fmt::format("'{}' ran without a CUDA graph.", f), {}};
    case EventKind::kCompile: {
      if (e.has(F::recompile))
        return {fmt::format("Dynamo traced '{}' again: a new FunctionId.", f), {}};
      const IntList* idxs = e.get_if<IntList>(F::static_input_idxs);
      auto [grads, bytes] = idxs ? st.names.grads_not_static(a, *idxs, f)
                                 : std::pair<std::vector<std::string>, SaturatingSum>{};
      return {fmt::format("Dynamo compiled '{}'; {} of its grads are not among its static "
                          "inputs: under mode=\"reduce-overhead\" every replay would copy them "
                          "in ({} bytes per step).",
                          f, grads.size(), bytes.text()),
              grads};
    }
    case EventKind::kCaCacheMiss: return {text_or(e, F::message, "a cache miss"), {}};
    case EventKind::kCaGraph:
      if (int_or(e, F::backward, 0) == 0)
        return {"Backward 0 was captured: the cache was empty.", {}};
      return {fmt::format("Backward {} was captured again instead of reusing a cached graph.",
                          int_or(e, F::backward, 0)),
              {}};
    default: return {};
  }
}

// A recapture (backward > 0) names its cause in PyTorch's words: a grad's
// state (AccumulateGrad's key), changed sizes, or a new node. For a new
// node, a recorded capture that later backwards reuse (cache hits
// follow, and no other capture says the same) is another backward of the
// step, captured once: nothing to fix.
//
// What it needs of the whole run, gathered in one pass (a recapture storm
// has as many captures as backwards): each message's capture count, and the
// last cache hit.
struct CaptureFacts {
  std::map<std::string, std::size_t> captures;  // per recorded message
  std::optional<std::size_t> last_hit;          // event index
};

CaptureFacts capture_facts(const ObservedRun& run) {
  CaptureFacts out;
  for (std::size_t k = 0; k < run.events.size(); ++k) {
    const bool* captured = run.events[k].get_if<bool>(F::captured);
    if (run.events[k].kind != EventKind::kCaGraph || captured == nullptr) continue;
    if (*captured) {
      ++out.captures[run.event_messages[k]];
    } else {
      out.last_hit = k;
    }
  }
  return out;
}

// The rule of a recorded recapture, from the reason the recorder classified
// PyTorch's cache-miss line into (recorder/capsim_recorder/miss_reasons.py):
// a ca_graph decision (accumulate_grad) or the cache miss's own
// (changed_shapes, new_autograd_node). A capture without one is capsim's own,
// whose ca_cache_miss explains it, or a recording whose line the recorder
// did not know.
Decision capture_rule(const ObservedRun& run, const CaptureFacts& facts, std::size_t i) {
  const std::optional<std::string_view> reason = run.events[i].text(F::reason);
  if (!reason) return Decision::kCaCaptured;
  std::optional<Decision> said = find_decision(EventKind::kCaGraph, *reason);
  if (!said) said = find_decision(EventKind::kCaCacheMiss, *reason);
  if (said == Decision::kCaCapturedAccumulateGrad || said == Decision::kCaMissChangedShapes) {
    return *said;
  }
  const bool reused = facts.last_hit && *facts.last_hit > i;
  const bool recurs = facts.captures.at(run.event_messages[i]) > 1;
  if (reused && !recurs) return Decision::kCaCapturedDistinct;
  return said == Decision::kCaMissNewNode ? *said : Decision::kCaCaptured;
}

// Functions whose every call was a warmup (no recording, no eager fallback,
// no skip names them): each is explained once, at its last warmup, with how
// many calls warmed up.
struct WarmupFacts {
  std::map<std::string, std::size_t> last;   // function -> its last warmup event
  std::map<std::string, std::size_t> count;  // function -> its warmups
};

WarmupFacts warmup_facts(const ObservedRun& run) {
  WarmupFacts out;
  std::set<std::string> decided;
  for (std::size_t k = 0; k < run.events.size(); ++k) {
    const Event& e = run.events[k];
    const std::string f = text_or(e, F::function, "");
    if (e.kind == EventKind::kWarmup) {
      out.last[f] = k;
      ++out.count[f];
    } else if (e.kind == EventKind::kRecord || e.kind == EventKind::kEager ||
               e.kind == EventKind::kSkip) {
      decided.insert(f);
    }
  }
  for (const std::string& f : decided) {
    out.last.erase(f);
    out.count.erase(f);
  }
  return out;
}

// The decision of event i: explained_decision's, or a never-recorded
// function's last warmup.
ExplainedDecision event_decision(const ObservedRun& run, const WarmupFacts& warmups,
                                 std::size_t i) {
  const Event& e = run.events[i];
  if (e.kind != EventKind::kWarmup) return explained_decision(e);
  const auto it = warmups.last.find(text_or(e, F::function, ""));
  if (it == warmups.last.end() || it->second != i) return {};
  return named(Decision::kWarmupNeverRecorded);
}

}  // namespace

std::vector<Explanation> explain(const ObservedRun& run, std::optional<std::size_t> only) {
  ExplainState st;
  const CaptureFacts facts = capture_facts(run);
  const WarmupFacts warmups = warmup_facts(run);
  std::vector<Explanation> out;
  std::size_t seen_actions = 0;
  for (std::size_t i = 0; i < run.events.size(); ++i) {
    const Event& e = run.events[i];
    for (; seen_actions <= e.action && seen_actions < run.actions.size(); ++seen_actions) {
      st.names.see(run.actions[seen_actions]);
    }
    st.names.see(e);
    const ExplainedDecision key = event_decision(run, warmups, i);
    if (key.name.empty() || e.action >= run.actions.size()) continue;
    const Action& a = run.actions[e.action];
    Account account = account_of(e, a, st);  // always: it tracks the recordings
    if (key.decision == Decision::kWarmupNeverRecorded) {
      const std::string f = text_or(e, F::function, "");
      const std::size_t n = warmups.count.at(f);
      account.what = fmt::format(
          "'{}' was called {} and {} as a warmup: no CUDA graph was recorded for it, so "
          "it never replayed one.",
          f, n == 1 ? std::string("once") : fmt::format("{} times", n),
          n == 1 ? "ran" : "each call ran");
    }
    if (key.decision == Decision::kCompileGradsNotStatic && account.inputs.empty()) continue;
    // With PyTorch's words for the miss, the capture's paragraph (ca_graph)
    // says it, by its cause: the simulation's own miss text is not repeated.
    if (e.kind == EventKind::kCaCacheMiss && !run.event_messages[i].empty()) continue;
    if (!run.event_messages[i].empty()) account.what += " PyTorch: " + run.event_messages[i];
    if (const std::optional<MovedInput> moved = explain_rerecord(run.actions, e);
        moved && moved->bound_at) {
      account.what +=
          fmt::format(" It last got storage at action {} ({}).", *moved->bound_at, moved->bound_by);
    }
    if (only && e.action != *only) continue;
    const std::optional<Decision> ruled =
        key.decision == Decision::kCaCaptured ? capture_rule(run, facts, i) : key.decision;
    const DecisionInfo* rule = ruled ? &decision_info(*ruled) : nullptr;
    Explanation x;
    x.action = e.action;
    x.line = run.event_lines[i];
    x.event = key.name;
    x.decision = key.decision;
    x.kind = e.kind;
    x.function = text_or(e, F::function, "");
    x.title = rule ? std::string(rule->title) : key.name;
    x.what = std::move(account.what);
    x.rule = rule ? std::string(rule->rule) : "";
    x.inputs = std::move(account.inputs);
    x.fix = rule ? std::string(rule->fix) : "";
    if (run.kept_going && run.error_at && e.action > *run.error_at) {
      x.beyond_real_run = true;
      x.title += fmt::format(" (beyond a real run, which dies at action {})", *run.error_at);
    }
    out.push_back(std::move(x));
  }
  return out;
}

std::string action_summary(std::size_t index, const Action& action) {
  Json j = Json::parse(action_line(0, index, action));
  const std::string kind = j.value("action", "");
  for (const char* key : {"seq", "type", "index", "action"}) j.erase(key);
  return j.empty() ? kind : kind + " " + j.dump();
}

std::string explanation_text(const Explanation& e) {
  const auto shown = [](std::string_view text) { return printable_message(text); };
  std::string out = fmt::format("action {}{}: {}{}\n", e.action,
                                e.line ? fmt::format(" (line {})", e.line) : "", shown(e.title),
                                e.function.empty() ? "" : fmt::format(" [{}]", shown(e.function)));
  // PyTorch's own messages (an S1's stack traces) keep their lines, indented.
  if (!e.what.empty()) out += fmt::format("  what:   {}\n", printable_block(e.what, "          "));
  if (!e.rule.empty()) out += fmt::format("  rule:   {}\n", shown(e.rule));
  if (!e.inputs.empty()) {
    out += fmt::format("  inputs: {}\n", shown(fmt::format("{}", fmt::join(e.inputs, ", "))));
  }
  if (!e.fix.empty()) out += fmt::format("  fix:    {}\n", shown(e.fix));
  return out;
}

std::vector<FoldedExplanation> fold_explanations(const std::vector<Explanation>& all) {
  std::vector<FoldedExplanation> out;
  std::map<std::string, std::size_t> seen;  // what the paragraph says -> its index in out
  for (const Explanation& e : all) {
    const std::string says = fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}", e.event, e.function, e.title,
                                         e.what, e.rule, fmt::join(e.inputs, ","), e.fix);
    const auto [it, fresh] = seen.try_emplace(says, out.size());
    if (fresh) {
      out.push_back({e, {}});
    } else {
      out[it->second].again.push_back(e.action);
    }
  }
  return out;
}

std::string again_text(const FoldedExplanation& f) {
  if (f.again.empty()) return "";
  const std::size_t listed = std::min(f.again.size(), kFoldedActionsNamed);
  const std::vector<std::size_t> head(f.again.begin(), f.again.begin() + listed);
  return fmt::format(
      "again:  {} more time{}, the same, at action{} {}{}", f.again.size(),
      f.again.size() == 1 ? "" : "s", f.again.size() == 1 ? "" : "s", fmt::join(head, ", "),
      f.again.size() > listed ? fmt::format(" and {} more", f.again.size() - listed) : "");
}

std::string folded_explanation_text(const FoldedExplanation& f) {
  std::string out = explanation_text(f.first);
  if (!f.again.empty()) out += "  " + again_text(f) + "\n";
  return out;
}

Json explanation_json(const Explanation& e) {
  Json j = Json::object();
  j["action"] = e.action;
  j["line"] = e.line;
  j["event"] = e.event;
  j["function"] = e.function;
  j["title"] = e.title;
  j["what"] = e.what;
  j["rule"] = e.rule;
  j["inputs"] = e.inputs;
  j["fix"] = e.fix;
  if (e.beyond_real_run) j["beyond_real_run"] = true;
  return j;
}

Json folded_explanation_json(const FoldedExplanation& f) {
  Json j = explanation_json(f.first);
  if (!f.again.empty()) j["again"] = f.again;
  return j;
}

}  // namespace capsim
