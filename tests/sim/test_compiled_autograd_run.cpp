// Running captured backwards: the FX interpreter and the lowering
// (sim/compiled_autograd/compiled_backward.hpp). The properties over random graphs are in
// tests/properties/prop_compiled_autograd.cpp; these are the fixed cases: every
// hook kind, a cache hit after a STATIC->DYNAMIC promotion, the lowered
// program's shape, and the errors.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <map>

#include "sim/compiled_autograd/capture.hpp"
#include "sim/compiled_autograd/compiled_backward.hpp"

namespace capsim {
namespace {

using Forward = std::function<Result<Variable>(AutogradEngine&)>;

std::vector<std::uint32_t> bits(const AutogradEngine& e) {
  std::vector<std::uint32_t> out;
  for (TensorId leaf : e.leaves_with_grad()) {
    const Result<std::vector<float>> values = e.read(*e.grad_of(leaf));
    REQUIRE(values.ok());
    for (float f : *values) out.push_back(std::bit_cast<std::uint32_t>(f));
  }
  return out;
}

Variable scalar_one(AutogradEngine& e) {
  const std::vector<float> one{1.0f};
  return e.constant({}, one).value();
}

std::vector<std::uint32_t> eager_bits(const Forward& forward) {
  OwnedAutogradDevice dev;
  AutogradEngine e(dev.device());
  const Variable loss = forward(e).value();
  REQUIRE(e.backward(loss, scalar_one(e)).ok());
  return bits(e);
}

struct Compiled {
  OwnedAutogradDevice dev;
  AutogradEngine engine{dev.device()};
  AutogradEngine::BackwardGraph bg;
  CollectedBackward collected;
  CaptureResult captured;
  CompiledBackwardCall call;

  Compiled(const Forward& forward, CaptureMode mode = CaptureMode::kFunctional) {
    const Variable loss = forward(engine).value();
    bg = engine.backward_graph(loss).value();
    collected = collect_backward(bg.graph, bg.root, dev.store).value();
    captured = capture_backward(bg.graph, collected, {mode, {}}).value();
    const TensorId roots[] = {scalar_one(engine).tensor};
    call = make_call(bg, collected, roots);
  }
  Status run(Fault fault = Fault::kNone) {
    RunOptions options;
    options.fault = fault;
    return run_compiled_backward(engine, bg.graph, captured.graph, call, options);
  }
};

std::vector<float> iota(std::size_t n, float start) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + 0.5f * static_cast<float>(i);
  return v;
}

// Every hook kind on one graph: x*x with a tensor hook, a pre-hook and a
// post-hook on MulBackward0, and a post-accumulate-grad hook on x.
Result<Variable> hooked(AutogradEngine& e) {
  CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4, 1.0f)));
  CAPSIM_TRY_ASSIGN(const Variable y, e.mul(x, x));
  CAPSIM_TRY(e.register_tensor_hook(y, 2.0f));
  CAPSIM_TRY(e.register_prehook(y.grad_fn->node, 3.0f));
  CAPSIM_TRY(e.register_posthook(y.grad_fn->node, 0.5f));
  CAPSIM_TRY(e.register_post_accumulate_grad_hook(x, 10.0f));
  return e.sum(y);
}

TEST_CASE("compiled backward: every hook kind runs as in eager; a dropped post hook shows") {
  const std::vector<std::uint32_t> want = eager_bits(hooked);
  {
    Compiled c(hooked);
    REQUIRE(c.call.hooks.size() == 4);
    REQUIRE(c.run().ok());
    CHECK(bits(c.engine) == want);
  }
  Compiled broken(hooked);
  REQUIRE(broken.run(Fault::kSkipPostHooks).ok());
  CHECK(bits(broken.engine) != want);
}

TEST_CASE("compiled backward: a graph captured after a size became dynamic reads sizes[j]") {
  CompiledAutogradCache cache;
  std::map<std::uint64_t, FxGraph> graphs;
  for (std::int64_t n : {4, 5, 6}) {
    const Forward mlp = [n](AutogradEngine& e) -> Result<Variable> {
      const auto k = static_cast<std::size_t>(n * n);
      CAPSIM_TRY_ASSIGN(const Variable w, e.leaf({n, n}, iota(k, 0.25f)));
      CAPSIM_TRY_ASSIGN(const Variable x, e.constant({n, n}, iota(k, -2.0f)));
      CAPSIM_TRY_ASSIGN(const Variable h, e.mm(x, w));
      CAPSIM_TRY_ASSIGN(const Variable r, e.relu(h));
      return e.sum(r);
    };
    OwnedAutogradDevice dev;
    AutogradEngine e(dev.device());
    const Variable loss = mlp(e).value();
    const auto bg = e.backward_graph(loss).value();
    CollectedBackward c = collect_backward(bg.graph, bg.root, dev.store).value();
    const CacheDecision d = cache.lookup(bg.graph, c);
    mark_dynamic(c, d.dynamic);
    if (!d.hit) graphs.insert_or_assign(d.entry, capture_backward(bg.graph, c).value().graph);
    const TensorId roots[] = {scalar_one(e).tensor};
    const CompiledBackwardCall call = make_call(bg, c, roots);
    CHECK(call.sizes.empty() == (n == 4));  // every slot that holds n is DYNAMIC from n = 5 on
    REQUIRE(run_compiled_backward(e, bg.graph, graphs.at(d.entry), call).ok());
    CHECK(bits(e) == eager_bits(mlp));
  }
  CHECK(cache.captures() == 2);
  CHECK(cache.hits() == 1);
}

TEST_CASE("compiled backward: the lowered program replays the grads at the same addresses") {
  Compiled c(hooked);
  const StepProgram program =
      lower_compiled_backward(c.engine, c.bg.graph, c.captured.graph, c.call).value();
  CHECK(program.name == "CompiledAutograd0");
  CHECK(program.steps.size() >= 5);
  CHECK(validate(program).ok());
  const std::vector<std::uint32_t> want = bits(c.engine);
  CHECK(want == eager_bits(hooked));
  const TensorId grad = *c.engine.grad_of(c.engine.leaves_with_grad().at(0));
  const std::vector<float> nan(4, std::nanf(""));
  REQUIRE(c.dev.memory.write(c.dev.store.data_address(grad).value(), std::as_bytes(std::span(nan)))
              .ok());
  CHECK(bits(c.engine) != want);
  for (const Step& step : program.steps) REQUIRE(c.dev.backend.run_step(step).ok());
  CHECK(bits(c.engine) == want);
}

TEST_CASE("compiled backward: a legacy graph is not executable, and errors name the node") {
  Compiled legacy(hooked, CaptureMode::kLegacy);
  const Status st = legacy.run();
  REQUIRE_FALSE(st.ok());
  // The legacy trace's aten ops are placeholders of the eager formulas: the
  // first one that does not fit an executable op is the error.
  CHECK(st.error().message ==
        "compiled backward: node %mul (torch.ops.aten.mul.Tensor): mul takes 2 arguments");

  Compiled missing(hooked);
  missing.call.hooks.clear();  // a call that does not match the graph
  const Status st2 = missing.run();
  REQUIRE_FALSE(st2.ok());
  CHECK(st2.error().message.find("index 0 out of range") != std::string::npos);
}

Result<Variable> unhooked(AutogradEngine& e) {
  CAPSIM_TRY_ASSIGN(const Variable x, e.leaf({4}, iota(4, 1.0f)));
  CAPSIM_TRY_ASSIGN(const Variable y, e.mul(x, x));
  return e.sum(y);
}

TEST_CASE("compiled autograd capture: hooks add no reads (I-3), no metadata survives (I-9)") {
  // I-3: hooks run on fakes under disable_proxy_modes_tracing; capsim's hooks
  // read nothing, so hooks change neither mode's reads.
  CHECK(Compiled(hooked).captured.reads.empty());
  CHECK(Compiled(hooked, CaptureMode::kLegacy).captured.reads.size() ==
        Compiled(unhooked, CaptureMode::kLegacy).captured.reads.size());
  // I-9: a graph node holds op, name, target and args only, so the scrub is
  // structural; the printed graph names no metadata either.
  const std::string text = Compiled(hooked).captured.graph.to_text();
  for (const char* word : {"val=", "tensor_meta", "example_value"}) {
    CAPTURE(word);
    CHECK(text.find(word) == std::string::npos);
  }
}

TEST_CASE("compiled autograd capture: the post-acc-grad hook follows its accumulate (I-11)") {
  const Compiled c(hooked);
  const FxNodeRange nodes = c.captured.graph.nodes();
  std::size_t acc = nodes.size(), hook = nodes.size();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].target == "torch.ops.inductor.accumulate_grad_.default") acc = i;
    if (nodes[i].target == "call_hook" && nodes[i].args.back().text() == "post_acc_grad_hook")
      hook = i;
  }
  REQUIRE(acc < nodes.size());
  REQUIRE(hook < nodes.size());
  CHECK(acc < hook);
}

}  // namespace
}  // namespace capsim
