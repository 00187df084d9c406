// Scenarios of the newer releases' compile-time decisions: graph partitions,
// the dynamic-shape knobs (capture sizes, W2, skip_dynamic_graphs, the 2.15
// key limit), the new skips and cudagraph_or_error. Each is written for the
// profile named in it; the scenario table shows what the others do.
#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

// f(x) = (x + 1) * 2 + x, with `* 2` a CPU op (or another cut reason).
FunctionDef cpu_op_in_the_middle(PartitionCutReason reason) {
  FunctionBuilder f("f", kInference, {"primals_1"});
  const ValueIndex x = f.input(0);
  const ValueIndex a = f.add(x, x);
  const ValueIndex b = f.mul(a, a);
  FunctionDef def = f.returns({f.add(b, x)});
  def.partition_cuts = {{1, 2, reason}};
  return def;
}

// Three calls of `f` on the same input, each a new invocation.
void three_calls(ProgramWriter& p) {
  p.add(tensor("x", {4}, 1.0f));
  for (int i = 0; i < 3; ++i) {
    p.add(call("f", {"x"}, {"out"}));
    p.add(Del{"out"});
  }
}

}  // namespace

// graph_partition (2.9 on): the CPU op splits f into two tree functions; the
// second partition's input comes from the eager op, so it is copied at
// every replay. Without partitions (classic) the whole graph skips (S2).
ProgramScenario graph_partition_cpu_op() {
  ProgramScenario s;
  s.name = "graph_partition_cpu_op";
  s.mirrors = "test_cudagraph_trees.py::test_graph_partition";
  s.description = "a CPU op in the middle: two partitions; the second copies x and the op's output";
  s.options.config.torch_profile = TorchProfile::k2_15;
  ProgramWriter p(s);
  p.function(cpu_op_in_the_middle(PartitionCutReason::kCpu));
  three_calls(p);
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"tree functions (partitions)", 2, events_of(w, EventKind::kCompile)},
        {"graphs recorded", 2, graphs(w)},
        {"replays", 2, static_cast<std::int64_t>(w.counters().replays)},
        {"partition 1's copies (x and the CPU op's output)", 2,
         sum_field(w, EventKind::kCopyIn, "f.partition_1", F::copies)},
        {"cudagraph_skips", 0, static_cast<std::int64_t>(w.counters().cudagraph_skips)}};
  };
  return s;
}

// Without graph_partition the CPU op skips the graph, with PyTorch's
// doubled prefix (the lowering check formats the reason, and the log
// formats it again).
ProgramScenario cpu_device_skip() {
  ProgramScenario s;
  s.name = "cpu_device_skip";
  s.mirrors = "test_cudagraph_trees.py::test_multiple_devices_msg (graph_partition=False)";
  s.description = "graph_partition off: a CPU op skips cudagraphs for the graph (S2)";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.config.graph_partition = false;
  ProgramWriter p(s);
  p.function(cpu_op_in_the_middle(PartitionCutReason::kCpu));
  three_calls(p);
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"S2 skips", 1, decisions_made(w, Decision::kSkipCpuOp)},
        {"graphs recorded", 0, graphs(w)},
        {"eager runs", 3, static_cast<std::int64_t>(w.counters().eager_fallbacks)}};
  };
  return s;
}

// An op tagged cudagraph_unsafe: 2.9 skips the graph (S5); from 2.10 the
// partitioner cuts around it.
ProgramScenario cudagraph_unsafe_op_partitions() {
  ProgramScenario s;
  s.name = "cudagraph_unsafe_op_partitions";
  s.mirrors =
      "test_cudagraph_trees.py::test_graph_partition_custom_op, test_skip_cudagraph_unsafe_ops";
  s.description = "two cudagraph_unsafe ops: 3 partitions from 2.10; 2.9 skips the graph (S5)";
  s.options.config.torch_profile = TorchProfile::k2_15;
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    const ValueIndex a = f.add(x, x);
    const ValueIndex b = f.mul(a, a);  // unsafe
    const ValueIndex c = f.add(b, x);
    const ValueIndex d = f.mul(c, c);  // unsafe
    FunctionDef def = f.returns({f.add(d, x)});
    def.partition_cuts = {{1, 2, PartitionCutReason::kCudagraphUnsafe},
                          {3, 4, PartitionCutReason::kCudagraphUnsafe}};
    p.function(std::move(def));
  }
  three_calls(p);
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded", 3, graphs(w)},
        {"S5 skips", 0, decisions_made(w, Decision::kSkipDynamicShapes)}};
  };
  return s;
}

// cudagraph_min_partition_size 2 (2.12 on): the first partition (one add)
// runs eagerly with the CPU op; one tree function is left.
ProgramScenario min_partition_size() {
  ProgramScenario s;
  s.name = "min_partition_size";
  s.mirrors = "test_cudagraph_trees.py::test_cudagraph_min_partition_size_skip_small";
  s.description = "cudagraph_min_partition_size=2: a one-kernel partition runs eagerly";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.config.cudagraph_min_partition_size = 2;
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    const ValueIndex a = f.add(x, x);  // partition 0: one kernel
    const ValueIndex b = f.mul(a, a);  // the CPU op
    const ValueIndex c = f.add(b, x);  // partition 1: two kernels
    FunctionDef def = f.returns({f.mul(c, c)});
    def.partition_cuts = {{1, 2, PartitionCutReason::kCpu}};
    p.function(std::move(def));
  }
  three_calls(p);
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{{"tree functions", 1, events_of(w, EventKind::kCompile)},
                                    {"graphs recorded", 1, graphs(w)}};
  };
  return s;
}

// cudagraph_capture_sizes=(2,): size 3 runs the model directly, with no
// tree function; size 2 is warmed up, recorded and replayed.
ProgramScenario capture_sizes() {
  ProgramScenario s;
  s.name = "capture_sizes";
  s.mirrors = "test_cudagraph_trees.py::test_cudagraph_capture_sizes";
  s.description = "cudagraph_capture_sizes=(2,): size 3 runs without a tree node";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.config.cudagraph_capture_sizes = std::vector<std::vector<std::int64_t>>{{2}};
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"x"});
    p.function(f.returns({f.add(f.input(0), f.input(0))}));
  }
  p.add(tensor("x2", {2}, 1.0f));
  p.add(tensor("x3", {3}, 1.0f));
  for (int i = 0; i < 3; ++i) {
    p.add(with_key(call("f", {"x2"}, {""}), {2}));
    p.add(with_key(call("f", {"x3"}, {""}), {3}));
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"tree functions", 1, events_of(w, EventKind::kCompile)},
        {"graphs recorded", 1, graphs(w)},
        {"size 3 run directly", 3, decisions_made(w, Decision::kEagerCaptureSize)}};
  };
  return s;
}

// W2: 2.10 on warns once a wrapper holds more than 8 int keys (classic and
// 2.9: 50).
ProgramScenario dynamic_shape_warning() {
  ProgramScenario s;
  s.name = "dynamic_shape_warning";
  s.mirrors = "test_cudagraph_trees.py::test_warn_once_if_dynamic_shape_limit_reached";
  s.description = "ten int keys: W2 once, at the ninth";
  s.options.config.torch_profile = TorchProfile::k2_15;
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"x"});
    p.function(f.returns({f.add(f.input(0), f.input(0))}));
  }
  p.add(tensor("x", {2}, 1.0f));
  for (std::int64_t k = 1; k <= 10; ++k) p.add(with_key(call("f", {"x"}, {""}), {k}));
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{{"W2 warnings", 1, decisions_made(w, Decision::kWarnManySizes)},
                                    {"tree functions", 10, events_of(w, EventKind::kCompile)}};
  };
  return s;
}

// cudagraph_skip_dynamic_graphs: a graph with symint inputs skips (S5)
// without partitions; from 2.10 with partitions its dynamic-shape ops are
// cut out and the rest is cudagraphed.
ProgramScenario skip_dynamic_graphs() {
  ProgramScenario s;
  s.name = "skip_dynamic_graphs";
  s.mirrors = "test_cudagraph_trees.py::test_skip_symbolic";
  s.description = "skip_dynamic_graphs: S5 without partitions, a cut with them (2.10 on)";
  s.options.config.cudagraph_skip_dynamic_graphs = true;
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    const ValueIndex a = f.add(x, x);
    FunctionDef def = f.returns({f.mul(a, x)});
    def.partition_cuts = {{1, 2, PartitionCutReason::kDynamicShape}};
    p.function(std::move(def));
  }
  p.add(tensor("x", {2}, 1.0f));
  for (int i = 0; i < 3; ++i) p.add(with_key(call("f", {"x"}, {""}), {2}));
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"S5 skips", 1, decisions_made(w, Decision::kSkipDynamicShapes)},
        {"graphs recorded", 0, graphs(w)}};
  };
  return s;
}

// cudagraph_dynamic_shape_rerecord_limit=2 (2.15): the third key runs
// eagerly, with W3 once; the first two keep replaying.
ProgramScenario dynamic_shape_rerecord_limit() {
  ProgramScenario s;
  s.name = "dynamic_shape_rerecord_limit";
  s.mirrors = "cudagraph_trees.py::cudagraphify_impl (2.15.0; no PyTorch test found)";
  s.description = "limit 2: the third int key runs eagerly (W3), the first two replay";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.config.cudagraph_dynamic_shape_rerecord_limit = 2;
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"x"});
    p.function(f.returns({f.add(f.input(0), f.input(0))}));
  }
  p.add(tensor("x", {2}, 1.0f));
  for (int i = 0; i < 3; ++i) {
    for (std::int64_t k = 1; k <= 3; ++k) p.add(with_key(call("f", {"x"}, {""}), {k}));
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"tree functions", 2, events_of(w, EventKind::kCompile)},
        {"W3 warnings", 1, decisions_made(w, Decision::kWarnDynamicShapeLimit)},
        {"key 3 eager", 3, decisions_made(w, Decision::kEagerDynamicShapeLimit)}};
  };
  return s;
}

// cudagraph_or_error (2.9 on): x.add_(1) on a non-static input is the
// mutation gate's skip (S1), which now raises RuntimeError (E8) at the first
// call; the skip is remembered, so later calls run eagerly, silently.
ProgramScenario cudagraph_or_error() {
  ProgramScenario s;
  s.name = "cudagraph_or_error";
  s.mirrors = "test_cudagraph_trees.py::test_cudagraph_or_error";
  s.description = "cudagraph_or_error: the mutated-input skip raises RuntimeError (E8) once";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.config.cudagraph_or_error = true;
  ProgramWriter p(s);
  {
    FunctionBuilder f("f", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    p.function(f.returns({f.add_(x, f.full({4}, 1.0f))}));
  }
  p.add(tensor("x", {4}, 1.0f));
  for (int i = 0; i < 3; ++i) p.add(call("f", {"x"}, {""}));
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"E8 errors", 1, decisions_made(w, Decision::kErrorSkipRaised)},
        {"S1 skips logged", 1, decisions_made(w, Decision::kSkipMutatedInputs)},
        {"eager runs after it", 2, decisions_made(w, Decision::kEagerMutatedInputs)}};
  };
  return s;
}

// The caching allocator off (2.13 on): S6, the graph runs eagerly.
ProgramScenario uncached_allocator_skip() {
  ProgramScenario s;
  s.name = "uncached_allocator_skip";
  s.mirrors = "cudagraph_utils.py::check_caching_allocator_for_cudagraphs (2.13)";
  s.description = "caching allocator off: cudagraphs skipped (S6)";
  s.options.config.torch_profile = TorchProfile::k2_15;
  s.options.config.caching_allocator_enabled = false;
  ProgramWriter p(s);
  p.function(cube("f", kInference));
  three_calls(p);
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"S6 skips", 1, decisions_made(w, Decision::kSkipUncachedAllocator)},
        {"graphs recorded", 0, graphs(w)}};
  };
  return s;
}

void add_partition_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(graph_partition_cpu_op());
  out.push_back(cpu_device_skip());
  out.push_back(cudagraph_unsafe_op_partitions());
  out.push_back(min_partition_size());
  out.push_back(capture_sizes());
  out.push_back(dynamic_shape_warning());
  out.push_back(skip_dynamic_graphs());
  out.push_back(dynamic_shape_rerecord_limit());
  out.push_back(cudagraph_or_error());
  out.push_back(uncached_allocator_skip());
}

}  // namespace capsim
