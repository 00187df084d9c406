// Skips checked against the doc's conditions (skip_checks.hpp).
#include "properties/skip_checks.hpp"

#include <fmt/format.h>

#include <map>

#include "properties/skip_oracle.hpp"
#include "sim/core/decisions.hpp"

namespace capsim {

namespace {

// What the events of one call's action show about its graph `name`.
struct Observed {
  std::vector<std::optional<Decision>> compile_skips;  // skip events without a fid
  bool tree_function = false;  // a compile event with a fid (or a partition's)
  bool eager_skip = false;     // eager reason=compile_time_skip
  bool eager_silent = false;   // eager reason=silent_skip
  bool raised = false;         // error id=E8 where=compile
};

bool of_graph(const Event& e, std::string_view name) {
  const std::optional<std::string_view> f = e.text(F::function);
  return f && (*f == name || f->starts_with(std::string(name) + ".partition_"));
}

bool compile_time_skip(const Event& e) {
  return e.kind == EventKind::kSkip && e.has(F::function) && !e.has(F::fid);
}

void observe(const Event& e, std::string_view name, Observed& o) {
  if (decision_of(e) == Decision::kErrorSkipRaised && e.text(F::where) == "compile") {
    o.raised = true;
  }
  if (!of_graph(e, name)) return;
  if (compile_time_skip(e) && e.text(F::function) == name) {
    o.compile_skips.push_back(decision_of(e));
  }
  if (e.kind == EventKind::kCompile && e.has(F::fid)) o.tree_function = true;
  if (e.kind == EventKind::kEager && e.text(F::function) == name) {
    o.eager_skip = o.eager_skip || decision_of(e) == Decision::kEagerCompileTimeSkip;
    o.eager_silent = o.eager_silent || decision_of(e) == Decision::kEagerSilentSkip;
  }
}

std::optional<std::string> compare(const SkipVerdict& v, const Observed& o) {
  using K = SkipVerdict::Kind;
  for (const std::optional<Decision>& id : o.compile_skips) {
    if (v.kind != K::kLogged || id != v.id) {
      return fmt::format("a skip id={} was logged", id ? decision_key(*id) : "(not in the table)");
    }
  }
  if (v.kind == K::kNone) {
    if (o.eager_skip || o.eager_silent || o.raised) return "the call ran eagerly for a skip";
    return std::nullopt;
  }
  if (o.tree_function) return "the graph got a tree function";
  if (v.kind == K::kSilent) {
    if (!o.eager_silent || o.raised) return "the call did not run eagerly with silent_skip";
    return std::nullopt;
  }
  if (v.raises ? !o.raised : !o.eager_skip) {
    return v.raises ? "no E8 was raised" : "the call did not run eagerly with compile_time_skip";
  }
  return std::nullopt;
}

// The layout of the tensor `name` names before action `before`: the
// NewTensor that made it, contiguous when another action bound it.
std::optional<ArgLayout> layout_of(const Program& program, std::size_t before,
                                   const std::string& name) {
  for (std::size_t a = before; a-- > 0;) {
    if (!action_binds(program.actions[a], name)) continue;
    const NewTensor* t = std::get_if<NewTensor>(&program.actions[a]);
    if (t == nullptr) return std::nullopt;
    return ArgLayout{t->sizes, t->strides.value_or(contiguous_strides(t->sizes))};
  }
  return std::nullopt;
}

// The example inputs of the compile a call runs: those of the first call of
// its function with its int key (one compile per key, §1).
std::vector<ArgLayout> compile_layouts(const Program& program, std::size_t action) {
  const Call& call = std::get<Call>(program.actions[action]);
  std::size_t first = action;
  for (std::size_t a = 0; a < action; ++a) {
    const Call* c = std::get_if<Call>(&program.actions[a]);
    if (c != nullptr && c->function == call.function && c->int_key == call.int_key) {
      first = a;
      break;
    }
  }
  std::vector<ArgLayout> out;
  for (const std::string& arg : std::get<Call>(program.actions[first]).args) {
    if (std::optional<ArgLayout> l = layout_of(program, first, arg)) out.push_back(std::move(*l));
  }
  return out;
}

std::string expected(const SkipVerdict& v) {
  switch (v.kind) {
    case SkipVerdict::Kind::kNone: return "no compile-time skip";
    case SkipVerdict::Kind::kSilent:
      return fmt::format("{} silently ({})", decision_key(v.id.value()), v.why);
    case SkipVerdict::Kind::kLogged: break;
  }
  return fmt::format("{}{} ({})", decision_key(v.id.value()), v.raises ? " and E8" : "", v.why);
}

}  // namespace

CheckResult check_skips_as_documented(const World& world, const Program& program,
                                      const CudagraphConfig& config) {
  std::map<std::uint32_t, std::vector<const Event*>> by_action;
  for (const Event& e : world.events()) by_action[e.action].push_back(&e);
  for (const auto& [action, events] : by_action) {
    const bool in_call =
        action < program.actions.size() && std::holds_alternative<Call>(program.actions[action]);
    for (const Event* e : events) {
      if (!in_call && compile_time_skip(*e)) {
        return fmt::format("action {}: a compile-time skip outside a call", action);
      }
    }
  }
  for (std::uint32_t action = 0; action < program.actions.size(); ++action) {
    const Call* call = std::get_if<Call>(&program.actions[action]);
    if (call == nullptr) continue;
    const FunctionDef* def = nullptr;
    for (const FunctionDef& f : program.functions) {
      if (f.name == call->function) def = &f;
    }
    if (def == nullptr) continue;
    Observed o;
    for (const Event* e : by_action[action]) observe(*e, def->name, o);
    const std::vector<ArgLayout> layouts = compile_layouts(program, action);
    const SkipVerdict v = documented_skip(*def, !call->int_key.empty(), config, layouts);
    if (std::optional<std::string> wrong = compare(v, o)) {
      return fmt::format("action {} ({}{}): the doc says {}, but {}", action, def->name,
                         call->int_key.empty() ? "" : ", symint key", expected(v), *wrong);
    }
  }
  return std::nullopt;
}

}  // namespace capsim
