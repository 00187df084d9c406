// Graph partitions and the newer compile-time skips (sim/world/partitions.hpp)
// on their own, and one World run that checks a partitioned function computes
// what the unpartitioned one does.
#include <doctest/doctest.h>

#include "sim/core/function_builder.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "sim/world/partitions.hpp"
#include "sim/world/world.hpp"

using namespace capsim;

namespace {

// x -> a = x + x -> b = a * a [cut] -> c = b + x -> d = c * c; returns d, a.
FunctionDef four_ops(PartitionCutReason reason) {
  FunctionBuilder f("f", CompilationMode::kInference, {"primals_1"});
  f.static_inputs({0});
  const ValueIndex x = f.input(0);
  const ValueIndex a = f.add(x, x);
  const ValueIndex c = f.add(f.mul(a, a), x);
  FunctionDef d = f.returns({f.mul(c, c), a});
  d.partition_cuts = {{1, 2, reason}};
  return d;
}

CudagraphConfig under(TorchProfile p) {
  CudagraphConfig c;
  c.torch_profile = p;
  return c;
}

}  // namespace

TEST_CASE("partitions: pieces read what they need and return what later pieces use") {
  const FunctionDef d = four_ops(PartitionCutReason::kCpu);
  const auto pieces = partition_function(d, under(TorchProfile::k2_15), false);
  REQUIRE(pieces.has_value());
  REQUIRE(pieces->size() == 3);
  const Segment& p0 = (*pieces)[0];
  const Segment& cut = (*pieces)[1];
  const Segment& p1 = (*pieces)[2];
  CHECK((p0.cudagraphed && !cut.cudagraphed && p1.cudagraphed));
  CHECK(p0.def.name == "f.partition_0");
  CHECK(p1.def.name == "f.partition_1");
  CHECK(cut.def.name == "f.eager_0");
  CHECK(p0.inputs == std::vector<ValueIndex>{0});
  CHECK(p0.outputs == std::vector<ValueIndex>{1});  // a: the cut and the graph's outputs use it
  CHECK(cut.inputs == std::vector<ValueIndex>{1});
  CHECK(cut.outputs == std::vector<ValueIndex>{2});
  CHECK(p1.inputs == std::vector<ValueIndex>{0, 2});
  CHECK(p1.outputs == std::vector<ValueIndex>{4});
  // The graph's static input stays static where a partition receives it; the
  // eager op's output is a placeholder of its own (get_partition_cudagraph_metadata).
  CHECK(p1.def.static_input_idxs == std::vector<std::uint32_t>{0});
  CHECK(p1.def.input_names == std::vector<std::string>{"primals_1", "partition_1_placeholder_1"});
  // Without graph_partition nothing is partitioned, and the CPU op skips (S2).
  CudagraphConfig off = under(TorchProfile::k2_15);
  off.graph_partition = false;
  CHECK_FALSE(partition_function(d, off, false).has_value());
  const auto skip = lowering_skip(d, off, false);
  REQUIRE(skip.has_value());
  CHECK(decision_key(skip->id) == "S2");
  CHECK(skip->message == "skipping cudagraphs due to skipping cudagraphs due to cpu device (mul)");
  // classic has partitions off by default, 2.9 on.
  CHECK(decision_key(lowering_skip(d, under(TorchProfile::kClassic), false)->id) == "S2");
  CHECK_FALSE(lowering_skip(d, under(TorchProfile::k2_9), false).has_value());
}

TEST_CASE("partitions: a view made outside a partition reaches it as its base") {
  // x (static) -> a = x + x; v = alias(x) [cut]; x.add_(x); r = v + x.
  // Inductor makes no buffer of a view (a ReinterpretView is named after its
  // base), so the second partition takes x, static, and makes v again; were
  // v a partition input of its own it would be copied at replay, before the
  // in-place add, and the replay would read the old x (capsim check, seed
  // 43155764484672, case 142; properties/regressions/).
  FunctionBuilder f("f", CompilationMode::kInference, {"primals_1"});
  f.static_inputs({0});
  const ValueIndex x = f.input(0);
  (void)f.add(x, x);
  const ValueIndex v = f.alias(x);
  (void)f.add_(x, x);
  FunctionDef d = f.returns({f.add(v, x)});
  d.partition_cuts = {{1, 2, PartitionCutReason::kCpu}};
  const auto pieces = partition_function(d, under(TorchProfile::k2_15), false);
  REQUIRE(pieces.has_value());
  REQUIRE(pieces->size() == 3);
  const Segment& p1 = (*pieces)[2];
  CHECK(p1.inputs == std::vector<ValueIndex>{0});
  CHECK(p1.def.static_input_idxs == std::vector<std::uint32_t>{0});
  REQUIRE(p1.def.ops.size() == 3);
  CHECK(p1.def.ops[0].kind == BodyOpKind::kAlias);  // v, made again from the input
  CHECK(p1.def.ops[2].args == std::vector<ValueIndex>{1, 0});
  // The cut no longer hands v on: nothing later reads it but through x.
  CHECK((*pieces)[1].outputs.empty());
}

TEST_CASE("partitions: an in-place result made outside a partition reaches it as its buffer") {
  // x (static) -> a = x + x; b = x.add_(x) [cut]; x.add_(x); r = x + b.
  // b is x's buffer (Inductor's MutationOutput names the buffer it wrote), so
  // the second partition takes x, static, and reads b as x. Were b a
  // partition input of its own it would be copied at replay, before the
  // second in-place add, and the replay would read the old x (capsim check,
  // seed 201644847310125, case 447; properties/regressions/). The add_ is
  // not run again inside the partition: that would add twice.
  FunctionBuilder f("f", CompilationMode::kInference, {"primals_1"});
  f.static_inputs({0});
  const ValueIndex x = f.input(0);
  (void)f.add(x, x);
  const ValueIndex b = f.add_(x, x);
  (void)f.add_(x, x);
  FunctionDef d = f.returns({f.add(x, b)});
  d.partition_cuts = {{1, 2, PartitionCutReason::kCpu}};
  const auto pieces = partition_function(d, under(TorchProfile::k2_9), false);
  REQUIRE(pieces.has_value());
  REQUIRE(pieces->size() == 3);
  const Segment& p1 = (*pieces)[2];
  CHECK(p1.inputs == std::vector<ValueIndex>{0});
  CHECK(p1.def.static_input_idxs == std::vector<std::uint32_t>{0});
  REQUIRE(p1.def.ops.size() == 2);  // the second add_ and the add, nothing made again
  CHECK(p1.def.ops[0].kind == BodyOpKind::kAddInplace);
  CHECK(p1.def.ops[1].kind == BodyOpKind::kAdd);
  CHECK(p1.def.ops[1].args == std::vector<ValueIndex>{0, 0});  // x + b, b read as x
  CHECK((*pieces)[1].outputs.empty());
}

TEST_CASE("partitions: which release skips and which cuts, rule by rule") {
  const FunctionDef unsafe = four_ops(PartitionCutReason::kCudagraphUnsafe);
  // 2.9 checks the unsafe op with partitions on; 2.10 leaves it to the partitioner.
  CHECK(decision_key(lowering_skip(unsafe, under(TorchProfile::k2_9), false)->id) == "S5");
  CHECK_FALSE(lowering_skip(unsafe, under(TorchProfile::k2_10), false).has_value());
  CHECK(partition_function(unsafe, under(TorchProfile::k2_10), false)->size() == 3);

  FunctionDef dynamic = four_ops(PartitionCutReason::kDynamicShape);
  CudagraphConfig c = under(TorchProfile::k2_15);
  // A dynamic-shape cut only cuts with skip_dynamic_graphs on a dynamic graph.
  CHECK_FALSE(partition_function(dynamic, c, true).has_value());
  c.cudagraph_skip_dynamic_graphs = true;
  CHECK_FALSE(partition_function(dynamic, c, false).has_value());
  CHECK(partition_function(dynamic, c, true)->size() == 3);
  CHECK_FALSE(lowering_skip(dynamic, c, true).has_value());
  c.torch_profile = TorchProfile::k2_9;
  CHECK(decision_key(lowering_skip(dynamic, c, true)->id) == "S5");

  // The caching allocator off skips from 2.13, partitions or not.
  CudagraphConfig uncached = under(TorchProfile::k2_13);
  uncached.caching_allocator_enabled = false;
  CHECK(decision_key(lowering_skip(dynamic, uncached, false)->id) == "S6");
  // ... and is refused as a knob before it.
  uncached.torch_profile = TorchProfile::k2_12;
  REQUIRE(config_problem(uncached).has_value());
  CHECK(config_problem(uncached)->key == "caching_allocator_enabled");
}

TEST_CASE("partitions: cudagraph_min_partition_size folds small partitions into eager code") {
  const FunctionDef d = four_ops(PartitionCutReason::kCpu);
  CudagraphConfig c = under(TorchProfile::k2_15);
  c.cudagraph_min_partition_size = 2;
  const auto pieces = partition_function(d, c, false);
  REQUIRE(pieces.has_value());
  REQUIRE(pieces->size() == 2);  // ops 0-1 eager (partition 0 had one kernel), ops 2-3 graphed
  CHECK(((*pieces)[0].begin == 0 && (*pieces)[0].end == 2 && !(*pieces)[0].cudagraphed));
  CHECK((*pieces)[1].cudagraphed);
  CHECK((*pieces)[1].def.name == "f.partition_0");
  c.cudagraph_min_partition_size = 3;  // nothing left: the graph runs eagerly
  const auto none = partition_function(d, c, false);
  REQUIRE(none.has_value());
  CHECK(none->size() == 1);
  CHECK_FALSE(none->front().cudagraphed);
  // Before 2.12 the knob does not exist.
  c.torch_profile = TorchProfile::k2_10;
  CHECK(partition_function(d, c, false)->size() == 3);
}

TEST_CASE("generation cloning: values kept, pool freed; leaving the block is caught") {
  const ProgramScenario* s = find_program_scenario("clone_live_output_on_new_generation");
  REQUIRE(s != nullptr);
  World sound(s->options);
  REQUIRE(sound.run(s->program).ok());
  CHECK(sound.counters().generation_clones == 2);
  CHECK(count_events(sound.events(), EventKind::kError) == 0);
  // The negative control: the cloned storage's pool block stays allocated,
  // so the next pool check finds a block no output tracks (E7).
  WorldOptions broken = s->options;
  broken.fault = Fault::kCloneKeepsPoolBlock;
  World w(broken);
  REQUIRE(w.run(s->program).ok());
  CHECK(std::any_of(w.events().begin(), w.events().end(), [](const Event& e) {
    return e.kind == EventKind::kError && e.text(F::id) == "E7";
  }));
  // Under a profile without the knob it does nothing: E1, as before.
  ProgramScenario older = under_profile(*s, TorchProfile::k2_13);
  World w13(older.options);
  REQUIRE(w13.run(older.program).ok());
  CHECK(w13.counters().generation_clones == 0);
}

TEST_CASE("generation cloning: a backward's outputs are not user-visible and keep E1") {
  Program program;
  {
    FunctionBuilder f("fwd", CompilationMode::kForward, {"primals_1"});
    program.functions.push_back(f.returns({f.add(f.input(0), f.input(0))}));
    FunctionBuilder b("bwd", CompilationMode::kBackward, {"tangents_1"});
    program.functions.push_back(b.returns({b.add(b.input(0), b.input(0))}));
  }
  NewTensor x;
  x.name = "x";
  x.sizes = {4};
  x.fill = 1.0f;
  program.actions.push_back(x);
  for (int step = 0; step < 2; ++step) {
    Call fwd;
    fwd.function = "fwd";
    fwd.args = {"x"};
    fwd.outputs = {"out"};
    program.actions.push_back(fwd);
    Call bwd;
    bwd.function = "bwd";
    bwd.args = {"out"};
    bwd.outputs = {step == 0 ? "grad" : ""};
    program.actions.push_back(bwd);
  }
  program.actions.push_back(Read{"grad"});
  WorldOptions options;
  options.config.torch_profile = TorchProfile::k2_15;
  options.config.cudagraph_trees_generation_cloning = true;
  World w(options);
  REQUIRE(w.run(program).ok());
  CHECK(w.counters().generation_clones >= 1);  // the forward's output
  CHECK(std::any_of(w.events().begin(), w.events().end(), [](const Event& e) {
    return e.kind == EventKind::kError && e.text(F::id) == "E1" &&
           e.text(F::message).value_or("").starts_with("Error: accessing gradient tensor output");
  }));
}

TEST_CASE("partitions: a partitioned function's replays compute what eager does") {
  // Every partition scenario replays with verify_replays on; the values of
  // each replay are checked against the body run eagerly.
  for (const char* name :
       {"graph_partition_cpu_op", "cudagraph_unsafe_op_partitions", "min_partition_size"}) {
    CAPTURE(name);
    const ProgramScenario* s = find_program_scenario(name);
    REQUIRE(s != nullptr);
    WorldOptions options = s->options;
    options.verify_replays = true;
    World w(options);
    const Status status = w.run(s->program);
    REQUIRE_MESSAGE(status.ok(), status.error().message);
    CHECK(w.counters().replay_checks > 0);
    CHECK(w.counters().replay_mismatches == 0);
  }
}

// S1 at compile time (cudagraph_support_input_mutation=False) is logged by
// post_compile with the prefix doubled, as the lowering skips are; the
// mutation gate's run-time S1 has it once (2.5.0 to 2.15.0 alike).
TEST_CASE("skips: S1 at compile time has the doubled prefix, at run time a single one") {
  Program program;
  {
    FunctionBuilder f("f", CompilationMode::kInference, {"primals_1"});
    program.functions.push_back(f.returns({f.add_(f.input(0), f.full({4}, 1.0f))}));
  }
  NewTensor x;
  x.name = "x";
  x.sizes = {4};
  x.fill = 1.0f;
  program.actions.push_back(x);
  Call call;
  call.function = "f";
  call.args = {"x"};
  program.actions.push_back(call);
  // The S1 skip's id and message of a run with or without mutation support.
  const auto s1 = [&program](bool support) -> std::pair<std::string, std::string> {
    WorldOptions options;
    options.config.torch_profile = TorchProfile::k2_15;
    options.config.cudagraph_support_input_mutation = support;
    World w(options);
    REQUIRE(w.run(program).ok());
    const auto skip = std::find_if(w.events().begin(), w.events().end(),
                                   [](const Event& e) { return e.kind == EventKind::kSkip; });
    REQUIRE(skip != w.events().end());
    return {std::string(skip->text(F::id).value_or("")),
            std::string(skip->text(F::message).value_or(""))};
  };
  for (const bool support : {false, true}) {
    CAPTURE(support);
    const auto [id, message] = s1(support);
    CHECK(id == "S1");
    CHECK(message == std::string(support ? "" : "skipping cudagraphs due to ") +
                         "skipping cudagraphs due to mutated inputs (1 instances)");
  }
  // With the mutating use's source line known, both end with it
  // (get_mutation_stack_trace's "Found from").
  program.functions[0].mutating_use_stack_traces = {"File \"t.py\", line 7, in f\n    x.add_(1)"};
  for (const bool support : {false, true}) {
    CAPTURE(support);
    CHECK(
        s1(support).second.ends_with("mutated inputs (1 instances). Found from : \n File \"t.py\", "
                                     "line 7, in f\n    x.add_(1)"));
  }
}
