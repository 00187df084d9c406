// What-ifs (see what_if.hpp): each edit applied to the program or config, both runs simulated
// and compared, auto's candidates and their ranking, and the text and JSON forms.
#include "traces/analyses/what_if.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "sim/scenarios/autograd_scenarios.hpp"
#include "sim/world/world.hpp"
#include "traces/format/program_json.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

namespace {

// The edit is argv's: escaped, so that the refusal stays one line.
Error bad_edit(const std::string& edit, const std::string& why) {
  return make_error(
      fmt::format("field '--what-if': '{}': {}", printable_message(edit), printable_message(why)));
}

// The program and config one run simulates.
struct Variant {
  CudagraphConfig config;
  std::uint64_t seed = 0;
  Program program;
};

// What-ifs ask what the tree manager would do, so a trace that ran without
// CUDA graphs (a CPU recording) is re-simulated with them on, as on a GPU
// under mode="reduce-overhead"; `config cudagraphs=false` turns them off.
Variant original(const ObservedRun& run) {
  Variant v{run.header.config, run.header.seed, Program{run.functions, run.actions}};
  v.config.cudagraphs = true;
  return v;
}

// A step of the program's own, as opposed to a mark or a clone an edit adds.
bool is_step(const Action& a) {
  return std::holds_alternative<Call>(a) || std::holds_alternative<Backward>(a) ||
         std::holds_alternative<OptimizerStep>(a) || std::holds_alternative<Read>(a);
}

// `how` with auto's values mode decided once, on the original program (and
// its header: a trace written with values off stays so), so that the
// original and every edit of it run with values on or off alike.
ProgramRunOptions resolved(const ProgramRunOptions& how, const TraceHeader& header,
                           const Program& original) {
  ProgramRunOptions out = how;
  if (out.values == ValuesMode::kAuto) {
    const bool off = !header.values || values_needed_off(original).has_value();
    out.values = off ? ValuesMode::kOff : ValuesMode::kOn;
  }
  return out;
}

// One run, through the same path as `capsim simulate` (simulate_program):
// the same values mode, device budget and stop at a raise.
Result<RunSummary> simulate(const Variant& v, const TraceHeader& header,
                            const ProgramRunOptions& how, const std::string& what) {
  ProgramFile file{header, v.program, {}};
  file.header.config = v.config;
  file.header.seed = v.seed;
  CAPSIM_TRY_ASSIGN(const ProgramRun ran, simulate_program(file, what, how));
  RunSummary s;
  if (ran.error_at) {
    s.died_at = *ran.error_at;
    s.unreached = static_cast<std::uint64_t>(
        std::count_if(v.program.actions.begin() + static_cast<std::ptrdiff_t>(*ran.error_at) + 1,
                      v.program.actions.end(), is_step));
  }
  const Counters& c = ran.counters;
  s.recorded = c.graphs_recorded;
  s.rerecorded = c.rerecords;
  s.replays = c.replays;
  s.copies = c.copies;
  s.copy_bytes = c.copy_bytes;
  s.recompiles = c.recompiles;
  s.errors = c.errors;
  for (const Event& e : ran.events) {
    s.warnings += e.kind == EventKind::kWarning;
    s.calls += e.kind == EventKind::kReplay || e.kind == EventKind::kRecord ||
               e.kind == EventKind::kWarmup || e.kind == EventKind::kEager;
  }
  return s;
}

// Whether `a` gives `name` (or, for "p.grad", p's grad) a new tensor.
bool binds(const Action& a, const std::string& name) {
  if (!name.ends_with(".grad")) return action_binds(a, name);
  const auto* g = std::get_if<AccumulateGrad>(&a);
  return g != nullptr && g->param + ".grad" == name;
}

// `mark-static=NAME[,NAME...]`: a mark after every action that binds each.
Result<Variant> mark_static(Variant v, const std::string& edit, const std::string& names) {
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = names.find(',', from);
    const std::string name = names.substr(from, comma - from);
    if (name.empty()) return bad_edit(edit, "expected a tensor's name between commas");
    std::vector<Action> out;
    bool found = false;
    for (Action& a : v.program.actions) {
      const bool b = binds(a, name);
      out.push_back(std::move(a));
      if (b) {
        out.push_back(MarkStatic{name, false});
        found = true;
      }
    }
    if (!found) return bad_edit(edit, fmt::format("no action binds a tensor named '{}'", name));
    v.program.actions = std::move(out);
    if (comma == std::string::npos) return v;
    from = comma + 1;
  }
}

// The action index after '@', which must name an action of the program.
Result<std::size_t> action_index(const Variant& v, const std::string& edit, const std::string& at) {
  std::size_t n = 0;
  const auto [ptr, ec] = std::from_chars(at.data(), at.data() + at.size(), n);
  if (at.empty() || ec != std::errc() || ptr != at.data() + at.size()) {
    return bad_edit(edit, "expected an action index after '@'");
  }
  if (n >= v.program.actions.size()) {
    return bad_edit(edit, fmt::format("action {} is past the last action ({})", n,
                                      v.program.actions.size() - 1));
  }
  return n;
}

Result<Variant> mark_step_begin(Variant v, const std::string& edit, const std::string& at) {
  CAPSIM_TRY_ASSIGN(const std::size_t n, action_index(v, edit, at));
  v.program.actions.insert(v.program.actions.begin() + static_cast<std::ptrdiff_t>(n),
                           MarkStepBegin{});
  return v;
}

// `clone=NAME[@N]` and `detach=NAME[@N]`: `NAME = NAME.clone()` (or
// `.detach()`) right after action N, or after every action that binds NAME;
// `clone=A,B,...` (no `@`) does so for each name.
// A clone is a fresh tensor in the default pool, off the tree's memory; a
// detach is the same storage without the autograd graph, which it no longer
// keeps alive. Each is an eager call of a one-op function the edit adds.
struct Rebind {
  const char* function;  // added to the program; no program can name it ("capsim." prefix)
  BodyOpKind op;
  bool no_grad;
};
constexpr Rebind kClone{"capsim.clone", BodyOpKind::kClone, false};
constexpr Rebind kDetach{"capsim.detach", BodyOpKind::kAlias, true};

Result<Variant> rebind_one(Variant v, const std::string& edit, const std::string& target,
                           const Rebind& how) {
  const std::size_t at = target.find('@');
  const std::string name = target.substr(0, at);
  if (name.empty() || name.ends_with(".grad")) {
    return bad_edit(edit, "expected a tensor's name (not a .grad) before '@'");
  }
  std::optional<std::size_t> only;
  if (at != std::string::npos) {
    CAPSIM_TRY_ASSIGN(only, action_index(v, edit, target.substr(at + 1)));
  }
  const EagerCall call{how.function, {name}, {name}, how.no_grad};
  std::vector<Action> out;
  bool bound = false, inserted = false;
  for (std::size_t i = 0; i < v.program.actions.size(); ++i) {
    const bool b = binds(v.program.actions[i], name);
    bound = bound || b;
    out.push_back(std::move(v.program.actions[i]));
    if (only ? (i == *only && bound) : b) {
      out.push_back(call);
      inserted = true;
    }
  }
  if (!inserted) {
    return bad_edit(
        edit, only ? fmt::format("no action at or before {} binds a tensor named '{}'", *only, name)
                   : fmt::format("no action binds a tensor named '{}'", name));
  }
  v.program.actions = std::move(out);
  const auto has_function = [&](const FunctionDef& f) { return f.name == how.function; };
  if (std::any_of(v.program.functions.begin(), v.program.functions.end(), has_function)) {
    return v;
  }
  FunctionDef def;
  def.name = how.function;
  def.mode = CompilationMode::kInference;
  def.input_names = primal_names(1);
  BodyOp op;
  op.kind = how.op;
  op.args = {0};
  def.ops.push_back(std::move(op));
  def.outputs = {1};
  v.program.functions.push_back(std::move(def));
  return v;
}

Result<Variant> rebind(Variant v, const std::string& edit, const std::string& targets,
                       const Rebind& how) {
  if (targets.find(',') == std::string::npos) return rebind_one(std::move(v), edit, targets, how);
  if (targets.find('@') != std::string::npos) {
    return bad_edit(edit, "'@N' applies to one name; leave it out to rebind several");
  }
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = targets.find(',', from);
    const std::string name = targets.substr(from, comma - from);
    if (name.empty()) return bad_edit(edit, "expected a tensor's name between commas");
    CAPSIM_TRY_ASSIGN(v, rebind_one(std::move(v), edit, name, how));
    if (comma == std::string::npos) return v;
    from = comma + 1;
  }
}

Result<Variant> set_config(Variant v, const std::string& edit, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos) return bad_edit(edit, "expected config KEY=VALUE");
  Json j = config_to_json(v.config);
  Json value = Json::parse(assignment.substr(eq + 1), nullptr, false);
  if (value.is_discarded()) return bad_edit(edit, "VALUE is not JSON (a string needs quotes)");
  const std::string key = assignment.substr(0, eq);
  // The reader keeps an x_ key of a header's config as an extension that
  // nothing reads (docs/trace-format.md, compatibility): editing it would
  // change nothing, so say so instead of re-simulating the same run.
  if (key.starts_with("x_")) {
    return bad_edit(edit, fmt::format("'{}' is an extension key, which capsim ignores: the edit "
                                      "would change nothing",
                                      key));
  }
  j[key] = std::move(value);
  Result<CudagraphConfig> c = config_from_json(j, "config");
  if (!c) return bad_edit(edit, c.error().message);
  v.config = *c;
  return v;
}

Result<Variant> edited(const ObservedRun& run, const std::string& edit) {
  Variant v = original(run);
  if (edit.starts_with("mark-static=")) return mark_static(std::move(v), edit, edit.substr(12));
  if (edit.starts_with("mark-step-begin@")) {
    return mark_step_begin(std::move(v), edit, edit.substr(16));
  }
  if (edit == "set-to-none=false") {
    bool any = false;
    for (Action& a : v.program.actions) {
      if (auto* z = std::get_if<ZeroGrad>(&a); z && z->set_to_none)
        z->set_to_none = false, any = true;
      if (auto* c = std::get_if<ClearGrads>(&a); c && c->set_to_none)
        c->set_to_none = false, any = true;
    }
    if (!any) return bad_edit(edit, "the program has no zero_grad(set_to_none=True)");
    return v;
  }
  if (edit.starts_with("clone=")) return rebind(std::move(v), edit, edit.substr(6), kClone);
  if (edit.starts_with("detach=")) return rebind(std::move(v), edit, edit.substr(7), kDetach);
  if (edit.starts_with("config ")) return set_config(std::move(v), edit, edit.substr(7));
  if (edit.starts_with("torch=")) {
    const std::optional<TorchProfile> p = torch_profile_from_name(edit.substr(6));
    if (!p) return bad_edit(edit, "no torch profile of that name (capsim version --profiles)");
    v.config.torch_profile = *p;
    return v;
  }
  return bad_edit(
      edit,
      "unknown edit (mark-static=NAME[,NAME...], mark-step-begin@N, clone=NAME[@N], clone=A,B,..., "
      "detach=NAME[@N], set-to-none=false, config KEY=VALUE, torch=VERSION, auto)");
}

}  // namespace

namespace {

// Smaller is better: errors, then steps left unreached, then warnings (W1
// keeps a run warming up forever, #138949), then re-recordings and
// recompiles, then bytes.
auto cost(const RunSummary& s) {
  return std::make_tuple(s.errors, s.unreached, s.warnings, s.rerecorded + s.recompiles,
                         s.copy_bytes);
}

// The edit `edit` of `run` beside `before`, the original simulated as `how`.
WhatIf compared(const ObservedRun& run, const std::string& edit, const RunSummary& before,
                const ProgramRunOptions& how) {
  WhatIf w;
  w.edit = edit;
  w.as_on_a_gpu = !run.header.config.cudagraphs;
  w.before = before;
  Result<Variant> v = edited(run, edit);
  Result<RunSummary> after =
      v ? simulate(*v, run.header, how, "the edited program") : Result<RunSummary>(v.error());
  if (!after) {
    w.refused = after.error().message;
    w.outcome = WhatIfOutcome::kNotSimulated;
    return w;
  }
  w.after = *after;
  const auto a = cost(w.before), b = cost(w.after);
  w.outcome = b < a   ? WhatIfOutcome::kImproved
              : a < b ? WhatIfOutcome::kWorse
                      : WhatIfOutcome::kNoChange;
  return w;
}

Result<RunSummary> simulate_original(const ObservedRun& run, const ProgramRunOptions& how) {
  return simulate(original(run), run.header, how, "the original program");
}

}  // namespace

std::string_view what_if_outcome_name(WhatIfOutcome outcome) {
  switch (outcome) {
#define CAPSIM_NAME_(e, name) \
  case WhatIfOutcome::e: return name;
    CAPSIM_WHAT_IF_OUTCOMES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  CAPSIM_CHECK(false, "a what-if outcome has a name");
  return "";
}

Result<WhatIf> what_if(const ObservedRun& run, const std::string& edit,
                       const ProgramRunOptions& how) {
  // A bad edit is the user's mistake: an error, before anything runs.
  CAPSIM_TRY(edited(run, edit));
  const ProgramRunOptions same = resolved(how, run.header, original(run).program);
  CAPSIM_TRY_ASSIGN(const RunSummary before, simulate_original(run, same));
  return compared(run, edit, before, same);
}

namespace {

// The tensor names an action reads: a call's arguments, a read.
std::vector<std::string> names_read(const Action& a) {
  if (const auto* c = std::get_if<Call>(&a)) return c->args;
  if (const auto* c = std::get_if<EagerCall>(&a)) return c->args;
  if (const auto* r = std::get_if<Read>(&a)) return {r->name};
  return {};
}

// The edits worth trying: a mark for every tensor a replay copies, a step
// mark before every action that raised or warned and a clone of what that
// action reads (the usual fix of E1, and of W1 in a recurrent loop), keeping
// the grads.
std::vector<std::string> candidates(const ObservedRun& run) {
  std::set<std::string> out;
  std::set<std::string> clones;  // every name an error or warning read
  for (const Explanation& e : explain(run, std::nullopt)) {
    if (e.decision == Decision::kCopyIn) {
      for (const std::string& name : e.inputs) out.insert("mark-static=" + name);
    }
    if (e.decision == Decision::kCompileGradsNotStatic) {
      out.insert(fmt::format("mark-static={}", fmt::join(e.inputs, ",")));
    }
    if (e.kind == EventKind::kError || e.kind == EventKind::kWarning) {
      out.insert(fmt::format("mark-step-begin@{}", e.action));
      if (e.action < run.actions.size()) {
        for (const std::string& name : names_read(run.actions[e.action])) {
          if (!name.ends_with(".grad")) out.insert("clone=" + name), clones.insert(name);
        }
      }
    }
  }
  // Several outputs kept across steps (losses.append(loss)) take a clone each.
  if (clones.size() > 1) out.insert(fmt::format("clone={}", fmt::join(clones, ",")));
  for (const Action& a : run.actions) {
    if (const auto* z = std::get_if<ZeroGrad>(&a); z && z->set_to_none) {
      out.insert("set-to-none=false");
    }
    if (const auto* c = std::get_if<ClearGrads>(&a); c && c->set_to_none) {
      out.insert("set-to-none=false");
    }
  }
  return {out.begin(), out.end()};
}

}  // namespace

Result<std::vector<WhatIf>> what_if_auto(
    const ObservedRun& run, const std::function<void(std::size_t k, std::size_t n)>& on_edit,
    const ProgramRunOptions& how) {
  // A run without CUDA graphs is compared as on a GPU, so the edits to try
  // are those that simulation calls for (its copies, errors and warnings).
  // The edits come from a simulation kept going past the first raise, so
  // that every error proposes its fix (two kept outputs, two clones), while
  // the runs compared end where `how` says.
  std::optional<ObservedRun> gpu;
  const bool simulated_stop = (run.simulated || run.as_on_a_gpu) && run.stop == RunStop::kRaise;
  if ((!run.header.config.cudagraphs && !run.as_on_a_gpu) || simulated_stop) {
    ProgramRunOptions kept_going = how;
    kept_going.on_raise = OnRaise::kKeepGoing;
    CAPSIM_TRY_ASSIGN(gpu, as_on_a_gpu(run, kept_going));
  }
  const ProgramRunOptions same = resolved(how, run.header, original(run).program);
  CAPSIM_TRY_ASSIGN(const RunSummary before, simulate_original(run, same));
  std::vector<WhatIf> out;
  const std::vector<std::string> edits = candidates(gpu ? *gpu : run);
  for (std::size_t k = 0; k < edits.size(); ++k) {
    if (on_edit) on_edit(k, edits.size());
    out.push_back(compared(run, edits[k], before, same));
  }
  // Better first, best first; then the same, the worse, and those that could
  // not be simulated, each in the order tried.
  std::stable_sort(out.begin(), out.end(), [](const WhatIf& a, const WhatIf& b) {
    if (a.outcome != b.outcome) return a.outcome < b.outcome;
    return a.outcome == WhatIfOutcome::kImproved && cost(a.after) < cost(b.after);
  });
  return out;
}

std::vector<WhatIf> improving(const std::vector<WhatIf>& all) {
  std::vector<WhatIf> out;
  for (const WhatIf& w : all) {
    if (w.outcome == WhatIfOutcome::kImproved) out.push_back(w);
  }
  return out;
}

namespace {

// Where each run dies (its first error), when either does.
std::string died_text(const RunSummary& a, const RunSummary& b) {
  if (!a.died_at && !b.died_at) return "";
  const auto at = [](const RunSummary& s) {
    return s.died_at ? fmt::format("action {}", *s.died_at) : std::string("never");
  };
  return fmt::format(", first error {} -> {}", at(a), at(b));
}

}  // namespace

std::string what_if_text(const WhatIf& w) {
  if (w.refused) {
    return fmt::format("what-if {}: {}: {}", printable_message(w.edit),
                       what_if_outcome_name(w.outcome), printable_message(*w.refused));
  }
  const RunSummary &a = w.before, &b = w.after;
  const std::string_view note =
      w.as_on_a_gpu ? " (both with CUDA graphs, as on a GPU under mode=\"reduce-overhead\"; the "
                      "trace ran without them)"
                    : "";
  return fmt::format(
      "what-if {}: {}: recorded {} -> {}, re-recorded {} -> {}, replays {} -> {}, copies {} ({} B) "
      "-> {} ({} B), recompiles {} -> {}, errors {} -> {}, warnings {} -> {}{}{}",
      printable_message(w.edit), what_if_outcome_name(w.outcome), a.recorded, b.recorded,
      a.rerecorded, b.rerecorded, a.replays, b.replays, a.copies, a.copy_bytes.text(), b.copies,
      b.copy_bytes.text(), a.recompiles, b.recompiles, a.errors, b.errors, a.warnings, b.warnings,
      died_text(a, b), note);
}

Json what_if_json(const WhatIf& w) {
  const auto summary = [](const RunSummary& s) {
    Json j = Json::object();
    j["recorded"] = s.recorded;
    j["rerecorded"] = s.rerecorded;
    j["replays"] = s.replays;
    j["copies"] = s.copies;
    put_figure(j, "copy_bytes", s.copy_bytes);
    j["recompiles"] = s.recompiles;
    j["errors"] = s.errors;
    j["warnings"] = s.warnings;
    j["calls"] = s.calls;
    if (s.died_at) j["died_at"] = *s.died_at;
    return j;
  };
  Json j = Json::object();
  j["edit"] = w.edit;
  j["outcome"] = std::string(what_if_outcome_name(w.outcome));
  if (w.as_on_a_gpu) j["as_on_a_gpu"] = true;
  j["before"] = summary(w.before);
  if (w.refused) {
    j["refused"] = *w.refused;
  } else {
    j["after"] = summary(w.after);
  }
  return j;
}

}  // namespace capsim
