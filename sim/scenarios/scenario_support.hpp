// Shorthands for writing the built-in scenarios (sim/scenarios_*.cpp only).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "sim/core/decisions.hpp"
#include "sim/core/function_builder.hpp"
#include "sim/scenarios/scenarios.hpp"

namespace capsim::scenario_support {

inline constexpr auto kInference = CompilationMode::kInference;
inline constexpr auto kForward = CompilationMode::kForward;
inline constexpr auto kBackward = CompilationMode::kBackward;

// Appends actions and remembers the index of the last one (for probes).
class ProgramWriter {
 public:
  explicit ProgramWriter(ProgramScenario& s) : s_(s) {}
  template <typename A>
  std::size_t add(A action) {
    s_.program.actions.push_back(std::move(action));
    return s_.program.actions.size() - 1;
  }
  // A probe right after the last action added.
  void probe(std::function<std::int64_t(const World&)> read) {
    CAPSIM_CHECK(!s_.program.actions.empty());
    s_.probes.push_back({s_.program.actions.size() - 1, std::move(read)});
  }
  void function(FunctionDef def) { s_.program.functions.push_back(std::move(def)); }

 private:
  ProgramScenario& s_;
};

inline std::int64_t live_blocks(const World& w) {
  return static_cast<std::int64_t>(w.pool_live_blocks());
}
inline std::int64_t checkpoints(const World& w) {
  return static_cast<std::int64_t>(w.counters().checkpoints);
}
inline std::int64_t graphs(const World& w) {
  return static_cast<std::int64_t>(w.counters().graphs_recorded);
}
inline std::int64_t events_of(const World& w, EventKind kind) {
  return static_cast<std::int64_t>(count_events(w.events(), kind));
}
// Events of `kind` whose text field `key` equals `value`.
inline std::int64_t events_where(const World& w, EventKind kind, FieldKey key,
                                 std::string_view value) {
  return std::count_if(w.events().begin(), w.events().end(),
                       [&](const Event& e) { return e.kind == kind && e.text(key) == value; });
}
// Events that carry decision `d` (decision_of): a skip's id, an eager run's reason...
inline std::int64_t decisions_made(const World& w, Decision d) {
  return std::count_if(w.events().begin(), w.events().end(),
                       [&](const Event& e) { return decision_of(e) == d; });
}
// Sum of an integer field over events of `kind` whose `function` is `fn`.
inline std::int64_t sum_field(const World& w, EventKind kind, std::string_view fn, FieldKey key) {
  std::int64_t total = 0;
  for (const Event& e : w.events()) {
    if (e.kind != kind) continue;
    if (!fn.empty() && e.text(F::function) != fn) continue;
    if (const std::int64_t* v = e.get_if<std::int64_t>(key)) total += *v;
  }
  return total;
}
inline std::int64_t tensor_id(const World& w, const std::string& name) {
  auto t = w.tensor_id(name);
  return t ? static_cast<std::int64_t>(t->value) : -1;
}
inline std::int64_t pending_backward(const World& w) {
  return w.manager() && w.manager()->running_forwards_with_pending_backwards();
}
inline std::int64_t roots(const World& w) {
  return w.manager() ? static_cast<std::int64_t>(w.manager()->root_children().size()) : -1;
}
// The tests' get_root_children() as one number per root, e.g. [1, 0].
inline std::vector<Expectation> root_children_are(const World& w, std::vector<std::int64_t> want) {
  std::vector<Expectation> out;
  out.push_back({"roots", static_cast<std::int64_t>(want.size()), roots(w)});
  const auto got = w.manager() ? w.manager()->root_children() : std::vector<std::size_t>{};
  for (std::size_t i = 0; i < want.size(); ++i) {
    out.push_back({"root " + std::to_string(i) + " descendants", want[i],
                   i < got.size() ? static_cast<std::int64_t>(got[i]) : -1});
  }
  return out;
}

// Actions without spelling every field (-Wmissing-field-initializers).
inline NewTensor tensor(std::string name, Dims sizes, std::optional<float> fill = std::nullopt) {
  NewTensor t;
  t.name = std::move(name);
  t.sizes = std::move(sizes);
  t.fill = fill;
  return t;
}
inline NewTensor param(std::string name, Dims sizes, std::optional<float> fill = std::nullopt) {
  NewTensor t = tensor(std::move(name), std::move(sizes), fill);
  t.parameter = true;
  return t;
}
// A call of a torch.compile-wrapped callable (a new invocation unless
// `same_invocation`, or unless the function is a backward).
inline Call call(std::string fn, std::vector<std::string> args, std::vector<std::string> outs = {},
                 std::optional<bool> new_invocation = std::nullopt) {
  Call c;
  c.function = std::move(fn);
  c.args = std::move(args);
  c.outputs = std::move(outs);
  c.new_invocation = new_invocation;
  return c;
}
// A call in the same invocation (a later graph of the same compiled frame, or
// cudagraphify_impl called directly as the tests do).
inline Call call_same(std::string fn, std::vector<std::string> args,
                      std::vector<std::string> outs = {}) {
  return call(std::move(fn), std::move(args), std::move(outs), false);
}
inline Call with_key(Call c, std::vector<std::int64_t> key) {
  c.int_key = std::move(key);
  return c;
}
inline Call consuming(Call c, std::vector<std::string> names) {
  c.consume = std::move(names);
  return c;
}
inline EagerCall eager(std::string fn, std::vector<std::string> args,
                       std::vector<std::string> outs = {}) {
  EagerCall c;
  c.function = std::move(fn);
  c.args = std::move(args);
  c.outputs = std::move(outs);
  return c;
}
inline ReassignData reassign(std::string name, std::optional<float> fill = std::nullopt) {
  ReassignData r;
  r.name = std::move(name);
  r.fill = fill;
  return r;
}

// x*x*x, the tests' favourite body.
inline FunctionDef cube(const std::string& name, CompilationMode mode) {
  FunctionBuilder f(name, mode, {"primals_1"});
  const ValueIndex x = f.input(0);
  return f.returns({f.mul(f.mul(x, x), x)});
}

// The seed PR's model: fwd(x, w1, w2) = x*w1 + x*w2, returning the loss and x
// (saved for the backward); w1 and w2 are params.
inline FunctionDef two_param_forward() {
  FunctionBuilder f("fwd", kForward, {"primals_1", "primals_2", "primals_3"});
  f.params({1, 2});
  const ValueIndex x = f.input(0);
  return f.returns({f.add(f.mul(x, f.input(1)), f.mul(x, f.input(2))), f.alias(x)});
}
// Params w1 and w2 ([4, 4]) and a compiled Adam "opt" over them; with
// `requires_grad` the params are autograd leaves of the World's own graph.
inline void add_two_params_and_adam(ProgramWriter& p, bool requires_grad = false) {
  for (const char* name : {"w1", "w2"}) {
    NewTensor w = param(name, {4, 4});
    w.requires_grad = requires_grad;
    p.add(w);
  }
  CreateOptimizer opt;
  opt.name = "opt";
  opt.kind = OptimizerKind::kAdam;
  opt.params = {"w1", "w2"};
  p.add(opt);
}

}  // namespace capsim::scenario_support
