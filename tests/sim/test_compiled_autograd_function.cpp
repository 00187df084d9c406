// A captured backward lowered to a cudagraph-tree function body
// (sim/compiled_autograd/function_lowering.hpp): the body, run eagerly through the body
// interpreter, gives the eager engine's grads bit for bit; what has no body op
// yet is an error naming the FX node.
#include <doctest/doctest.h>

#include <bit>

#include "sim/compiled_autograd/capture.hpp"
#include "sim/compiled_autograd/compiled_backward.hpp"
#include "sim/compiled_autograd/function_lowering.hpp"
#include "sim/core/body_interpreter.hpp"

namespace capsim {
namespace {

std::vector<float> iota(std::size_t n, float start) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + 0.75f * static_cast<float>(i);
  return v;
}

struct Model {
  Variable w1, w2, loss;
};

// loss = sum(x*w1 + x*w2 + w1): Mul, Add, Sum and a fan-in into w1; with
// `mlp`, loss = sum(relu(x @ w1) * w2) instead: Mm, Relu, Mul, Sum.
Result<Model> build(AutogradEngine& e, bool hook, bool mlp = false) {
  Model m;
  if (mlp) {
    CAPSIM_TRY_ASSIGN(m.w1, e.leaf({3, 3}, iota(9, -2.0f)));
    CAPSIM_TRY_ASSIGN(m.w2, e.leaf({2, 3}, iota(6, 0.5f)));
    CAPSIM_TRY_ASSIGN(const Variable x, e.constant({2, 3}, iota(6, -1.5f)));
    CAPSIM_TRY_ASSIGN(const Variable h, e.mm(x, m.w1));
    CAPSIM_TRY_ASSIGN(const Variable r, e.relu(h));
    CAPSIM_TRY_ASSIGN(const Variable y, e.mul(r, m.w2));
    CAPSIM_TRY_ASSIGN(m.loss, e.sum(y));
    return m;
  }
  CAPSIM_TRY_ASSIGN(m.w1, e.leaf({2, 3}, iota(6, 0.5f)));
  CAPSIM_TRY_ASSIGN(m.w2, e.leaf({2, 3}, iota(6, -1.0f)));
  CAPSIM_TRY_ASSIGN(const Variable x, e.constant({2, 3}, iota(6, 3.0f)));
  CAPSIM_TRY_ASSIGN(const Variable a, e.mul(x, m.w1));
  CAPSIM_TRY_ASSIGN(const Variable b, e.mul(x, m.w2));
  CAPSIM_TRY_ASSIGN(const Variable ab, e.add(a, b));
  CAPSIM_TRY_ASSIGN(const Variable y, e.add(ab, m.w1));
  if (hook) CAPSIM_TRY(e.register_tensor_hook(y, 2.0f));
  CAPSIM_TRY_ASSIGN(m.loss, e.sum(y));
  return m;
}

std::vector<std::uint32_t> bits_of(const AutogradEngine& e, TensorId t) {
  const Result<std::vector<float>> values = e.read(t);
  REQUIRE(values.ok());
  std::vector<std::uint32_t> out;
  for (float f : *values) out.push_back(std::bit_cast<std::uint32_t>(f));
  return out;
}

struct Lowered {
  OwnedAutogradDevice dev;
  AutogradEngine engine{dev.device()};
  Model model;
  CompiledBackwardCall call;
  Result<CompiledBackwardFunction> function = make_error("not lowered");

  explicit Lowered(bool hook, bool mlp = false) {
    model = build(engine, hook, mlp).value();
    const auto bg = engine.backward_graph(model.loss).value();
    const CollectedBackward c = collect_backward(bg.graph, bg.root, dev.store).value();
    const CaptureResult r = capture_backward(bg.graph, c).value();
    const std::vector<float> one{1.0f};
    const TensorId roots[] = {engine.constant({}, one).value().tensor};
    call = make_call(bg, c, roots);
    const FunctionInputs in = function_inputs(engine, dev.store, call).value();
    function = to_function_def(r.graph, "ca_bwd", in.sizes, in.names, in.params);
  }
};

void check_against_eager(bool mlp) {
  Lowered l(false, mlp);
  REQUIRE(l.function.ok());
  const CompiledBackwardFunction& f = *l.function;
  CHECK(f.def.mode == CompilationMode::kBackward);
  CHECK(f.def.static_input_idxs.size() == 2);
  REQUIRE(f.def.outputs.size() == 2);
  REQUIRE(f.grad_of.size() == 2);

  TensorRefs refs(l.dev.store);
  for (TensorId t : l.call.inputs) refs.hold(t);
  BodyEnv env{refs, l.dev.backend};
  const std::vector<TensorId> grads = run_body(f.def, l.call.inputs, env).value();

  OwnedAutogradDevice eager_dev;
  AutogradEngine eager(eager_dev.device());
  const Model m = build(eager, false, mlp).value();
  const std::vector<float> one{1.0f};
  REQUIRE(eager.backward(m.loss, eager.constant({}, one).value()).ok());
  for (std::size_t k = 0; k < grads.size(); ++k) {
    const TensorId param = l.call.inputs.at(f.grad_of[k]);
    const TensorId eager_param = param == l.model.w1.tensor ? m.w1.tensor : m.w2.tensor;
    CAPTURE(k);
    CHECK(bits_of(l.engine, grads[k]) == bits_of(eager, *eager.grad_of(eager_param)));
  }
}

TEST_CASE("compiled backward as a function body: eager body run == eager engine") {
  SUBCASE("mul, add, sum, fan-in") {
    check_against_eager(false);
  }
  SUBCASE("mm, relu, mul, sum") {
    check_against_eager(true);
  }
}

TEST_CASE("compiled backward as a function body: a hook has no body op yet") {
  Lowered l(true);
  REQUIRE_FALSE(l.function.ok());
  CHECK(l.function.error().message.find("(operator.getitem): getitem of `hooks`: a function body "
                                        "has no such input") != std::string::npos);
}

}  // namespace
}  // namespace capsim
