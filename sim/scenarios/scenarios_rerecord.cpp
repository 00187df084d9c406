// Built-in scenarios, part 3: static pointers that change (re-records and the
// re-record limit, E5), mark_static_address, the mutation gate (S1) and the
// plain API's stale reads.
#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

// fwd(x, p) = x * p, saving x; bwd(x, grad) = grad * x (the grad of p).
void add_mul_fwd_bwd(ProgramWriter& p, bool param_is_module_attribute) {
  {
    FunctionBuilder f("fwd", kForward, {"primals_1", "primals_2"});
    if (param_is_module_attribute) f.params({1});
    p.function(f.returns({f.mul(f.input(0), f.input(1)), f.alias(f.input(0))}));
  }
  {
    FunctionBuilder f("bwd", kBackward, {"primals_1", "tangents_1"});
    f.static_inputs({0});
    p.function(f.returns({f.mul(f.input(1), f.input(0))}));
  }
}

// One training iteration: out = fwd(x, p); out.sum().backward(); p.grad = None.
void iteration(ProgramWriter& p, const std::string& param) {
  p.add(tensor("x", {2, 2}, 1.0f));
  p.add(call("fwd", {"x", param}, {"out", "saved"}));
  p.add(tensor("grad_out", {2, 2}, 1.0f));
  p.add(consuming(call("bwd", {"saved", "grad_out"}, {"grad"}), {"saved"}));
  p.add(Del{"grad"});
}

// Three iterations with a module param, then `moves` times: param.data
// reassigned and one more iteration.
void param_churn(ProgramWriter& p, int moves) {
  add_mul_fwd_bwd(p, true);
  p.add(param("param", {2, 2}));
  for (int i = 0; i < 3; ++i) iteration(p, "param");
  for (int i = 0; i < moves; ++i) {
    p.add(reassign("param"));
    iteration(p, "param");
  }
}

ProgramScenario multi_dispatch_single_compile_param_inputs() {
  ProgramScenario s;
  s.name = "multi_dispatch_single_compile_param_inputs";
  s.mirrors = "test_cudagraph_trees.py::test_multi_dispatch_single_compile_param_inputs";
  s.description = "swapping a param re-records without recompiling; swapping back replays";
  ProgramWriter p(s);
  add_mul_fwd_bwd(p, false);
  p.add(param("p1", {2, 2}));
  p.add(param("p2", {2, 2}));
  for (const char* which : {"p1", "p2", "p1"}) {
    for (int i = 0; i < 5; ++i) iteration(p, which);
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded", 4, graphs(w)},
        {"recompiles", 0, static_cast<std::int64_t>(w.counters().recompiles)},
        {"FunctionIds", 2, events_of(w, EventKind::kCompile)}};
  };
  return s;
}

ProgramScenario fallback_to_eager_if_recompiling_too_many_times(bool warn_only_once) {
  ProgramScenario s;
  s.name = warn_only_once ? "fallback_to_eager_if_recompiling_too_many_times_warn_only_once"
                          : "fallback_to_eager_if_recompiling_too_many_times";
  s.mirrors = std::string("test_cudagraph_trees.py::test_") + s.name;
  s.description = warn_only_once
                      ? "past the re-record limit every call runs eagerly; E5 once per function"
                      : "limit 0: a changed param pointer logs E5 and runs the forward eagerly";
  s.options.config.inline_inbuilt_nn_modules = false;
  s.options.config.cudagraph_unexpected_rerecord_limit = 0;
  ProgramWriter p(s);
  param_churn(p, warn_only_once ? 5 : 1);
  s.expect = [warn_only_once](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded", 3, graphs(w)},
        {"E5 skips", warn_only_once ? 2 : 1, decisions_made(w, Decision::kSkipRerecordLimit)},
        {"cudagraph_skips", warn_only_once ? 2 : 1,
         static_cast<std::int64_t>(w.counters().cudagraph_skips)}};
  };
  return s;
}

// PR 182531 (PyTorch 2.13 on): the limit applies whatever
// inline_inbuilt_nn_modules says (from 2.12 the flag is always True), but a
// changed static pointer (an nn.Parameter whose .data moved) no longer counts
// toward it. The program of fallback_to_eager_if_recompiling_too_many_times:
// the classic manager, with inlining off, logs E5 at the first move; under
// 2.15 every move re-records and nothing counts (the caching allocator hands
// the param addresses it had before, so the later moves replay).
ProgramScenario static_pointer_churn_not_counted() {
  ProgramScenario s;
  s.name = "static_pointer_churn_not_counted";
  s.mirrors = "pytorch/pytorch#182531 (2.13): StaticInputIdxMismatch does not count";
  s.description = "limit 0: five reassigned param pointers re-record or replay, no E5";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.config.inline_inbuilt_nn_modules = false;  // ignored from 2.12
  s.options.config.cudagraph_unexpected_rerecord_limit = 0;
  ProgramWriter p(s);
  param_churn(p, 5);
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"forward recordings", 4, events_where(w, EventKind::kRecord, F::function, "fwd")},
        {"forward replays", 3, events_where(w, EventKind::kReplay, F::function, "fwd")},
        {"E5 skips", 0, decisions_made(w, Decision::kSkipRerecordLimit)},
        {"re-records counted toward the limit", 0,
         static_cast<std::int64_t>(w.counters().rerecords)}};
  };
  return s;
}

// PR 182531 (PyTorch 2.13 on): a child whose expected-dead outputs are alive
// (ExpectedDeadIndicesBeforeGraphMismatch) now counts toward the limit. f
// returns (a, b); g(a) is recorded while b is dead; later b is kept alive, so
// g cannot replay. The classic manager records a sibling and counts nothing;
// under 2.15 with limit 0 the call is past the limit (E5, reason "expected
// dead indices before graph are live") and g runs eagerly.
ProgramScenario liveness_mismatch_counts() {
  ProgramScenario s;
  s.name = "liveness_mismatch_counts";
  s.mirrors = "pytorch/pytorch#182531 (2.13): ExpectedDeadIndicesBeforeGraphMismatch counts";
  s.description = "limit 0: a live output expected dead makes g skip cudagraphs (E5)";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.config.cudagraph_unexpected_rerecord_limit = 0;
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    p.function(f.returns({f.add(x, x), f.mul(x, x)}));
  }
  p.function(cube("g", kInference));
  p.add(tensor("x", {4}, 1.0f));
  for (int i = 0; i < 3; ++i) {
    p.add(call("f", {"x"}, {"a", "b"}));
    p.add(Del{"b"});
    p.add(call_same("g", {"a"}, {""}));
  }
  p.add(call("f", {"x"}, {"a", "b"}));
  p.add(call_same("g", {"a"}, {""}));
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded", 2, graphs(w)},
        {"E5 skips", 1, decisions_made(w, Decision::kSkipRerecordLimit)},
        {"cudagraph_skips", 1, static_cast<std::int64_t>(w.counters().cudagraph_skips)}};
  };
  return s;
}

ProgramScenario no_rerecord_with_mark_static_address() {
  ProgramScenario s;
  s.name = "no_rerecord_with_mark_static_address";
  s.mirrors = "test_cudagraph_trees.py::test_no_rerecord_with_mark_static_address";
  s.description =
      "a marked-static y and a fresh x each step: 2 graphs, x copied, never re-recorded";
  ProgramWriter p(s);
  {
    FunctionBuilder f("fwd", kForward, {"primals_1", "primals_2", "primals_3"});
    f.params({2});
    const ValueIndex y = f.mm(f.input(1), f.input(2));
    p.function(f.returns({f.add(f.relu(f.input(0)), y), f.alias(f.input(0))}));
  }
  {
    FunctionBuilder f("bwd", kBackward, {"primals_1", "tangents_1"});
    f.static_inputs({0});
    p.function(f.returns({f.mul(f.input(1), f.input(0))}));
  }
  p.add(param("weight", {2, 2}));
  p.add(tensor("y", {2, 2}));
  p.add(MarkStatic{"y", false});
  for (int i = 0; i < 5; ++i) {
    p.add(tensor("x", {2, 2}));
    p.add(call("fwd", {"x", "y", "weight"}, {"res", "saved"}));
    p.add(tensor("grad_out", {2, 2}, 1.0f));
    p.add(consuming(call("bwd", {"saved", "grad_out"}, {""}), {"saved"}));
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded", 2, graphs(w)},
        {"forward replays", 3, events_where(w, EventKind::kReplay, F::function, "fwd")},
        {"forward copies (x, once per replay)", 3,
         sum_field(w, EventKind::kCopyIn, "fwd", F::copies)}};
  };
  return s;
}

// mark_static_address's default guard (PR 162208, 2.9.1): a static cache
// made anew each step and marked without `guard=`, as #156377's transformers
// did. Up to 2.9.0 the default guard=True installs ID_MATCH on the object, so
// each new tensor recompiles; from 2.9.1 nothing guards it and the moved
// static pointer re-records.
ProgramScenario mark_static_default_guard() {
  ProgramScenario s;
  s.name = "mark_static_default_guard";
  s.mirrors = "decorators.py::mark_static_address (guard's default, 2.9.1 on: False)";
  s.description = "a cache made anew and marked static each step: re-records, no recompile";
  s.options.config.torch_profile = TorchProfile::k2_15;
  ProgramWriter p(s);
  {
    FunctionBuilder f("step", kInference, {"arg0_1", "arg1_1"});
    p.function(f.returns({f.add(f.input(0), f.input(1))}));
  }
  for (int i = 0; i < 4; ++i) {
    p.add(tensor("cache", {4}, static_cast<float>(i)));
    p.add(MarkStatic{"cache"});
    p.add(tensor("x", {4}));
    p.add(call("step", {"x", "cache"}, {"out"}));
    p.add(Read{"out"});
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"recompiles", 0, static_cast<std::int64_t>(w.counters().recompiles)},
        {"graphs recorded", 3, graphs(w)}};
  };
  return s;
}

ProgramScenario mutation_on_inp() {
  ProgramScenario s;
  s.name = "mutation_on_inp";
  s.mirrors = "test_cudagraph_trees.py::test_mutation_on_inp";
  s.description = "mutating an eager input skips cudagraphs (S1) and makes no root";
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo", kInference, {"primals_1"});
    p.function(f.returns({f.add_(f.input(0), f.full({10}, 2.0f))}));
  }
  p.add(tensor("inp", {10}, 1.0f));
  p.add(call("foo", {"inp"}, {"out"}));
  p.add(Read{"inp"});
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"S1 skips", 1, decisions_made(w, Decision::kSkipMutatedInputs)},
        {"cudagraph_skips", 1, static_cast<std::int64_t>(w.counters().cudagraph_skips)},
        {"roots", 0, w.manager() ? static_cast<std::int64_t>(w.manager()->roots().size()) : -1},
        {"inp after the eager add_", 3, static_cast<std::int64_t>(w.values("inp").value()[0])}};
  };
  return s;
}

ProgramScenario mutation_cudagraph_managed_tensors() {
  ProgramScenario s;
  s.name = "mutation_cudagraph_managed_tensors";
  s.mirrors = "test_cudagraph_trees.py::test_mutation_cudagraph_managed_tensors";
  s.description = "mutating a prior graph's output is cudagraphed; mutating a clone is S1 once";
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo", kInference, {"primals_1"});
    p.function(f.returns({f.add(f.input(0), f.full({4}, 1.0f))}));
  }
  {
    FunctionBuilder f("mut", kInference, {"primals_1"});
    p.function(f.returns({f.add_(f.input(0), f.full({4}, 2.0f))}));
  }
  {
    FunctionBuilder f("clone", kInference, {"x"});
    p.function(f.returns({f.clone(f.input(0))}));
  }
  for (int i = 0; i < 3; ++i) {
    p.add(MarkStepBegin{});
    p.add(tensor("inp", {4}));
    p.add(call("foo", {"inp"}, {"tmp"}));
    p.add(call("mut", {"tmp"}, {"mut_out"}));
  }
  p.probe([](const World& w) { return static_cast<std::int64_t>(w.counters().cudagraph_skips); });
  p.add(MarkStepBegin{});
  p.add(tensor("inp", {4}));
  p.add(call("foo", {"inp"}, {"tmp"}));
  p.add(eager("clone", {"tmp"}, {"mut_inp"}));
  p.add(call("mut", {"mut_inp"}, {"mut_out"}));
  s.expect = [](const World& w, const std::vector<std::int64_t>& probe) {
    return std::vector<Expectation>{
        {"skips while mutating graph outputs", 0, probe[0]},
        {"S1 skips", 1, decisions_made(w, Decision::kSkipMutatedInputs)},
        {"cudagraph_skips", 1, static_cast<std::int64_t>(w.counters().cudagraph_skips)}};
  };
  return s;
}

ProgramScenario plain_api_param_reassigned() {
  ProgramScenario s;
  s.name = "plain_api_param_reassigned";
  s.mirrors =
      "torch/cuda/graphs.py::make_graphed_callables (docs/cudagraph-trees.md §3, Plain API)";
  s.description = "plain API: a param whose .data is reassigned is still read at its old address";
  s.options.config.plain_api = true;
  s.options.verify_replays = true;
  ProgramWriter p(s);
  p.function([] {
    FunctionBuilder f("linear", kInference, {"weight", "x"});
    f.params({0});
    return f.returns({f.mm(f.input(1), f.input(0))});
  }());
  p.add(param("weight", {4, 4}, 1.0f));
  p.add(tensor("x", {2, 4}, 1.0f));
  p.add(call("linear", {"weight", "x"}, {"y"}));
  p.add(tensor("x", {2, 4}, 2.0f));
  p.add(call("linear", {"weight", "x"}, {"y"}));
  p.add(Read{"y"});
  p.add(reassign("weight", 3.0f));
  p.add(call("linear", {"weight", "x"}, {"y"}));
  p.add(Read{"y"});
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{{"replays that differ from eager", 1,
                                     static_cast<std::int64_t>(w.counters().replay_mismatches)},
                                    {"replays that read a moved param", 1,
                                     static_cast<std::int64_t>(w.counters().static_violations)},
                                    {"y[0] (stale weight 1, x 2: 8; eager would give 24)", 8,
                                     static_cast<std::int64_t>(w.values("y").value()[0])}};
  };
  return s;
}

}  // namespace

void add_rerecord_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(multi_dispatch_single_compile_param_inputs());
  out.push_back(fallback_to_eager_if_recompiling_too_many_times(false));
  out.push_back(fallback_to_eager_if_recompiling_too_many_times(true));
  out.push_back(static_pointer_churn_not_counted());
  out.push_back(liveness_mismatch_counts());
  out.push_back(no_rerecord_with_mark_static_address());
  out.push_back(mark_static_default_guard());
  out.push_back(mutation_on_inp());
  out.push_back(mutation_cudagraph_managed_tensors());
  out.push_back(plain_api_param_reassigned());
}

}  // namespace capsim
