// Compiled autograd's Phase A and cache (docs/compiled-autograd.md,
// "Phase A"): the LIFO order of ordered_calls (I-7), key completeness and
// soundness (I-12), size slots that go STATIC -> DYNAMIC once (I-13), input
// deduplication (I-14) and the structural rejects that happen before any
// capture (I-15).
#include <doctest/doctest.h>

#include "model/caching_allocator.hpp"
#include "model/device_memory.hpp"
#include "sim/compiled_autograd/collect.hpp"

namespace capsim {
namespace {

InputMetadata grad_meta(Dims sizes, DType dtype = DType::kFloat32) {
  InputMetadata m{contiguous_meta(sizes, dtype).value()};
  return m;
}

AutogradNode node(AutogradNodeKind kind, std::string name, std::vector<InputMetadata> inputs,
                  std::uint32_t outputs) {
  AutogradNode n;
  n.kind = kind;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.num_outputs = outputs;
  return n;
}

// A world of tensors for saved values and leaves.
struct Tensors {
  DeviceMemory memory;
  CachingAllocator allocator{memory};
  TensorStore store{allocator};
  TensorId make(Dims sizes, DType dtype = DType::kFloat32, bool requires_grad = false) {
    Tensor t = store.empty(sizes).value();
    TensorMeta meta = t.meta;
    meta.dtype = dtype;
    meta.requires_grad = requires_grad;
    // Re-view with the wanted metadata (dtype and requires_grad are metadata only).
    return store.view(t.id, meta).value().id;
  }
};

// root -> {A, B}; A -> C; B -> C (a diamond); C -> AccumulateGrad(w).
struct Diamond {
  AutogradGraph g;
  AutogradNodeId root, a, b, c, acc;
  explicit Diamond(Tensors& t, Dims sizes = {4}, DType dtype = DType::kFloat32) {
    root = g.add_node(node(AutogradNodeKind::kGraphRoot, "GraphRoot", {}, 2)).value();
    AutogradNode na =
        node(AutogradNodeKind::kFunctional, "MulBackward0", {grad_meta(sizes, dtype)}, 1);
    na.saved_tensors = {t.make(sizes, dtype)};
    a = g.add_node(na).value();
    b = g.add_node(
             node(AutogradNodeKind::kFunctional, "NegBackward0", {grad_meta(sizes, dtype)}, 1))
            .value();
    c = g.add_node(
             node(AutogradNodeKind::kFunctional, "AddBackward0", {grad_meta(sizes, dtype)}, 1))
            .value();
    AutogradNode leaf = node(AutogradNodeKind::kAccumulateGrad, "", {grad_meta(sizes, dtype)}, 0);
    leaf.variable = t.make(sizes, dtype, true);
    acc = g.add_node(leaf).value();
    REQUIRE(g.add_edge(root, 0, a, 0).ok());
    REQUIRE(g.add_edge(root, 1, b, 0).ok());
    REQUIRE(g.add_edge(a, 0, c, 0).ok());
    REQUIRE(g.add_edge(b, 0, c, 0).ok());
    REQUIRE(g.add_edge(c, 0, acc, 0).ok());
  }
};

TEST_CASE("compiled autograd collect: ordered_calls is LIFO, ids are in lookup order (I-7)") {
  Tensors t;
  Diamond d(t);
  const CollectedBackward c = collect_backward(d.g, d.root, t.store).value();
  std::vector<AutogradNodeId> order;
  std::vector<std::uint32_t> ids;
  for (const NodeCall& call : c.ordered_calls) {
    order.push_back(call.node);
    ids.push_back(call.id);
  }
  // B was pushed last, so it is popped first; C waits for both producers.
  CHECK(order == std::vector<AutogradNodeId>{d.root, d.b, d.a, d.c, d.acc});
  CHECK(ids == std::vector<std::uint32_t>{0, 2, 1, 3, 4});
  // Determinism: the same graph twice gives the same keys.
  CHECK(collect_backward(d.g, d.root, t.store).value().keys == c.keys);
}

TEST_CASE("compiled autograd collect: equal keys and sizes hit; changed options miss (I-12)") {
  Tensors t;
  Diamond d1(t), d2(t);
  CompiledAutogradCache cache;
  CHECK_FALSE(cache.lookup(d1.g, collect_backward(d1.g, d1.root, t.store).value()).hit);
  // Another graph of the same structure, other tensors of the same kinds: a hit.
  CHECK(cache.lookup(d2.g, collect_backward(d2.g, d2.root, t.store).value()).hit);
  CHECK(cache.captures() == 1);
  CHECK(cache.hits() == 1);
  // A different dtype of the grads: new key bytes, a capture. The first key
  // to differ is the root's: its edges carry the InputMetadata options.
  Diamond half(t, {4}, DType::kFloat16);
  const CacheDecision miss =
      cache.lookup(half.g, collect_backward(half.g, half.root, t.store).value());
  CHECK_FALSE(miss.hit);
  CHECK(miss.reason.rfind("Cache miss due to new autograd node: GraphRoot (NodeCall 0)", 0) == 0);
  CHECK(cache.captures() == 2);
}

TEST_CASE("compiled autograd collect: dimension values are sizes, not key bytes (I-12, I-13)") {
  Tensors t;
  Diamond four(t, {4}), five(t, {5}), six(t, {6});
  const CollectedBackward c4 = collect_backward(four.g, four.root, t.store).value();
  const CollectedBackward c5 = collect_backward(five.g, five.root, t.store).value();
  CHECK(c4.keys == c5.keys);
  CompiledAutogradCache cache;
  CHECK_FALSE(cache.lookup(four.g, c4).hit);
  const CacheDecision recompile = cache.lookup(five.g, c5);
  CHECK_FALSE(recompile.hit);  // a STATIC slot changed: promoted, one recapture
  // PyTorch 2.7's text: how many slots changed, of how many dynamic ones,
  // each as its sizes[j].
  CHECK(recompile.reason.starts_with("Cache miss due to "));
  CHECK(recompile.reason.find(" changed tensor shapes (total of ") != std::string::npos);
  CHECK(recompile.reason.find("): sizes[0]") != std::string::npos);
  CHECK(cache.lookup(six.g, collect_backward(six.g, six.root, t.store).value()).hit);
  CHECK(cache.lookup(four.g, c4).hit);
  CHECK(cache.captures() == 2);
  // With dynamic=true no size ever recaptures.
  CompiledAutogradCache dynamic_cache;
  CollectOptions dyn;
  dyn.dynamic = true;
  CHECK_FALSE(
      dynamic_cache.lookup(four.g, collect_backward(four.g, four.root, t.store, dyn).value()).hit);
  CHECK(
      dynamic_cache.lookup(five.g, collect_backward(five.g, five.root, t.store, dyn).value()).hit);
  CHECK(dynamic_cache.captures() == 1);
}

TEST_CASE("compiled autograd collect: a tensor saved twice is lifted once (I-14)") {
  Tensors t;
  AutogradGraph g;
  const TensorId x = t.make({4});
  const auto root = g.add_node(node(AutogradNodeKind::kGraphRoot, "GraphRoot", {}, 1)).value();
  AutogradNode mul = node(AutogradNodeKind::kFunctional, "MulBackward0", {grad_meta({4})}, 0);
  mul.saved_tensors = {x, x};
  const auto m = g.add_node(mul).value();
  REQUIRE(g.add_edge(root, 0, m, 0).ok());
  CHECK(collect_backward(g, root, t.store).value().inputs == std::vector<TensorId>{x});
}

TEST_CASE("compiled autograd collect: view_fn and nested inputs are rejected in Phase A (I-15)") {
  Tensors t;
  AutogradGraph g;
  const auto root = g.add_node(node(AutogradNodeKind::kGraphRoot, "GraphRoot", {}, 1)).value();
  AutogradNode slices = node(AutogradNodeKind::kCopySlices, "CopySlices", {grad_meta({4})}, 0);
  slices.inner_name = "MulBackward0";
  slices.has_view_fn = true;
  const auto s = g.add_node(slices).value();
  REQUIRE(g.add_edge(root, 0, s, 0).ok());
  auto rejected = collect_backward(g, root, t.store);
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.error().message ==
        "node 1 (CopySlices): view_fn not supported by compiled autograd");

  AutogradGraph n;
  const auto r = n.add_node(node(AutogradNodeKind::kGraphRoot, "GraphRoot", {}, 1)).value();
  InputMetadata nested = grad_meta({4});
  nested.meta.layout = Layout::kJagged;
  const auto f =
      n.add_node(node(AutogradNodeKind::kFunctional, "MulBackward0", {nested}, 0)).value();
  REQUIRE(n.add_edge(r, 0, f, 0).ok());
  auto nested_error = collect_backward(n, r, t.store);
  REQUIRE_FALSE(nested_error.ok());
  CHECK(
      nested_error.error().message ==
      "node 0 (GraphRoot): edge to node 1 (MulBackward0): NestedTensor support not implemented. ");

  // A non-traceable CppNode is accepted after PR 144707.
  AutogradGraph cpp;
  const auto cr = cpp.add_node(node(AutogradNodeKind::kGraphRoot, "GraphRoot", {}, 1)).value();
  AutogradNode fn = node(AutogradNodeKind::kCppNode, "CppNode<MyFn>", {grad_meta({4})}, 0);
  fn.traceable = false;
  const auto cn = cpp.add_node(fn).value();
  REQUIRE(cpp.add_edge(cr, 0, cn, 0).ok());
  CHECK(collect_backward(cpp, cr, t.store).ok());
}

TEST_CASE("compiled autograd collect: PyNode and AOT symints are always dynamic (I-13)") {
  Tensors t;
  auto graph_with = [](std::int64_t symint) {
    AutogradGraph g;
    const auto root = g.add_node(node(AutogradNodeKind::kGraphRoot, "GraphRoot", {}, 1)).value();
    AutogradNode aot =
        node(AutogradNodeKind::kAotBackward, "CompiledFunctionBackward", {grad_meta({4})}, 0);
    aot.saved_sizes = {symint};
    const auto a = g.add_node(aot).value();
    REQUIRE(g.add_edge(root, 0, a, 0).ok());
    return g;
  };
  AutogradGraph g3 = graph_with(3), g7 = graph_with(7);
  CompiledAutogradCache cache;
  CHECK_FALSE(cache.lookup(g3, collect_backward(g3, 0, t.store).value()).hit);
  CHECK(cache.lookup(g7, collect_backward(g7, 0, t.store).value()).hit);
}

TEST_CASE("compiled autograd collect: a cyclic graph is an error, not a hang") {
  Tensors t;
  AutogradGraph g;
  const auto x =
      g.add_node(node(AutogradNodeKind::kFunctional, "MulBackward0", {grad_meta({4})}, 1)).value();
  const auto y =
      g.add_node(node(AutogradNodeKind::kFunctional, "AddBackward0", {grad_meta({4})}, 1)).value();
  REQUIRE(g.add_edge(x, 0, y, 0).ok());
  REQUIRE(g.add_edge(y, 0, x, 0).ok());
  auto r = collect_backward(g, x, t.store);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("cycle") != std::string::npos);
}

}  // namespace
}  // namespace capsim

namespace capsim {
TEST_CASE("compiled autograd collect: the changed-shapes text names each slot by its sizes[j]") {
  // Slots 2 and 3 changed; slot 0 was dynamic before; slot 1 stays static.
  CHECK(changed_shapes_text({true, false, true, true}, {2, 3}) ==
        "Cache miss due to 2 changed tensor shapes (total of 3): sizes[1], sizes[2]");
  CHECK(changed_shapes_text({false, true}, {1}) ==
        "Cache miss due to 1 changed tensor shapes (total of 1): sizes[0]");
}
}  // namespace capsim
