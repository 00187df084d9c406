// loss.backward() with PyTorch's defaults (AutogradEngine::autograd_backward):
// the implicit ones of a scalar root, the errors of a non-scalar root and of
// a root that needs no grad, and retain_graph: without it a node that saved
// state gives it up as it runs, so a second backward through it fails with
// PyTorch's text, while a graph of nodes that saved nothing runs again.
#include <doctest/doctest.h>

#include "sim/autograd/autograd_engine.hpp"

namespace capsim {
namespace {

using Options = AutogradEngine::BackwardOptions;

struct Fixture {
  OwnedAutogradDevice device;
  AutogradEngine engine{device.device()};

  Variable ok(Result<Variable> v) {
    REQUIRE_MESSAGE(v.ok(), (v.ok() ? "" : v.error().message));
    return *v;
  }
  Variable leaf(std::vector<float> values, bool requires_grad = true) {
    return ok(engine.leaf({static_cast<std::int64_t>(values.size())}, values, requires_grad));
  }
  std::string error(const Variable& root, const Options& options) {
    const Result<BackwardResult> r = engine.autograd_backward(root, options);
    return r.ok() ? std::string() : r.error().message;
  }
  std::vector<float> grad(const Variable& leaf) {
    REQUIRE(engine.grad(leaf).has_value());
    return engine.read(*engine.grad(leaf)).value();
  }
};

constexpr const char* kTwice =
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.";

TEST_CASE("autograd backward: a scalar root's implicit grad is ones") {
  Fixture f;
  const Variable x = f.leaf({1, 2, 3});
  const Variable w = f.leaf({4, 5, 6});
  const Variable loss = f.ok(f.engine.sum(f.ok(f.engine.mul(x, w))));
  CHECK(f.error(loss, Options{}) == "");
  CHECK(f.grad(x) == std::vector<float>{4, 5, 6});
  CHECK(f.grad(w) == std::vector<float>{1, 2, 3});
}

TEST_CASE("autograd backward: a non-scalar root needs a grad; a root needing none is refused") {
  Fixture f;
  const Variable x = f.leaf({1, 2});
  const Variable y = f.ok(f.engine.mul(x, x));
  CHECK(f.error(y, Options{}) == "grad can be implicitly created only for scalar outputs");
  const Variable c = f.leaf({1, 2}, /*requires_grad=*/false);
  const Variable s = f.ok(f.engine.sum(c));
  CHECK(f.error(s, Options{}) ==
        "element 0 of tensors does not require grad and does not have a grad_fn");
}

TEST_CASE("autograd backward: without retain_graph a second backward fails, with it adds up") {
  Fixture f;
  const Variable x = f.leaf({1, 2});
  const Variable loss = f.ok(f.engine.sum(f.ok(f.engine.mul(x, x))));  // MulBackward0 saves x
  CHECK(f.error(loss, Options{std::nullopt, /*retain_graph=*/true}) == "");
  CHECK(f.error(loss, Options{}) == "");
  CHECK(f.grad(x) == std::vector<float>{4, 8});
  CHECK(f.error(loss, Options{}) == kTwice);
  // The failed run stopped at the freed node: the grads are as they were.
  CHECK(f.grad(x) == std::vector<float>{4, 8});
}

TEST_CASE("autograd backward: nodes that saved nothing run again without retain_graph") {
  // As in PyTorch: AddBackward0 and SumBackward0 save no tensors, so
  // nothing is freed and a second backward succeeds.
  Fixture f;
  const Variable x = f.leaf({1, 2});
  const Variable loss = f.ok(f.engine.sum(f.ok(f.engine.add(x, x))));
  CHECK(f.error(loss, Options{}) == "");
  CHECK(f.error(loss, Options{}) == "");
  CHECK(f.grad(x) == std::vector<float>{4, 4});
}

TEST_CASE("autograd backward: the two-argument backward keeps the graph, as before") {
  Fixture f;
  const Variable x = f.leaf({3});
  const Variable loss = f.ok(f.engine.sum(f.ok(f.engine.mul(x, x))));
  const Variable g = f.ok(f.engine.constant({}, std::vector<float>{1}));
  REQUIRE(f.engine.backward(loss, g).ok());
  REQUIRE(f.engine.backward(loss, g).ok());
  CHECK(f.grad(x) == std::vector<float>{12});
}

}  // namespace
}  // namespace capsim
