// The invariants of docs/cudagraph-trees.md §10, one test case or more
// each. Every case fails if its rule is broken: the numbers are those the
// rule implies for the program in the case, not whatever capsim printed.
#include <doctest/doctest.h>

#include "tests/sim/tree_test_support.hpp"

namespace capsim {
namespace {

using namespace capsim::testing;

constexpr auto kInference = CompilationMode::kInference;
constexpr auto kForward = CompilationMode::kForward;
constexpr auto kBackward = CompilationMode::kBackward;

Program cube_calls(int calls, bool keep_outputs, CompilationMode mode = kInference) {
  Program p;
  p.functions.push_back(cube("foo", mode));
  p.actions.push_back(tensor("x", {8}, 2.0f));
  for (int i = 0; i < calls; ++i)
    p.actions.push_back(call("foo", {"x"}, {keep_outputs ? "out" : ""}));
  return p;
}

PoolId pool_of(const World& w, Address a) {
  for (const SegmentInfo& s : w.allocator().segments()) {
    if (s.range.contains(a)) return s.pool;
  }
  FAIL("address in no segment");
  return kDefaultPool;
}

TEST_CASE("invariant 1: warmup and recording allocate from the pool, eager fallbacks do not") {
  Program p = cube_calls(1, true);
  auto w = run_program(p);
  CHECK(pool_of(*w, w->data_ptr("out").value()) == w->manager()->pool());

  Program m;
  FunctionBuilder f("mut", kInference, {"primals_1"});
  m.functions.push_back(f.returns({f.clone(f.add_(f.input(0), f.input(0)))}));
  m.actions.push_back(tensor("x", {8}, 1.0f));
  m.actions.push_back(call("mut", {"x"}, {"out"}));
  auto e = run_program(m);
  CHECK(e->counters().eager_fallbacks == 1);
  CHECK(pool_of(*e, e->data_ptr("out").value()) == kDefaultPool);
  CHECK(e->pool_live_blocks() == 0);
}

TEST_CASE("invariant 2: warmup, then one recording, then replays; the body runs twice") {
  auto w = run_program(cube_calls(3, false));
  CHECK(w->counters().warmups == 1);
  CHECK(w->counters().graphs_recorded == 1);
  CHECK(w->counters().replays == 1);
}

TEST_CASE("invariant 3: warmup is sticky while the path cannot end") {
  // Forwards with live outputs and a pending backward: every call warms up.
  auto w = run_program(cube_calls(4, true, kForward));
  CHECK(w->counters().warmups == 4);
  CHECK(w->counters().graphs_recorded == 0);
  CHECK(w->manager()->path_state() == ExecutionState::kWarmup);
}

TEST_CASE("invariant 4: a call while recording records a child, with no checkpoint") {
  Program p;
  p.functions.push_back(cube("a", kInference));
  p.functions.push_back(cube("b", kInference));
  p.actions.push_back(tensor("x", {8}, 1.0f));
  for (int i = 0; i < 2; ++i) {
    p.actions.push_back(call("a", {"x"}, {"y"}));
    p.actions.push_back(call_same("b", {"y"}, {"z"}));
  }
  auto w = run_program(p);
  REQUIRE(w->manager()->graphs().size() == 2);
  CHECK(w->manager()->graphs()[1].parent == std::optional<GraphId>(0));
  CHECK(w->counters().checkpoints == 0);
}

TEST_CASE("invariant 5: one checkpoint per switch from execution; pool equals live outputs") {
  const ProgramScenarioRun run = run_named("live_outputs_multiple_graphs");
  CHECK(expectation(run, "checkpoints").actual == 2);
  CHECK(count_where(run.events, EventKind::kError, F::id, "E6") == 0);
  CHECK(count_where(run.events, EventKind::kError, F::id, "E7") == 0);
  // Two outputs over one block: freed once, when the second dies.
  const ProgramScenarioRun shared = run_named("checkpoint_shared_output_storage_deallocation");
  CHECK(expectation(shared, "live blocks after del x1").actual == 1);
  CHECK(expectation(shared, "live blocks after del x2").actual == 0);
}

TEST_CASE("invariant 6: non-static inputs are copied once per replay, static ones never") {
  Program p;
  FunctionBuilder f("lin", kInference, {"primals_1", "primals_2"});
  f.params({0});
  p.functions.push_back(f.returns({f.mul(f.input(0), f.input(1))}));
  p.actions.push_back(param("w", {8}));
  for (int i = 0; i < 5; ++i) {
    p.actions.push_back(tensor("x", {8}));
    p.actions.push_back(call("lin", {"w", "x"}, {""}));
  }
  auto w = run_program(p);
  CHECK(w->counters().replays == 3);
  CHECK(w->counters().copies == 3);
  CHECK(w->counters().copy_bytes == 3 * 8 * 4);
  // Counted once per recording, not per replay.
  CHECK(w->counters().cudagraph_recorded_non_static_inputs == 1);
}

// The copy-in takes one block copy where input and placeholder are dense
// alike, the copy kernel otherwise (tree_replay.cpp, copy_into_placeholder).
// A strided input read as if dense would copy the wrong elements: the oracle
// that reruns every replay eagerly counts that as a mismatch.
TEST_CASE("invariant 6: a replay copies in the input's elements, dense or strided") {
  for (const bool strided : {false, true}) {
    CAPTURE(strided);
    Program p;
    FunctionBuilder f("scale", kInference, {"arg0_1"});
    p.functions.push_back(f.returns({f.mul(f.input(0), f.input(0))}));
    for (int i = 0; i < 4; ++i) {
      NewTensor x = tensor("x", {8});    // random values, new at every call
      if (strided) x.strides = Dims{3};  // every third element of a 22-element storage
      p.actions.push_back(x);
      p.actions.push_back(call("scale", {"x"}, {""}));
    }
    WorldOptions options;
    options.verify_replays = true;
    auto w = run_program(p, options);
    CHECK(w->counters().replays == 2);
    CHECK(w->counters().copies == 2);
    CHECK(w->counters().replay_checks == 2);
    CHECK(w->counters().replay_mismatches == 0);
  }
}

TEST_CASE("invariant 7: an unaligned static input is demoted; a misaligned input is cloned") {
  const ProgramScenarioRun run = run_named("unaligned_static_parameter");
  CHECK(expectation(run, "static_input_data_ptrs that are not None").actual == 0);
  CHECK(count_where(run.events, EventKind::kAlignClone, F::demoted, true) == 1);
  CHECK(count_events(run.events, EventKind::kAlignClone) >= 3);
}

TEST_CASE("invariant 8: a managed-pointer mismatch is reported before a static one") {
  // limit 0 and no inlining: the first counted mismatch logs E5 with its reason.
  Program p;
  p.functions.push_back(cube("foo", kInference));
  FunctionBuilder g("goo", kInference, {"primals_1", "primals_2"});
  g.params({1});
  p.functions.push_back(g.returns({g.mul(g.input(0), g.input(1))}));
  FunctionBuilder c("clone", kInference, {"x"});
  p.functions.push_back(c.returns({c.clone(c.input(0))}));
  p.actions.push_back(param("w", {4}));
  for (int i = 0; i < 3; ++i) {
    p.actions.push_back(MarkStepBegin{});
    p.actions.push_back(tensor("x", {4}));
    p.actions.push_back(call("foo", {"x"}, {"y"}));
    p.actions.push_back(call("goo", {"y", "w"}, {"z"}));
  }
  p.actions.push_back(MarkStepBegin{});
  p.actions.push_back(call("foo", {"x"}, {"y"}));
  p.actions.push_back(eager("clone", {"y"}, {"y_clone"}));
  p.actions.push_back(reassign("w"));
  p.actions.push_back(call("goo", {"y_clone", "w"}, {"z"}));
  WorldOptions o;
  o.config.inline_inbuilt_nn_modules = false;
  o.config.cudagraph_unexpected_rerecord_limit = 0;
  auto w = run_program(p, o);
  REQUIRE(count_events(w->events(), EventKind::kSkip) == 1);
  for (const Event& e : w->events()) {
    if (e.kind != EventKind::kSkip) continue;
    const std::string msg = e.get<std::string>(F::message);
    CHECK(msg.find("due to cudagraph managed tensor data pointer changed.") != std::string::npos);
    CHECK(msg.find("on cudagraph node 0") != std::string::npos);
  }
}

TEST_CASE("invariant 9: only pointer mismatches count, and only without inlining") {
  const ProgramScenarioRun once =
      run_named("fallback_to_eager_if_recompiling_too_many_times_warn_only_once");
  CHECK(count_where(once.events, EventKind::kSkip, F::id, "E5") == 2);
  CHECK(expectation(once, "graphs recorded").actual == 3);
  // The same program with inline_inbuilt_nn_modules=True never hits the limit.
  ProgramScenario s =
      *find_program_scenario("fallback_to_eager_if_recompiling_too_many_times_warn_only_once");
  s.options.config.inline_inbuilt_nn_modules = true;
  const ProgramScenarioRun inlined = run_program_scenario(s);
  CHECK(count_where(inlined.events, EventKind::kSkip, F::id, "E5") == 0);
  CHECK(count_events(inlined.events, EventKind::kRecord) > 3);
}

TEST_CASE("invariant 10: error mode raises E4 at replay and records nothing") {
  const ProgramScenarioRun run = run_named("unstable_ptr");
  CHECK(count_where(run.events, EventKind::kError, F::id, "E4") == 1);
  CHECK(expectation(run, "graphs recorded").actual == 1);
  for (const Event& e : run.events) {
    if (e.kind == EventKind::kError) {
      CHECK(e.get<std::string>(F::message)
                .rfind("static input data pointer changed.\ninput name: primals_1. data pointer "
                       "changed from ",
                       0) == 0);
    }
  }
}

TEST_CASE("invariant 11: returning to an old address replays the old recording") {
  const ProgramScenarioRun run = run_named("multi_dispatch_single_compile_param_inputs");
  CHECK(expectation(run, "graphs recorded").actual == 4);
  CHECK(expectation(run, "recompiles").actual == 0);
}

TEST_CASE("invariant 12: a child whose expected-dead outputs are alive is not replayed") {
  // f -> (a, b); g(a) is recorded while b is dead. Later b is kept alive: the
  // recorded g could overwrite b's block, so a sibling is recorded instead.
  Program p;
  FunctionBuilder f("f", kInference, {"primals_1"});
  const ValueIndex x = f.input(0);
  p.functions.push_back(f.returns({f.add(x, x), f.mul(x, x)}));
  p.functions.push_back(cube("g", kInference));
  p.actions.push_back(tensor("x", {4}, 1.0f));
  for (int i = 0; i < 3; ++i) {
    p.actions.push_back(call("f", {"x"}, {"a", "b"}));
    p.actions.push_back(Del{"b"});
    p.actions.push_back(call_same("g", {"a"}, {""}));
  }
  p.actions.push_back(call("f", {"x"}, {"a", "b"}));
  p.actions.push_back(call_same("g", {"a"}, {""}));
  auto w = run_program(p);
  const auto& graphs = w->manager()->graphs();
  REQUIRE(graphs.size() == 3);
  CHECK(graphs[1].expected_dead_indices_before_graph == std::vector<PathIndex>{{0, 1}});
  CHECK(graphs[2].parent == std::optional<GraphId>(0));
  CHECK(w->counters().rerecords == 0);  // a liveness mismatch is an expected re-record
}

TEST_CASE("invariant 13: outputs are static, prior-graph aliases, same-node aliases or fresh") {
  const ProgramScenarioRun run = run_named("alias_of_parameter");
  CHECK(expectation(run, "static outputs").actual == 2);
  CHECK(expectation(run, "path live weakrefs").actual == 1);
  const ProgramScenarioRun refs = run_named("checkpointing_resets_persistent_refs");
  CHECK(expectation(refs, "root output 0 aliased in some path").actual == 1);
  CHECK(expectation(refs, "same object on the next replay").holds());
}

TEST_CASE("invariant 14: forward sets the pending flag, backward clears it, inference leaves it") {
  Program p;
  p.functions.push_back(cube("fwd", kForward));
  p.functions.push_back(cube("bwd", kBackward));
  p.functions.push_back(cube("inf", kInference));
  p.actions.push_back(tensor("x", {4}));
  p.actions.push_back(call("fwd", {"x"}, {""}));
  auto w1 = run_program(p);
  CHECK(w1->manager()->running_forwards_with_pending_backwards());
  p.actions.push_back(call("inf", {"x"}, {""}));
  auto w2 = run_program(p);
  CHECK(w2->manager()->running_forwards_with_pending_backwards());
  p.actions.push_back(call("bwd", {"x"}, {""}));
  auto w3 = run_program(p);
  CHECK_FALSE(w3->manager()->running_forwards_with_pending_backwards());
}

TEST_CASE("invariant 15: from warmup or recording, a new generation poisons kept outputs") {
  const ProgramScenarioRun run = run_named("error_on_dealloc_use");
  CHECK(count_where(run.events, EventKind::kError, F::id, "E1") == 2);
}

// Found by capsim check's kept-across-a-generation fault: the new-generation
// dealloc runs inside the very call that takes the kept output, so the output
// is freed after the World's own E1 check passed. PyTorch raises at the first
// touch of the input's storage (CUDAWarmupNode.run reads every input's
// data_ptr); before the fix capsim warmed up over the freed block (E7).
TEST_CASE("invariant 15: a kept output freed by this call's new generation raises E1 in it") {
  Program p;
  p.functions.push_back(cube("f", kInference));
  p.functions.push_back(cube("g", kInference));
  p.actions.push_back(tensor("x", {4}));
  p.actions.push_back(call("f", {"x"}, {"kept"}));  // a warmup output, in the pool
  p.actions.push_back(call("g", {"kept"}, {""}));   // new invocation: dealloc, then warmup
  auto w = run_program(p);
  CHECK(count_where(w->events(), EventKind::kError, F::id, "E1") == 1);
  CHECK(count_where(w->events(), EventKind::kError, F::where, "warmup") == 1);
  CHECK(count_where(w->events(), EventKind::kError, F::id, "E7") == 0);
  CHECK(count_where(w->events(), EventKind::kWarmup, F::function, "g") == 0);
}

TEST_CASE("invariant 15: from execution, the next replay overwrites a kept cached output") {
  Program p;
  FunctionBuilder f("foo", kInference, {"primals_1"});
  p.functions.push_back(f.returns({f.add(f.input(0), f.input(0))}));
  p.actions.push_back(tensor("x", {4}, 1.0f));
  for (int i = 0; i < 3; ++i) p.actions.push_back(call("foo", {"x"}, {""}));
  p.actions.push_back(call("foo", {"x"}, {"kept"}));
  p.actions.push_back(tensor("x", {4}, 5.0f));
  p.actions.push_back(call("foo", {"x"}, {"next"}));
  auto w = run_program(p);
  CHECK(w->tensor_id("kept").value() == w->tensor_id("next").value());
  CHECK(w->values("kept").value()[0] == 10.0f);  // not 2: overwritten, no error
  CHECK(w->counters().errors == 0);
}

TEST_CASE("invariant 16: W1 at most once per FunctionId") {
  auto w = run_program(cube_calls(8, true, kForward));
  CHECK(count_where(w->events(), EventKind::kWarning, F::id, "W1") == 1);
}

TEST_CASE("invariant 17: mutating an eager input runs eagerly; S1 and the skip count once") {
  Program p;
  FunctionBuilder f("foo", kInference, {"primals_1"});
  p.functions.push_back(f.returns({f.add_(f.input(0), f.full({4}, 2.0f))}));
  p.actions.push_back(tensor("x", {4}, 1.0f));
  for (int i = 0; i < 4; ++i) p.actions.push_back(call("foo", {"x"}, {""}));
  auto w = run_program(p);
  CHECK(count_where(w->events(), EventKind::kSkip, F::id, "S1") == 1);
  CHECK(w->counters().cudagraph_skips == 1);
  CHECK(w->counters().eager_fallbacks == 4);
  CHECK(w->values("x").value()[0] == 9.0f);
  CHECK(w->pool_live_blocks() == 0);
}

TEST_CASE("invariant 18: each int key is its own FunctionId with its own warmup") {
  const ProgramScenarioRun run = run_named("dynamic_warmup");
  CHECK(expectation(run, "FunctionIds").actual == 2);
  CHECK(expectation(run, "body runs (warmups + recordings)").actual == 4);
}

TEST_CASE("invariant 19: a backward's static set is its saved tensors; tangents are copied") {
  const ProgramScenarioRun run = run_named("forward_backward");
  for (const Event& e : run.events) {
    if (e.kind == EventKind::kRecord && e.text(F::function) == "bwd") {
      CHECK(e.get<IntList>(F::static_) == IntList{0, 1});
      CHECK(e.get<IntList>(F::non_static) == IntList{2});
    }
  }
}

TEST_CASE("invariant 20: the optimizer marks params and state static, not grads") {
  const ProgramScenarioRun run = run_named("compiled_adam_eager_backward");
  for (const Event& e : run.events) {
    if (e.kind == EventKind::kCompile && e.text(F::function) == "opt.step") {
      // inputs: 2 params, 2 grads, 2 x (exp_avg, exp_avg_sq, step)
      CHECK(e.get<IntList>(F::static_input_idxs) == IntList{0, 1, 4, 5, 6, 7, 8, 9});
    }
  }
  CHECK(expectation(run, "grad copies (2 per replay)").holds());
  const ProgramScenarioRun managed = run_named("compiled_adam_cudagraphed_backward");
  CHECK(expectation(managed, "grad copies in those replays").actual == 0);
}

TEST_CASE("invariant 20: reassigning a guarded optimizer param re-records, not recompiles") {
  // Dynamo marks an optimizer's params with mark_static_address(guard=True)
  // (variables/optimizer.py), an ID_MATCH guard: `w.data = new` keeps the
  // object, so the compiled step is kept and its static input moved; the
  // tree re-records. (Adam: SGD with momentum would recompile on its state
  // guard at the second step anyway.)
  Program p;
  p.actions.push_back(param("w", {4}));
  CreateOptimizer opt;
  opt.name = "opt";
  opt.kind = OptimizerKind::kAdam;
  opt.params = {"w"};
  p.actions.push_back(opt);
  for (int i = 0; i < 4; ++i) {
    if (i == 2) p.actions.push_back(reassign("w"));
    p.actions.push_back(tensor("g", {4}));
    p.actions.push_back(AccumulateGrad{"w", "g"});
    p.actions.push_back(Del{"g"});
    p.actions.push_back(OptimizerStep{"opt"});
    p.actions.push_back(ZeroGrad{"opt", true});
  }
  auto w = run_program(p);
  CHECK(w->counters().recompiles == 0);
  CHECK(w->counters().rerecords == 1);
  CHECK(w->counters().errors == 0);
}

TEST_CASE("invariant 21: zero_grad(set_to_none=True) on static grads: shipped vs PR 107853") {
  const ProgramScenarioRun shipped = run_named("compiled_adam_static_grads_zero_grad");
  CHECK(expectation(shipped, "zero_grad errors (Z1)").actual == 0);
  CHECK(expectation(shipped, "step re-records").actual == 1);
  const ProgramScenarioRun rule = run_named("compiled_adam_static_grads_pr107853");
  CHECK(expectation(rule, "zero_grad errors (Z1)").actual == 1);
}

TEST_CASE("invariant 22: the manager goes when its last function dies, and on reset") {
  const ProgramScenarioRun run = run_named("compiled_adam_optimizer_dropped");
  CHECK(expectation(run, "manager alive after the drop").actual == 0);
  CHECK(expectation(run, "params alive after the drop").actual == 0);
  Program p = cube_calls(2, true);
  p.actions.push_back(MarkStepBegin{});
  p.actions.push_back(Reset{});
  auto w = run_program(p);
  CHECK(w->manager() == nullptr);
  CHECK(w->generations().mark_step_counter == 0);
}

TEST_CASE("invariant 23: the plain API copies only changed pointers and reads stale params") {
  const ProgramScenarioRun run = run_named("plain_api_param_reassigned");
  CHECK(expectation(run, "replays that differ from eager").actual == 1);
  CHECK(expectation(run, "y[0] (stale weight 1, x 2: 8; eager would give 24)").actual == 8);
  Program p;
  FunctionBuilder f("foo", kInference, {"x"});
  p.functions.push_back(f.returns({f.add(f.input(0), f.input(0))}));
  p.actions.push_back(tensor("x", {4}, 1.0f));
  p.actions.push_back(call("foo", {"x"}, {"a"}));
  p.actions.push_back(call("foo", {"x"}, {"b"}));  // same pointer: no copy
  p.actions.push_back(tensor("x", {4}, 3.0f));
  p.actions.push_back(call("foo", {"x"}, {"c"}));  // a new pointer: one copy
  WorldOptions o;
  o.config.plain_api = true;
  auto w = run_program(p, o);
  CHECK(w->counters().copies == 1);
  CHECK(w->tensor_id("a").value() == w->tensor_id("c").value());
  CHECK(w->values("a").value()[0] == 6.0f);  // overwritten by the last replay
}

TEST_CASE("a zero-element output reads back empty, through replay as in eager") {
  // Regression: World::values once passed an empty vector's null pointer to
  // memcpy, which UBSan reports (fuzz_trace_reader, 349,726 inputs in).
  Program p;
  FunctionBuilder f("linear", kInference, {"weight", "x"});
  p.functions.push_back(f.returns({f.mm(f.input(1), f.input(0))}));
  p.actions.push_back(tensor("weight", {4, 0}, 1.0f));
  p.actions.push_back(tensor("x", {2, 4}, 1.0f));
  for (int i = 0; i < 3; ++i) p.actions.push_back(call("linear", {"weight", "x"}, {"y"}));
  auto w = run_program(p);
  const Result<std::vector<float>> y = w->values("y");
  REQUIRE(y.ok());
  CHECK(y.value().empty());
}

TEST_CASE("bad input: unknown names and functions, double del, shape errors name the action") {
  auto fails_with = [](Program p, const std::string& text) {
    World w(WorldOptions{});
    const Status s = w.run(p);
    REQUIRE_FALSE(s.ok());
    CHECK_MESSAGE(s.error().message.find(text) != std::string::npos, s.error().message);
  };
  Program p = cube_calls(1, true);
  p.actions.push_back(call("nope", {"x"}, {""}));
  fails_with(p, "action 2 (call): unknown function 'nope'");
  p = cube_calls(1, true);
  p.actions.push_back(call("foo", {"missing"}, {""}));
  fails_with(p, "action 2 (call): unknown tensor 'missing'");
  p = cube_calls(1, true);
  p.actions.push_back(Del{"out"});
  p.actions.push_back(Del{"out"});
  fails_with(p, "action 3 (del): del of unknown name 'out'");
  p = cube_calls(0, true);
  FunctionBuilder f("mm", kInference, {"a", "b"});
  p.functions.push_back(f.returns({f.mm(f.input(0), f.input(1))}));
  p.actions.push_back(call("mm", {"x", "x"}, {""}));
  fails_with(p, "mm: both operands must be 2-d");
}

// The re-record limit's early exit reads the count of (current node,
// function), and a warmup node's id is its own (_get_node_id): a function
// whose root edge passed the limit still warms up when it is called at
// another function's warmup node (cudagraph_trees.py _run, 2.5 to 2.11).
TEST_CASE("re-record limit: a warmup node's count is its own, not the root edge's") {
  Program p;
  {
    FunctionBuilder f("f", kInference, {"x", "p"});
    f.static_inputs({1});
    p.functions.push_back(f.returns({f.add(f.input(0), f.input(1))}));
    FunctionBuilder h("h", kInference, {"x"});
    p.functions.push_back(h.returns({h.add(h.input(0), h.input(0))}));
  }
  p.actions.push_back(param("p", {4}, 1.0f));
  p.actions.push_back(tensor("x", {4}, 1.0f));
  for (int i = 0; i < 3; ++i) p.actions.push_back(call("f", {"x", "p"}, {""}));
  p.actions.push_back(reassign("p", 2.0f));
  p.actions.push_back(call("f", {"x", "p"}, {""}));  // past the limit at the root edge: E5
  p.actions.push_back(call("h", {"x"}, {"kept"}));   // h's warmup, its output kept
  p.actions.push_back(call_same("f", {"x", "p"}, {""}));
  WorldOptions options;
  options.config.torch_profile = TorchProfile::kClassic;
  options.config.inline_inbuilt_nn_modules = false;
  options.config.cudagraph_unexpected_rerecord_limit = 0;
  const std::unique_ptr<World> w = run_program(p, options);
  std::vector<std::string> last;  // the decisions of the last call
  for (const Event& e : w->events()) {
    if (e.action == p.actions.size() - 1 && e.text(F::function) == "f") {
      last.emplace_back(event_kind_name(e.kind));
    }
  }
  CHECK(count_where(w->events(), EventKind::kSkip, F::id, "E5") == 1);
  CHECK(last == std::vector<std::string>{"warmup"});
}

}  // namespace
}  // namespace capsim
