// The eager autograd engine (sim/autograd/autograd_engine.hpp): gradients of mul, add,
// sum, mm, relu, expand, slice, clone and to() against hand-computed or
// float64 references; fan-in accumulation; broadcasting reduced by
// validate_outputs' sum_to; the recorded graph's shape (node names, next
// edges, in-edge counts); CopySlices and CopyBackwards where PyTorch creates
// them; custom functions (PyNode, CppNode); an AOT region
// (CompiledFunctionBackward, TwoTensor-like subclass output); hooks; .grad
// accumulation across backwards; determinism (two runs give bitwise-equal
// grads); and bad input as precise errors (eager validate_outputs' texts, from
// engine.cpp, naming the node).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "sim/autograd/autograd_engine.hpp"

namespace capsim {
namespace {

struct Fixture {
  OwnedAutogradDevice device;
  AutogradEngine engine{device.device()};

  Variable leaf(const Dims& sizes, std::vector<float> values, bool requires_grad = true) {
    auto v = engine.leaf(sizes, values, requires_grad);
    REQUIRE_MESSAGE(v.ok(), (v.ok() ? "" : v.error().message));
    return *v;
  }
  Variable ok(Result<Variable> v) {
    REQUIRE_MESSAGE(v.ok(), (v.ok() ? "" : v.error().message));
    return *v;
  }
  Variable ones_like(const Variable& v) {
    const auto t = device.store.tensor(v.tensor).value();
    return leaf(t.meta.sizes, std::vector<float>(numel(t.meta), 1.0f), false);
  }
  void backward(const Variable& root) {
    auto r = engine.backward(root, ones_like(root));
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  }
  std::vector<float> values(const Variable& v) { return engine.read(v.tensor).value(); }
  std::vector<float> grad(const Variable& v) {
    const auto g = engine.grad(v);
    REQUIRE(g.has_value());
    return engine.read(*g).value();
  }
  std::string name(const Variable& v) {
    REQUIRE(v.grad_fn.has_value());
    return engine.node(v.grad_fn->node).name;
  }
};

TEST_CASE("autograd engine: mul and sum give the hand-computed grads and graph") {
  Fixture f;
  const Variable x = f.leaf({3}, {1, 2, 3});
  const Variable w = f.leaf({3}, {4, 5, 6});
  const Variable prod = f.ok(f.engine.mul(x, w));
  const Variable loss = f.ok(f.engine.sum(prod));
  CHECK(f.values(loss) == std::vector<float>{32});
  CHECK(f.name(prod) == "MulBackward0");
  CHECK(f.name(loss) == "SumBackward0");
  CHECK(f.engine.node(loss.grad_fn->node).saved_sizes == Dims{3});
  CHECK(f.engine.node(prod.grad_fn->node).saved_tensors ==
        std::vector<TensorId>{x.tensor, w.tensor});

  const auto bg = f.engine.backward_graph(loss).value();
  CHECK(bg.graph.node(bg.root).name == "GraphRoot");
  const auto next = bg.graph.next_edges(prod.grad_fn->node);
  REQUIRE(next.size() == 2);
  CHECK(bg.graph.node(next[0]->target).name == "AccumulateGrad");
  CHECK(bg.graph.node(next[0]->target).variable == std::optional<TensorId>(x.tensor));
  CHECK(bg.graph.node(next[1]->target).variable == std::optional<TensorId>(w.tensor));
  CHECK(bg.graph.node(prod.grad_fn->node).inputs[0].meta.sizes == Dims{3});

  f.backward(loss);
  CHECK(f.grad(x) == std::vector<float>{4, 5, 6});
  CHECK(f.grad(w) == std::vector<float>{1, 2, 3});
}

TEST_CASE("autograd engine: a backward's graph is what it reaches, by ids of its own") {
  Fixture f;
  // An earlier forward the second backward never reaches, with a hook and a
  // custom function of its own.
  const Variable a = f.leaf({3}, {1, 2, 3});
  const Variable a2 = f.ok(f.engine.mul(a, a));
  REQUIRE(f.engine.register_tensor_hook(a2, 10.0f).ok());
  const Variable first = f.ok(f.engine.sum(a2));
  // The second forward: x * w, a node hook scaling its grads by 2.
  const Variable x = f.leaf({3}, {1, 2, 3});
  const Variable w = f.leaf({3}, {4, 5, 6});
  const Variable prod = f.ok(f.engine.mul(x, w));
  REQUIRE(f.engine.register_prehook(prod.grad_fn->node, 2.0f).ok());
  const Variable loss = f.ok(f.engine.sum(prod));

  const auto bg = f.engine.backward_graph(loss).value();
  // Sum, Mul, two AccumulateGrads and the GraphRoot: none of the first
  // forward's four nodes.
  CHECK(bg.graph.num_nodes() == 5);
  CHECK(f.engine.num_nodes() == 7);
  REQUIRE(bg.engine_ids.size() == 4);
  CHECK(std::is_sorted(bg.engine_ids.begin(), bg.engine_ids.end()));
  for (AutogradNodeId id = 0; id < bg.engine_ids.size(); ++id) {
    CHECK(bg.graph.node(id).name == f.engine.node(bg.engine_id(id)).name);
  }
  CHECK(bg.engine_ids.back() == loss.grad_fn->node);
  // The hook is found by the engine's id, whatever the graph's.
  f.backward(loss);
  CHECK(f.grad(x) == std::vector<float>{8, 10, 12});
  CHECK(f.grad(w) == std::vector<float>{2, 4, 6});
  CHECK_FALSE(f.engine.grad(a).has_value());
  f.backward(first);
  CHECK(f.grad(a) == std::vector<float>{20, 40, 60});
}

TEST_CASE("autograd engine: an input that needs no grad leaves an invalid next edge") {
  Fixture f;
  const Variable x = f.leaf({2}, {1, 2});
  const Variable c = f.leaf({2}, {3, 4}, false);
  const Variable y = f.ok(f.engine.mul(c, x));
  const auto next = f.engine.graph().value().next_edges(y.grad_fn->node);
  REQUIRE(next.size() == 2);
  CHECK_FALSE(next[0].has_value());
  CHECK(next[1].has_value());
  const Variable z = f.ok(f.engine.mul(c, c));
  CHECK_FALSE(z.requires_grad);
  CHECK_FALSE(z.grad_fn.has_value());
  f.backward(f.ok(f.engine.sum(y)));
  CHECK(f.grad(x) == std::vector<float>{3, 4});
  CHECK_FALSE(f.engine.grad(c).has_value());
}

TEST_CASE("autograd engine: fan-in grads are summed before a node runs") {
  Fixture f;
  const Variable x = f.leaf({3}, {1, -2, 3});
  // y = x*x + x: three edges into AccumulateGrad(x); dy/dx = 2x + 1.
  const Variable sq = f.ok(f.engine.mul(x, x));
  const Variable y = f.ok(f.engine.add(sq, x));
  const Variable loss = f.ok(f.engine.sum(y));
  const auto g = f.engine.graph().value();
  const auto acc = f.engine.gradient_edge(x.tensor)->node;
  CHECK(g.in_edges(acc).size() == 3);
  CHECK(f.name(y) == "AddBackward0");
  f.backward(loss);
  CHECK(f.grad(x) == std::vector<float>{3, -3, 7});
}

TEST_CASE("autograd engine: broadcasting mul and add are reduced by validate_outputs") {
  Fixture f;
  const Variable a = f.leaf({2, 3}, {1, 2, 3, 4, 5, 6});
  const Variable b = f.leaf({3}, {10, 20, 30});
  const Variable c = f.leaf({2, 1}, {7, 8});
  const Variable loss = f.ok(f.engine.sum(f.ok(f.engine.add(f.ok(f.engine.mul(a, b)), c))));
  f.backward(loss);
  CHECK(f.grad(a) == std::vector<float>{10, 20, 30, 10, 20, 30});
  CHECK(f.grad(b) == std::vector<float>{5, 7, 9});
  CHECK(f.grad(c) == std::vector<float>{3, 3});
}

TEST_CASE("autograd engine: expand's backward is sum_to_size") {
  Fixture f;
  const Variable b = f.leaf({1, 3}, {1, 2, 3});
  const Variable e = f.ok(f.engine.expand(b, {4, 2, 3}));
  CHECK(f.name(e) == "ExpandBackward0");
  CHECK(f.engine.node(e.grad_fn->node).saved_sizes == Dims{1, 3});
  const Variable w = f.leaf({4, 2, 3}, std::vector<float>(24, 0.5f), false);
  f.backward(f.ok(f.engine.sum(f.ok(f.engine.mul(e, w)))));
  CHECK(f.grad(b) == std::vector<float>{4, 4, 4});
}

TEST_CASE("autograd engine: mm grads match a float64 reference") {
  Fixture f;
  const std::vector<float> av = {0.5f, -1.25f, 2.0f, 3.5f, 0.75f, -0.5f};  // [2, 3]
  const std::vector<float> bv = {1.5f, -2.0f, 0.25f, 4.0f, -3.0f, 1.0f};   // [3, 2]
  const std::vector<float> gv = {1.0f, -2.0f, 0.5f, 3.0f};                 // [2, 2]
  const Variable a = f.leaf({2, 3}, av);
  const Variable b = f.leaf({3, 2}, bv);
  const Variable out = f.ok(f.engine.mm(a, b));
  CHECK(f.name(out) == "MmBackward0");
  CHECK(f.engine.node(out.grad_fn->node).saved_sizes == Dims{2, 3, 3, 2});
  REQUIRE(f.engine.backward(out, f.leaf({2, 2}, gv, false)).ok());
  // grad_a = g @ b^T, grad_b = a^T @ g, in float64.
  std::vector<float> ga(6), gb(6);
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 3; ++k) {
      double s = 0;
      for (int j = 0; j < 2; ++j) s += double(gv[i * 2 + j]) * bv[k * 2 + j];
      ga[i * 3 + k] = static_cast<float>(s);
    }
  }
  for (int k = 0; k < 3; ++k) {
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int i = 0; i < 2; ++i) s += double(av[i * 3 + k]) * gv[i * 2 + j];
      gb[k * 2 + j] = static_cast<float>(s);
    }
  }
  CHECK(f.grad(a) == ga);
  CHECK(f.grad(b) == gb);
}

TEST_CASE("autograd engine: relu, clone and slice") {
  Fixture f;
  const Variable x = f.leaf({4}, {-1, 2, -3, 4});
  const Variable r = f.ok(f.engine.relu(x));
  CHECK(f.name(r) == "ReluBackward0");
  CHECK(f.engine.node(r.grad_fn->node).saved_tensors == std::vector<TensorId>{r.tensor});
  f.backward(f.ok(f.engine.sum(f.ok(f.engine.clone(r)))));
  CHECK(f.grad(x) == std::vector<float>{0, 1, 0, 1});

  const Variable m = f.leaf({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Variable s = f.ok(f.engine.slice(m, 1, 3));
  CHECK(f.values(s) == std::vector<float>{3, 4, 5, 6});
  CHECK(f.name(s) == "SliceBackward0");
  CHECK(f.engine.node(s.grad_fn->node).saved_sizes == Dims{4, 2, 0, 1, 3, 1});
  f.backward(f.ok(f.engine.sum(s)));
  CHECK(f.grad(m) == std::vector<float>{0, 0, 1, 1, 1, 1, 0, 0});
}

TEST_CASE("autograd engine: copy_ into a slice makes CopySlices wrapping CopyBackwards") {
  Fixture f;
  const Variable x = f.leaf({4}, {1, 2, 3, 4});
  const Variable src = f.leaf({2}, {10, 20});
  const Variable base = f.ok(f.engine.clone(x));
  const Variable view = f.ok(f.engine.slice(base, 0, 2));
  const Variable after = f.ok(f.engine.copy_(view, src));
  CHECK(f.values(base) == std::vector<float>{10, 20, 3, 4});
  const Variable b = f.engine.variable(base.tensor).value();
  REQUIRE(b.grad_fn.has_value());
  const AutogradNode& cs = f.engine.node(b.grad_fn->node);
  CHECK(cs.kind == AutogradNodeKind::kCopySlices);
  CHECK(cs.name == "CopySlices");
  CHECK(cs.inner_name == "CopyBackwards");
  CHECK(cs.base == TensorGeometry{{4}, {1}, 0});
  CHECK(cs.view == TensorGeometry{{2}, {1}, 0});
  CHECK(f.name(after) == "AsStridedBackward0");
  // CopySlices' edge 0 is the base's old history (CloneBackward0), edge 1 src's.
  const auto next = f.engine.graph().value().next_edges(b.grad_fn->node);
  REQUIRE(next.size() == 2);
  CHECK(f.engine.node(next[0]->target).name == "CloneBackward0");
  CHECK(next[1]->target == f.engine.gradient_edge(src.tensor)->node);

  const Variable c = f.leaf({4}, {1, 2, 3, 4}, false);
  f.backward(f.ok(f.engine.sum(f.ok(f.engine.mul(b, c)))));
  CHECK(f.grad(x) == std::vector<float>{0, 0, 3, 4});
  CHECK(f.grad(src) == std::vector<float>{1, 2});
}

TEST_CASE("autograd engine: mul_ on a slice makes CopySlices wrapping MulBackward0") {
  Fixture f;
  const Variable x = f.leaf({4}, {1, 2, 3, 4});
  const Variable k = f.leaf({2}, {5, 6});
  const Variable base = f.ok(f.engine.clone(x));
  const Variable view = f.ok(f.engine.slice(base, 2, 4));
  (void)f.ok(f.engine.mul_(view, k));
  CHECK(f.values(base) == std::vector<float>{1, 2, 15, 24});
  const Variable b = f.engine.variable(base.tensor).value();
  CHECK(f.engine.node(b.grad_fn->node).inner_name == "MulBackward0");
  CHECK(f.engine.node(b.grad_fn->node).view == TensorGeometry{{2}, {1}, 2});
  const Variable c = f.leaf({4}, {1, 2, 3, 4}, false);
  f.backward(f.ok(f.engine.sum(f.ok(f.engine.mul(b, c)))));
  CHECK(f.grad(x) == std::vector<float>{1, 2, 15, 24});  // c * [1, 1, k0, k1]
  CHECK(f.grad(k) == std::vector<float>{9, 16});         // c[2:] * x[2:]
}

TEST_CASE("autograd engine: copy_ across dtypes is CopyBackwards, to() is ToCopyBackward0") {
  Fixture f;
  const Variable x = f.leaf({3}, {1, 2, 3});
  const Variable y = f.ok(f.engine.zeros({3}, DType::kFloat64));
  const Variable y2 = f.ok(f.engine.copy_(y, x));
  CHECK(f.name(y2) == "CopyBackwards");
  CHECK(f.engine.node(y2.grad_fn->node).kind == AutogradNodeKind::kCopyBackwards);
  CHECK(f.engine.node(y2.grad_fn->node).inputs[0].meta.dtype == DType::kFloat64);
  const auto next = f.engine.graph().value().next_edges(y2.grad_fn->node);
  REQUIRE(next.size() == 2);
  CHECK_FALSE(next[0].has_value());  // y had no history
  const Variable t = f.ok(f.engine.to(x, DType::kFloat16));
  CHECK(f.name(t) == "ToCopyBackward0");
  const Variable c = f.leaf({3}, {4, 5, 6}, false);
  const Variable loss =
      f.ok(f.engine.add(f.ok(f.engine.sum(f.ok(f.engine.mul(y2, c)))), f.ok(f.engine.sum(t))));
  f.backward(loss);
  const TensorId g = *f.engine.grad(x);
  CHECK(f.device.store.tensor(g).value().meta.dtype == DType::kFloat32);
  // The grad's values pass through float64 mul and float16 sums, which the
  // exact kernels do not compute (generic ops: docs/trace-format.md §4.1);
  // its shape and dtype are exact.
  CHECK(f.grad(x).size() == 3);
}

TEST_CASE("autograd engine: custom functions are PyNode and CppNode") {
  Fixture f;
  const Variable x = f.leaf({2}, {1, 2});
  const Variable y = f.leaf({2}, {3, 4});
  CustomFunction py{
      .name = "MyFn", .kind = CustomFunctionKind::kPython, .factor = 2.0f, .bad_grad_sizes = {}};
  CustomFunction cpp{.name = "Scale",
                     .kind = CustomFunctionKind::kCpp,
                     .traceable = false,
                     .factor = 3.0f,
                     .bad_grad_sizes = {}};
  const Variable in[] = {x, y};
  const Variable p = f.ok(f.engine.apply(py, in));
  CHECK(f.values(p) == std::vector<float>{8, 12});
  const AutogradNode& pn = f.engine.node(p.grad_fn->node);
  CHECK(pn.kind == AutogradNodeKind::kPyNode);
  CHECK(pn.name == "MyFnBackward");
  CHECK(pn.num_outputs == 2);
  const Variable one[] = {p};
  const Variable q = f.ok(f.engine.apply(cpp, one));
  const AutogradNode& cn = f.engine.node(q.grad_fn->node);
  CHECK(cn.kind == AutogradNodeKind::kCppNode);
  CHECK(cn.name == "CppNode<Scale>");
  CHECK_FALSE(cn.traceable);
  CHECK(cn.saved_scalars == std::vector<double>{3.0});
  f.backward(f.ok(f.engine.sum(q)));
  CHECK(f.grad(x) == std::vector<float>{6, 6});
  CHECK(f.grad(y) == std::vector<float>{6, 6});
}

TEST_CASE("autograd engine: hooks are recorded on nodes and scale what they see") {
  Fixture f;
  const Variable x = f.leaf({2}, {1, 2});
  const Variable w = f.leaf({2}, {3, 4});
  const Variable m = f.ok(f.engine.mul(x, w));
  const Variable loss = f.ok(f.engine.sum(m));
  REQUIRE(f.engine.register_tensor_hook(m, 2.0f).ok());             // grad of m * 2
  REQUIRE(f.engine.register_posthook(m.grad_fn->node, 5.0f).ok());  // both outputs * 5
  REQUIRE(f.engine.register_prehook(loss.grad_fn->node, 10.0f).ok());
  REQUIRE(f.engine.register_post_accumulate_grad_hook(x, 0.5f).ok());
  CHECK(f.engine.node(m.grad_fn->node).hooks ==
        std::vector<AutogradHookKind>{AutogradHookKind::kTensorPre, AutogradHookKind::kPost});
  CHECK(f.engine.node(f.engine.gradient_edge(x.tensor)->node).hooks ==
        std::vector<AutogradHookKind>{AutogradHookKind::kPostAccGrad});
  f.backward(loss);
  CHECK(f.grad(w) == std::vector<float>{100, 200});  // x * 10 * 2 * 5
  CHECK(f.grad(x) == std::vector<float>{150, 200});  // w * 100 * 0.5
  CHECK_FALSE(f.engine.register_post_accumulate_grad_hook(m, 1.0f).ok());
}

TEST_CASE("autograd engine: .grad accumulates across backwards, in place") {
  Fixture f;
  const Variable x = f.leaf({2}, {1, 2});
  const Variable loss = f.ok(f.engine.sum(f.ok(f.engine.mul(x, x))));
  f.backward(loss);
  const TensorId first = *f.engine.grad(x);
  f.backward(loss);
  CHECK(*f.engine.grad(x) == first);
  CHECK(f.grad(x) == std::vector<float>{4, 8});
  // The grad_output is the user's: AccumulateGrad clones it rather than stealing.
  const Variable y = f.leaf({2}, {1, 1});
  const Variable g = f.leaf({2}, {7, 8}, false);
  REQUIRE(f.engine.backward(f.ok(f.engine.clone(y)), g).ok());
  CHECK(*f.engine.grad(y) != g.tensor);
  CHECK(f.grad(y) == std::vector<float>{7, 8});
}

std::vector<std::vector<float>> run_program() {
  Fixture f;
  const Variable a = f.leaf({2, 3}, {0.1f, -0.7f, 1.3f, 2.9f, -0.3f, 0.01f});
  const Variable b = f.leaf({3, 2}, {1.7f, 0.2f, -1.1f, 0.9f, 0.33f, -2.5f});
  const Variable bias = f.leaf({2}, {0.05f, -0.15f});
  const Variable h = f.ok(f.engine.relu(f.ok(f.engine.add(f.ok(f.engine.mm(a, b)), bias))));
  const Variable loss = f.ok(f.engine.sum(f.ok(f.engine.mul(h, h))));
  f.backward(loss);
  return {f.grad(a), f.grad(b), f.grad(bias)};
}

TEST_CASE("autograd engine: two runs give bitwise-equal grads") {
  const auto first = run_program();
  const auto second = run_program();
  REQUIRE(first.size() == second.size());
  for (std::size_t k = 0; k < first.size(); ++k) {
    REQUIRE(first[k].size() == second[k].size());
    CHECK(std::memcmp(first[k].data(), second[k].data(), first[k].size() * sizeof(float)) == 0);
  }
}

TEST_CASE("autograd engine: validate_outputs rejects or reduces a custom backward's grad") {
  Fixture f;
  const Variable x = f.leaf({3}, {1, 2, 3});
  const Variable in[] = {x};
  CustomFunction bad{.name = "Bad", .bad_grad_sizes = Dims{5}};
  auto r = f.engine.backward(f.ok(f.engine.apply(bad, in)), f.leaf({3}, {1, 1, 1}, false));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "Function BadBackward returned an invalid gradient at index 0 - got [5] but expected "
        "shape compatible with [3]");
  CustomFunction wide{.name = "Wide", .factor = 0.5f, .bad_grad_sizes = Dims{2, 3}};
  const Variable w = f.ok(f.engine.apply(wide, in));
  REQUIRE(f.engine.backward(w, f.leaf({3}, {1, 1, 1}, false)).ok());
  CHECK(f.grad(x) == std::vector<float>{1, 1, 1});  // [2, 3] of 0.5, summed to [3]
}

TEST_CASE("autograd engine: bad input is a precise error") {
  Fixture f;
  const Variable x = f.leaf({2, 3}, std::vector<float>(6, 1.0f));
  const Variable y = f.leaf({4}, std::vector<float>(4, 1.0f));
  auto m = f.engine.mul(x, y);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message ==
        "the size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension "
        "1");
  auto b = f.engine.backward(x, f.leaf({3}, {1, 1, 1}, false));
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().message ==
        "Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) and output[0] has a "
        "shape of torch.Size([2, 3]).");
  const Variable c = f.leaf({2}, {1, 2}, false);
  auto nograd = f.engine.backward(c, c);
  REQUIRE_FALSE(nograd.ok());
  CHECK(nograd.error().message ==
        "element 0 of tensors does not require grad and does not have a grad_fn");
  auto leaf_inplace = f.engine.copy_(y, f.leaf({4}, {1, 2, 3, 4}, false));
  REQUIRE_FALSE(leaf_inplace.ok());
  CHECK(leaf_inplace.error().message ==
        "copy_: a leaf Variable that requires grad is being used in an in-place operation.");
  auto view_inplace = f.engine.mul_(f.ok(f.engine.slice(y, 0, 2)), c);
  REQUIRE_FALSE(view_inplace.ok());
  CHECK(view_inplace.error().message ==
        "mul_: a view of a leaf Variable that requires grad is being used in an in-place "
        "operation.");
  auto mm = f.engine.mm(x, x);
  REQUIRE_FALSE(mm.ok());
  CHECK(mm.error().message == "mm: shapes [2, 3] and [2, 3] cannot be multiplied");
}

TEST_CASE("autograd engine: an AOT region is CompiledFunctionBackward, maybe with a subclass") {
  Fixture f;
  const Variable a = f.leaf({3}, {1, 2, 3});
  const Variable b = f.leaf({3}, {4, 5, 6});
  const Variable plain = f.ok(f.engine.compiled_mul(a, b, false));
  const AutogradNode& pn = f.engine.node(plain.grad_fn->node);
  CHECK(pn.kind == AutogradNodeKind::kAotBackward);
  CHECK(pn.name == "CompiledFunctionBackward");
  CHECK(pn.subclass_outputs == 0);
  const Variable sub = f.ok(f.engine.compiled_mul(a, b, true));
  const AutogradNode& sn = f.engine.node(sub.grad_fn->node);
  CHECK(sn.subclass_outputs == 1);
  CHECK(sn.inputs[0].meta.is_subclass);
  CHECK(f.device.store.tensor(sub.tensor).value().meta.is_subclass);
  const auto inner = f.engine.inner_tensors(sub.tensor).value();
  CHECK(f.engine.read(inner.first).value() == std::vector<float>{4, 10, 18});
  CHECK(f.engine.read(inner.second).value() == std::vector<float>{4, 10, 18});
  CHECK_FALSE(f.engine.inner_tensors(plain.tensor).ok());
  const Variable loss = f.ok(f.engine.add(f.ok(f.engine.sum(plain)), f.ok(f.engine.sum(sub))));
  f.backward(loss);
  CHECK(f.grad(a) == std::vector<float>{8, 10, 12});
  CHECK(f.grad(b) == std::vector<float>{2, 4, 6});
}

}  // namespace
}  // namespace capsim
