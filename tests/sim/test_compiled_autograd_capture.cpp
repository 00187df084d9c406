// Compiled autograd's initial capture (docs/compiled-autograd.md, "Phase B"):
// the functional capture reads no proxy metadata (I-1) and its graph does not
// depend on it (I-2), while the legacy capture reads it and bakes decisions
// in; fan-in (I-5), per-node emission (I-6), AOT outputs and make_subclass
// (I-10), the accumulate_grad reordering (I-11) and CppNode binding (I-16).
#include <doctest/doctest.h>

#include <algorithm>

#include "model/caching_allocator.hpp"
#include "model/device_memory.hpp"
#include "sim/compiled_autograd/capture.hpp"

namespace capsim {
namespace {

InputMetadata grad_meta(Dims sizes) {
  return InputMetadata{contiguous_meta(sizes).value()};
}

AutogradNode node(AutogradNodeKind kind, std::string name, std::size_t inputs,
                  std::uint32_t outputs) {
  AutogradNode n;
  n.kind = kind;
  n.name = std::move(name);
  n.inputs.assign(inputs, grad_meta({4}));
  n.num_outputs = outputs;
  return n;
}

struct Fixture {
  DeviceMemory memory;
  CachingAllocator allocator{memory};
  TensorStore store{allocator};
  AutogradGraph g;
  AutogradNodeId root = 0;
  TensorId make() { return store.empty({4}).value().id; }
  AutogradNodeId add(AutogradNode n) { return g.add_node(std::move(n)).value(); }
  void edge(AutogradNodeId a, std::uint32_t out, AutogradNodeId b, std::uint32_t in) {
    REQUIRE(g.add_edge(a, out, b, in).ok());
  }
  CaptureResult capture(CaptureMode mode, ProxyPerturbation perturb = {}) {
    const CollectedBackward c = collect_backward(g, root, store).value();
    auto r = capture_backward(g, c, CaptureOptions{mode, perturb});
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    return std::move(r).value();
  }
};

// root -> {Mul, Neg} -> Add (fan-in) -> AccumulateGrad(w)
void make_diamond(Fixture& f) {
  f.root = f.add(node(AutogradNodeKind::kGraphRoot, "GraphRoot", 0, 2));
  AutogradNode mul = node(AutogradNodeKind::kFunctional, "MulBackward0", 1, 1);
  mul.saved_tensors = {f.make()};
  const auto a = f.add(mul);
  const auto b = f.add(node(AutogradNodeKind::kFunctional, "NegBackward0", 1, 1));
  const auto c = f.add(node(AutogradNodeKind::kFunctional, "AddBackward0", 1, 1));
  AutogradNode acc = node(AutogradNodeKind::kAccumulateGrad, "AccumulateGrad", 1, 0);
  acc.variable = f.make();
  const auto w = f.add(acc);
  f.edge(f.root, 0, a, 0);
  f.edge(f.root, 1, b, 0);
  f.edge(a, 0, c, 0);
  f.edge(b, 0, c, 0);
  f.edge(c, 0, w, 0);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_CASE("compiled autograd capture: functional proxies every node and reads nothing (I-1)") {
  Fixture f;
  make_diamond(f);
  const CaptureResult r = f.capture(CaptureMode::kFunctional);
  CHECK(r.reads.empty());
  const std::string text = r.graph.to_text();
  CHECK(contains(text, "call_function[target=ops.MulBackward0]"));
  CHECK(contains(text, "call_function[target=validate_outputs]"));
  CHECK(contains(text, "call_function[target=torch.add]"));  // the fan-in (I-5)
  CHECK(contains(text, "torch.ops.inductor.accumulate_grad_.default"));
  CHECK(contains(text, "_exec_final_callbacks_stub"));
  CHECK(f.capture(CaptureMode::kFunctional).graph.to_text() == text);  // deterministic
}

TEST_CASE("compiled autograd capture: legacy reads metadata and bakes in add_ (the control)") {
  Fixture f;
  make_diamond(f);
  const CaptureResult r = f.capture(CaptureMode::kLegacy);
  CHECK_FALSE(r.reads.empty());
  CHECK(contains(r.graph.to_text(), "torch.ops.aten.add_.Tensor"));
  for (const MetadataRead& read : r.reads) CHECK(read.mode == CaptureMode::kLegacy);
}

TEST_CASE(
    "compiled autograd capture: perturbed proxy metadata changes legacy, not functional (I-2)") {
  Fixture f;
  make_diamond(f);
  const std::string functional = f.capture(CaptureMode::kFunctional).graph.to_text();
  const std::string legacy = f.capture(CaptureMode::kLegacy).graph.to_text();
  bool legacy_changed = false;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    const ProxyPerturbation p{true, seed};
    CHECK(f.capture(CaptureMode::kFunctional, p).graph.to_text() == functional);
    const CollectedBackward c = collect_backward(f.g, f.root, f.store).value();
    auto perturbed = capture_backward(f.g, c, CaptureOptions{CaptureMode::kLegacy, p});
    legacy_changed = legacy_changed || !perturbed.ok() || perturbed->graph.to_text() != legacy;
  }
  CHECK(legacy_changed);
}

TEST_CASE(
    "compiled autograd capture: CppNode ops are bound per capture; legacy rejects non-traceable") {
  Fixture f;
  f.root = f.add(node(AutogradNodeKind::kGraphRoot, "GraphRoot", 0, 1));
  AutogradNode fn = node(AutogradNodeKind::kCppNode, "CppNode<MyFn>", 1, 1);
  fn.traceable = false;
  const auto n = f.add(fn);
  AutogradNode acc = node(AutogradNodeKind::kAccumulateGrad, "AccumulateGrad", 1, 0);
  acc.variable = f.make();
  const auto w = f.add(acc);
  f.edge(f.root, 0, n, 0);
  f.edge(n, 0, w, 0);
  CHECK(contains(f.capture(CaptureMode::kFunctional).graph.to_text(), "ops.CppNode<MyFn>0"));
  const CollectedBackward c = collect_backward(f.g, f.root, f.store).value();
  auto legacy = capture_backward(f.g, c, CaptureOptions{CaptureMode::kLegacy, {}});
  REQUIRE_FALSE(legacy.ok());
  CHECK(legacy.error().message ==
        "node 1 (CppNode<MyFn>): compiled_args not implemented for non-traceable node: "
        "CppNode<MyFn>");
}

TEST_CASE("compiled autograd capture: CopySlices is prologue, inner op, epilogue") {
  Fixture f;
  f.root = f.add(node(AutogradNodeKind::kGraphRoot, "GraphRoot", 0, 1));
  AutogradNode cs = node(AutogradNodeKind::kCopySlices, "CopySlices", 1, 1);
  cs.inner_name = "MulBackward0";
  cs.base = {{4}, {1}, 0};
  cs.view = {{2}, {1}, 1};
  const auto s = f.add(cs);
  AutogradNode acc = node(AutogradNodeKind::kAccumulateGrad, "AccumulateGrad", 1, 0);
  acc.variable = f.make();
  const auto w = f.add(acc);
  f.edge(f.root, 0, s, 0);
  f.edge(s, 0, w, 0);
  const CaptureResult r = f.capture(CaptureMode::kFunctional);
  CHECK(r.reads.empty());
  const std::string text = r.graph.to_text();
  const auto pro = text.find("copy_slices_prologue");
  const auto inner = text.find("ops.MulBackward0");
  const auto epi = text.find("copy_slices_epilogue");
  REQUIRE(pro != std::string::npos);
  CHECK(pro < inner);
  CHECK(inner < epi);
  CHECK_FALSE(f.capture(CaptureMode::kLegacy).reads.empty());
}

TEST_CASE(
    "compiled autograd capture: an AOT backward has no validate_outputs; subclasses rebuilt") {
  Fixture f;
  f.root = f.add(node(AutogradNodeKind::kGraphRoot, "GraphRoot", 0, 1));
  AutogradNode aot = node(AutogradNodeKind::kAotBackward, "CompiledFunctionBackward", 1, 1);
  aot.subclass_outputs = 1;
  aot.saved_sizes = {4};
  aot.saved_tensors = {f.make(), f.make()};  // compiled_mul's a and b
  const auto a = f.add(aot);
  AutogradNode acc = node(AutogradNodeKind::kAccumulateGrad, "AccumulateGrad", 1, 0);
  acc.variable = f.make();
  const auto w = f.add(acc);
  f.edge(f.root, 0, a, 0);
  f.edge(a, 0, w, 0);
  const CaptureResult r = f.capture(CaptureMode::kFunctional);
  const std::string text = r.graph.to_text();
  CHECK(contains(text, "call_aot_bwd_prologue"));
  CHECK(contains(text, "make_subclass"));
  // Only the GraphRoot's outputs are validated: none after the AOT backward.
  CHECK(text.find("validate_outputs", text.find("call_aot_bwd_prologue")) == std::string::npos);
  CHECK(contains(
      text,
      "%getitem = call_function[target=operator.getitem](%sizes, 0)"));  // AOT symints are dynamic
}

TEST_CASE("compiled autograd capture: accumulate_grad_ follows its grad's producer (I-11)") {
  Fixture f;
  make_diamond(f);
  const CaptureResult r = f.capture(CaptureMode::kFunctional);
  const FxNodeRange nodes = r.graph.nodes();
  for (FxNodeId i = 0; i < nodes.size(); ++i) {
    if (nodes[i].target != "torch.ops.inductor.accumulate_grad_.default") continue;
    const auto uses = r.graph.uses(i);
    REQUIRE_FALSE(uses.empty());
    CHECK(*std::max_element(uses.begin(), uses.end()) == i - 1);
  }
}

TEST_CASE("compiled autograd capture: arity of proxied ops (I-4) and emission order (I-6)") {
  Fixture f;
  f.root = f.add(node(AutogradNodeKind::kGraphRoot, "GraphRoot", 0, 1));
  AutogradNode mul = node(AutogradNodeKind::kFunctional, "MulBackward0", 1, 2);
  mul.hooks = {AutogradHookKind::kPre, AutogradHookKind::kPost};
  const auto m = f.add(mul);
  AutogradNode acc = node(AutogradNodeKind::kAccumulateGrad, "AccumulateGrad", 1, 0);
  acc.variable = f.make();
  const auto w = f.add(acc);
  f.edge(f.root, 0, m, 0);
  f.edge(m, 1, w, 0);  // output 0 stays an invalid edge
  const CaptureResult r = f.capture(CaptureMode::kFunctional);
  const FxNodeRange nodes = r.graph.nodes();
  std::vector<std::string> order;
  for (const FxNodeView n : nodes) {
    if (n.target == "call_hook" || n.target == "ops.MulBackward0" ||
        n.target == "validate_outputs") {
      order.emplace_back(n.target);
    }
  }
  // The root's validate_outputs (PyTorch 2.11), pre-hook, the op,
  // validate_outputs, post-hook.
  CHECK(order == std::vector<std::string>{"validate_outputs", "call_hook", "ops.MulBackward0",
                                          "validate_outputs", "call_hook"});
  // needs_input_grad has one entry per next edge, invalid ones included.
  for (const FxNodeView n : nodes) {
    if (n.target != "ops.MulBackward0") continue;
    REQUIRE(n.args.size() >= 2);
    CHECK(n.args[1].items().size() == 2);
    CHECK_FALSE(n.args[1].items()[0].b);
    CHECK(n.args[1].items()[1].b);
  }
}

TEST_CASE("compiled autograd capture: CppNode ops get a fresh counter per name (I-16)") {
  Fixture f;
  f.root = f.add(node(AutogradNodeKind::kGraphRoot, "GraphRoot", 0, 2));
  AutogradNode acc = node(AutogradNodeKind::kAccumulateGrad, "AccumulateGrad", 1, 0);
  acc.variable = f.make();
  const auto w = f.add(acc);
  for (std::uint32_t i = 0; i < 2; ++i) {
    const auto n = f.add(node(AutogradNodeKind::kCppNode, "CppNode<MyFn>", 1, 1));
    f.edge(f.root, i, n, 0);
    f.edge(n, 0, w, 0);
  }
  const std::string text = f.capture(CaptureMode::kFunctional).graph.to_text();
  CHECK(text.find("ops.CppNode<MyFn>0") != std::string::npos);
  CHECK(text.find("ops.CppNode<MyFn>1") != std::string::npos);
  // A new capture starts counting again: the ops are re-bound per capture.
  CHECK(f.capture(CaptureMode::kFunctional).graph.to_text() == text);
}

TEST_CASE("compiled autograd capture: static sizes are literals, dynamic ones sizes[i] (I-8)") {
  Fixture f;
  f.root = f.add(node(AutogradNodeKind::kGraphRoot, "GraphRoot", 0, 1));
  AutogradNode sum = node(AutogradNodeKind::kFunctional, "SumBackward0", 1, 1);
  sum.saved_sizes = {4};
  const auto s = f.add(sum);
  AutogradNode acc = node(AutogradNodeKind::kAccumulateGrad, "AccumulateGrad", 1, 0);
  acc.variable = f.make();
  const auto w = f.add(acc);
  f.edge(f.root, 0, s, 0);
  f.edge(s, 0, w, 0);
  const CollectedBackward stat = collect_backward(f.g, f.root, f.store).value();
  const std::string literal = capture_backward(f.g, stat, {}).value().graph.to_text();
  CHECK(literal.find("ops.SumBackward0]([%getitem_1], [True], 4)") != std::string::npos);
  CollectOptions dyn;
  dyn.dynamic = true;
  const CollectedBackward dynamic = collect_backward(f.g, f.root, f.store, dyn).value();
  const std::string symbolic = capture_backward(f.g, dynamic, {}).value().graph.to_text();
  CHECK(symbolic.find("(%sizes, 0)") != std::string::npos);
  CHECK(symbolic.find("ops.SumBackward0]([%getitem_") != std::string::npos);
}

}  // namespace
}  // namespace capsim

// The two halves joined: graphs the eager engine records, captured.
#include "sim/autograd/autograd_engine.hpp"

namespace capsim {
namespace {

TEST_CASE("compiled autograd capture: engine graphs (mm, relu, fan-in, CopySlices) read nothing") {
  OwnedAutogradDevice dev;
  AutogradEngine engine(dev.device());
  const std::vector<float> v4{1, 2, 3, 4};
  const Variable w = engine.leaf({2, 2}, v4).value();
  const Variable x = engine.constant({2, 2}, v4).value();
  const Variable h = engine.relu(engine.mm(x, w).value()).value();
  const Variable y = engine.add(engine.mul(h, h).value(), h).value();  // fan-in into h
  Variable base = engine.clone(y).value();
  const Variable part = engine.slice(base, 0, 1).value();
  (void)engine.mul_(part, engine.constant({1, 2}, std::vector<float>{2, 2}).value()).value();
  base = engine.variable(base.tensor).value();
  const Variable loss = engine.sum(base).value();
  const auto bg = engine.backward_graph(loss).value();
  const CollectedBackward c = collect_backward(bg.graph, bg.root, dev.store).value();
  const auto functional = capture_backward(bg.graph, c, {CaptureMode::kFunctional, {}}).value();
  CHECK(functional.reads.empty());
  const std::string text = functional.graph.to_text();
  CHECK(text.find("ops.MmBackward0") != std::string::npos);
  CHECK(text.find("copy_slices_prologue") != std::string::npos);
  CHECK(text.find("torch.add") != std::string::npos);
  const auto legacy = capture_backward(bg.graph, c, {CaptureMode::kLegacy, {}}).value();
  CHECK_FALSE(legacy.reads.empty());
  CHECK(legacy.graph.to_text() != text);
}

}  // namespace
}  // namespace capsim
