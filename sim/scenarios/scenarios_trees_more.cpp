// Built-in scenarios, part 2: outputs and aliasing, forward/backward and the
// pending-backward rule, overwritten outputs (E1), static pointers that change
// (re-record, E4, E5), the mutation gate (S1) and the plain API.
#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

std::int64_t path_live_weakrefs(const World& w) {
  return w.manager() ? static_cast<std::int64_t>(w.manager()->path_live_weakrefs().size()) : -1;
}

ProgramScenario alias_of_parameter() {
  ProgramScenario s;
  s.name = "alias_of_parameter";
  s.mirrors = "test_cudagraph_trees.py::test_alias_of_parameter";
  s.description = "outputs aliasing a parameter are static: untracked, never freed";
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo", kInference, {"primals_1", "primals_2"});
    f.params({0});
    const ValueIndex param = f.input(0);
    p.function(f.returns({f.slice(param, 0, 1), f.alias(param), f.add(param, f.input(1))}));
  }
  p.add(param("param", {10}));
  for (int i = 0; i < 3; ++i) {
    p.add(tensor("inp", {10}));
    p.add(call("foo", {"param", "inp"}, {"out0", "out1", "out2"}));
  }
  p.add(Read{"out1"});
  p.probe(path_live_weakrefs);
  p.probe([](const World& w) {
    return static_cast<std::int64_t>(w.data_ptr("out1").value() == w.data_ptr("param").value());
  });
  s.expect = [](const World& w, const std::vector<std::int64_t>& probe) {
    std::int64_t static_outputs = -1;
    if (w.manager() && !w.manager()->graphs().empty()) {
      const auto& outs = w.manager()->graphs()[0].outputs;
      static_outputs = std::count_if(outs.begin(), outs.end(), [](const OutputInfo& o) {
        return o.cls == OutputClass::kStatic;
      });
    }
    return std::vector<Expectation>{{"path live weakrefs", 1, probe[0]},
                                    {"out1 is the param's memory", 1, probe[1]},
                                    {"static outputs", 2, static_outputs}};
  };
  return s;
}

ProgramScenario empty_storage() {
  ProgramScenario s;
  s.name = "empty_storage";
  s.mirrors = "test_cudagraph_trees.py::test_empty_storage";
  s.description = "a zero-size output has data_ptr 0 and is a static, untracked output";
  ProgramWriter p(s);
  {
    FunctionBuilder f("foo", kInference, {"primals_1"});
    const ValueIndex x = f.input(0);
    p.function(f.returns({f.add(f.add(x, x), x), f.full({0}, 0.0f)}));
  }
  p.add(tensor("inp", {4}));
  for (int i = 0; i < 3; ++i) {
    p.add(call("foo", {"inp"}, {"out", "empty"}));
    p.probe(path_live_weakrefs);
  }
  s.expect = [](const World&, const std::vector<std::int64_t>& probe) {
    std::vector<Expectation> e;
    for (std::int64_t v : probe) e.push_back({"path live weakrefs after a call", 1, v});
    return e;
  };
  return s;
}

// The forward saves two tensors for its backward; the backward consumes them.
void add_forward_backward(ProgramWriter& p, Dims sizes) {
  {
    FunctionBuilder f("fwd", kForward, {"primals_1"});
    const ValueIndex x = f.input(0);
    const ValueIndex a = f.add(x, x);
    const ValueIndex b = f.relu(x);
    p.function(f.returns({f.mul(a, b), a, b}));
  }
  {
    FunctionBuilder f("bwd", kBackward, {"add", "relu", "tangents_1"});
    f.static_inputs({0, 1});  // count_tangents: the saved tensors
    const ValueIndex t = f.input(2);
    p.function(f.returns({f.add(f.mul(t, f.input(0)), f.mul(t, f.input(1)))}));
  }
  (void)sizes;
}

ProgramScenario forward_backward() {
  ProgramScenario s;
  s.name = "forward_backward";
  s.mirrors = "test_cudagraph_trees.py::test_forward_backward";
  s.description = "the backward is the forward's child; its saved inputs die during the graph";
  s.options.config.skip_cudagraph_warmup = true;
  ProgramWriter p(s);
  add_forward_backward(p, {4, 4});
  p.add(tensor("inp", {4, 4}));
  p.add(call("fwd", {"inp"}, {"out", "saved_a", "saved_b"}));
  p.add(tensor("grad_out", {4, 4}, 1.0f));
  p.add(consuming(call("bwd", {"saved_a", "saved_b", "grad_out"}, {"grad_inp"}),
                  {"saved_a", "saved_b"}));
  s.expect = [](const World& w, const auto&) {
    auto e = root_children_are(w, {1});
    const TreeManager* m = w.manager();
    const GraphNode* bwd = m && m->graphs().size() > 1 ? &m->graphs()[1] : nullptr;
    const std::vector<PathIndex> want{{0, 1}, {0, 2}};
    e.push_back(
        {"expected_dead_indices_before_graph", 0,
         bwd ? static_cast<std::int64_t>(bwd->expected_dead_indices_before_graph.size()) : -1});
    e.push_back({"expected_dead_indices_after_graph == [(0,1),(0,2)]", 1,
                 bwd && bwd->expected_dead_indices_after_graph == want});
    return e;
  };
  return s;
}

ProgramScenario forward_backward_not_called() {
  ProgramScenario s;
  s.name = "forward_backward_not_called";
  s.mirrors = "test_cudagraph_trees.py::test_forward_backward_not_called";
  s.description = "a backward that never runs does not block: 3 graphs, no pending forward";
  ProgramWriter p(s);
  add_forward_backward(p, {20, 20});
  {
    FunctionBuilder f("fwd_y", kForward, {"primals_1"});
    const ValueIndex y = f.input(0);
    p.function(f.returns({f.mul(f.mul(y, y), y), f.alias(y)}));
  }
  for (int i = 0; i < 3; ++i) {
    p.add(tensor("x", {20, 20}));
    p.add(tensor("y", {20, 20}));
    p.add(call("fwd", {"x"}, {"x_out", "saved_a", "saved_b"}));
    p.add(call_same("fwd_y", {"y"}, {"y_out", "y_saved"}));
    p.add(tensor("grad_out", {20, 20}, 1.0f));
    p.add(consuming(call("bwd", {"saved_a", "saved_b", "grad_out"}, {""}), {"saved_a", "saved_b"}));
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded", 3, graphs(w)},
        {"running_forwards_with_pending_backwards", 0, pending_backward(w)}};
  };
  return s;
}

ProgramScenario forward_with_skipped_cudagraphed_backward() {
  ProgramScenario s;
  s.name = "forward_with_skipped_cudagraphed_backward";
  s.mirrors = "test_cudagraph_trees.py::test_forward_with_skipped_cudagraphed_backward";
  s.description = "an eager backward still clears the pending flag: the forward records once";
  ProgramWriter p(s);
  p.function(cube("foo", kForward));
  {
    FunctionBuilder f("foo_backward_eager", kBackward, {"primals_1", "tangents_1"});
    p.function(f.returns({f.mul(f.input(0), f.input(1))}));
  }
  for (int i = 0; i < 3; ++i) {
    p.add(tensor("inp", {20, 20}));
    p.add(call("foo", {"inp"}, {"out"}));
    p.add(tensor("grad_out", {20, 20}, 1.0f));
    p.add(eager("foo_backward_eager", {"inp", "grad_out"}, {""}));
    p.add(SetToRunningBackward{});
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded", 1, graphs(w)},
        {"running_forwards_with_pending_backwards", 0, pending_backward(w)}};
  };
  return s;
}

ProgramScenario warn_on_pending_backward() {
  ProgramScenario s;
  s.name = "warn_on_pending_backward";
  s.mirrors = "test_cudagraph_trees.py::test_warn_on_pending_backward";
  s.description = "forwards whose backward never runs keep the tree warming up: W1, no graph";
  ProgramWriter p(s);
  p.function(cube("foo", kForward));
  for (int i = 0; i < 3; ++i) {
    p.add(tensor("inp", {4}));
    p.add(call("foo", {"inp"}, {"out"}));
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"graphs recorded", 0, graphs(w)},
        {"W1 warnings", 1, decisions_made(w, Decision::kWarnPendingBackward)}};
  };
  return s;
}

ProgramScenario mark_step() {
  ProgramScenario s;
  s.name = "mark_step";
  s.mirrors = "test_cudagraph_trees.py::test_mark_step";
  s.description = "cudagraph_mark_step_begin starts a generation despite a pending backward";
  ProgramWriter p(s);
  p.function(cube("foo", kForward));
  for (int i = 0; i < 2; ++i) {
    p.add(MarkStepBegin{});
    p.add(tensor("inp", {4}));
    p.add(call("foo", {"inp"}, {"out"}));
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{{"graphs recorded", 1, graphs(w)}};
  };
  return s;
}

ProgramScenario error_on_dealloc_use() {
  ProgramScenario s;
  s.name = "error_on_dealloc_use";
  s.mirrors = "test_cudagraph_trees.py::test_error_on_dealloc_use";
  s.description = "an output kept across a generation boundary raises E1 when used";
  ProgramWriter p(s);
  p.function(cube("foo", kInference));
  p.add(tensor("inp", {4}));
  p.add(call("foo", {"inp"}, {"out"}));
  p.add(call("foo", {"inp"}, {"out2"}));
  p.add(Read{"out"});
  p.add(call("foo", {"inp"}, {""}));
  p.add(Read{"out2"});
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"E1 errors", 2, decisions_made(w, Decision::kErrorOverwrittenOutput)},
        {"graphs recorded", 1, graphs(w)}};
  };
  return s;
}

// A linear layer whose weight and bias are module parameters (lifted graph
// attributes: static), plus an optional buffer.
FunctionDef linear(const std::string& name, bool with_buffer) {
  std::vector<std::string> inputs{"primals_1", "primals_2", "primals_3"};
  if (with_buffer) inputs.push_back("primals_4");
  FunctionBuilder f(name, kInference, inputs);
  f.params(with_buffer ? std::vector<std::uint32_t>{0, 1, 2} : std::vector<std::uint32_t>{0, 1});
  const ValueIndex x = f.input(with_buffer ? 3 : 2);
  ValueIndex y = f.add(f.mm(x, f.input(0)), f.input(1));
  if (with_buffer) y = f.add(y, f.input(2));
  return f.returns({y});
}

ProgramScenario unstable_ptr() {
  ProgramScenario s;
  s.name = "unstable_ptr";
  s.mirrors = "test_cudagraph_trees.py::test_unstable_ptr";
  s.description = "error mode: a weight whose .data is reassigned raises E4 at replay";
  s.options.config.inline_inbuilt_nn_modules = false;
  s.options.config.cudagraph_support_input_mutation = false;
  ProgramWriter p(s);
  p.function(linear("foo", false));
  p.add(param("weight", {4, 4}));
  p.add(param("bias", {2, 4}));
  for (int i = 0; i < 3; ++i) {
    p.add(tensor("inp", {2, 4}));
    p.add(call("foo", {"weight", "bias", "inp"}, {""}));
    p.add(reassign("weight"));
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"E4 errors", 1, decisions_made(w, Decision::kErrorStaticInputMoved)},
        {"graphs recorded", 1, graphs(w)}};
  };
  return s;
}

ProgramScenario rerecord_if_static_input_address_changed() {
  ProgramScenario s;
  s.name = "rerecord_if_static_input_address_changed";
  s.mirrors = "test_cudagraph_trees.py::test_rerecord_if_static_input_address_changed";
  s.description = "re-record mode: a new bias and buffer give a second recording, no error";
  ProgramWriter p(s);
  p.function(linear("foo", true));
  p.add(param("weight", {2, 2}));
  p.add(param("bias", {1, 2}));
  p.add(tensor("static_tensor", {1, 2}, 0.0f));
  for (int i = 0; i < 6; ++i) {
    if (i == 3) {
      p.add(reassign("static_tensor", 1.0f));
      p.add(reassign("bias", 1.0f));
    }
    p.add(tensor("inp", {1, 2}));
    p.add(call("foo", {"weight", "bias", "static_tensor", "inp"}, {""}));
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{{"graphs recorded", 2, graphs(w)},
                                    {"errors", 0, static_cast<std::int64_t>(w.counters().errors)}};
  };
  return s;
}

// check_refcount and a pending backward's saved tensor (2.15 against 2.14).
// Two forwards run before their backwards, each dropping its user-visible
// output, as gradient accumulation over two micro-batches does when it sums
// the losses later. Once the forward replays, its saved activation is a
// cached tensor that only the backward's SavedVariable holds. Up to 2.14
// that counts as dead, so the path ends, the second forward replays at the
// root and overwrites the first one's activation, and the first backward
// reads it: grad = 2 * x2 = 6 instead of 2 * x1 = 2, silently (with
// slow_path_cudagraph_asserts, PyTorch's default False; with it on,
// check_memory_pool raises E6 at the checkpoint before the first backward's
// recording, whose saved tensor the checkpoint has free). 2.15 counts it as
// live and records the second forward as a child.
ProgramScenario saved_tensor_of_pending_backward(TorchProfile profile) {
  ProgramScenario s;
  const bool live = profile_rules(profile).saved_tensor_keeps_output_live;
  s.name = live ? "saved_tensor_keeps_path_live" : "saved_tensor_overwritten_2_14";
  s.mirrors = "cudagraph_trees.py::CUDAGraphNode._initialize_cached_tensors (check_refcount)";
  s.description = live ? "a pending backward's saved tensor keeps its path live (2.15)"
                       : "up to 2.14 a saved tensor alone is dead: the next forward overwrites it";
  s.options.config.torch_profile = profile;
  s.options.config.slow_path_cudagraph_asserts = false;
  ProgramWriter p(s);
  {
    FunctionBuilder f("fwd", kForward, {"primals_1"});
    const ValueIndex x = f.input(0);
    const ValueIndex a = f.add(x, x);
    FunctionDef def = f.returns({f.mul(a, x), a});
    def.user_visible_outputs = std::vector<std::uint32_t>{0};
    p.function(std::move(def));
  }
  {
    FunctionBuilder f("bwd", kBackward, {"add", "tangents_1"});
    f.static_inputs({0});
    p.function(f.returns({f.mul(f.input(1), f.input(0))}));
  }
  p.add(tensor("g", {4}, 1.0f));
  const auto forward = [&p](const std::string& x, float fill, const std::string& saved) {
    p.add(tensor(x, {4}, fill));
    p.add(call("fwd", {x}, {"out", saved}));
    p.add(Del{"out"});
  };
  for (int i = 0; i < 3; ++i) {  // warm up, record, replay
    forward("x", 1.0f, "saved");
    p.add(consuming(call("bwd", {"saved", "g"}, {"grad"}), {"saved"}));
  }
  forward("x1", 1.0f, "saved1");
  forward("x2", 3.0f, "saved2");
  p.add(consuming(call("bwd", {"saved2", "g"}, {"grad2"}), {"saved2"}));
  p.add(consuming(call("bwd", {"saved1", "g"}, {"grad1"}), {"saved1"}));
  p.add(Read{"grad1"});
  p.probe([](const World& w) -> std::int64_t {
    const auto v = w.values("grad1");
    return v.ok() && !v->empty() ? static_cast<std::int64_t>((*v)[0]) : -1;
  });
  s.expect = [live](const World& w, const std::vector<std::int64_t>& probes) {
    return std::vector<Expectation>{
        {live ? "grad1[0] = 2 * x1" : "grad1[0] = 2 * x2, silently", live ? 2 : 6, probes.at(0)},
        {"errors", 0, static_cast<std::int64_t>(w.counters().errors)}};
  };
  return s;
}
}  // namespace

void add_more_tree_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(alias_of_parameter());
  out.push_back(empty_storage());
  out.push_back(forward_backward());
  out.push_back(forward_backward_not_called());
  out.push_back(forward_with_skipped_cudagraphed_backward());
  out.push_back(warn_on_pending_backward());
  out.push_back(mark_step());
  out.push_back(error_on_dealloc_use());
  out.push_back(unstable_ptr());
  out.push_back(rerecord_if_static_input_address_changed());
  out.push_back(saved_tensor_of_pending_backward(TorchProfile::k2_14));
  out.push_back(saved_tensor_of_pending_backward(TorchProfile::k2_15));
}

}  // namespace capsim
