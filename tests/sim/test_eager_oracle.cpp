// The eager oracle's plans (sim/core/eager_oracle.hpp): a long-lived oracle,
// answering later calls from what earlier ones did, computes bit for bit
// what a fresh oracle computes, whatever the values, shapes, aliasing and
// edits to the body; and it does answer from plans.
#include <doctest/doctest.h>

#include "tests/sim/body_test_support.hpp"

namespace capsim {
namespace {

using testing::def_of;
using testing::Device;
using testing::op;

// `oracle`'s answer, checked against a fresh oracle's (which has no plan).
void check_call(EagerOracle& oracle, const FunctionDef& def, Device& d,
                const std::vector<TensorId>& inputs) {
  EagerOracle fresh;
  const auto expected = fresh.outputs(def, d.store, d.memory, inputs);
  const auto got = oracle.outputs(def, d.store, d.memory, inputs);
  REQUIRE(expected.ok());
  REQUIRE(got.ok());
  CHECK(*got == *expected);
}

TEST_CASE("eager oracle: later calls with new values are answered from a plan, bit for bit") {
  Device d;
  // g(x, w) = x * w + x
  const FunctionDef g =
      def_of(2, {op(BodyOpKind::kMul, {0, 1}), op(BodyOpKind::kAdd, {2, 0})}, {3});
  EagerOracle oracle;
  const TensorId w = d.tensor({4});
  for (int step = 0; step < 20; ++step) check_call(oracle, g, d, {d.tensor({4}), w});
  CHECK(oracle.planned_calls() == 19);
  CHECK(oracle.plans() == 1);
  // Another shape is another plan; the first stays.
  const TensorId w2 = d.tensor({2, 3});
  for (int step = 0; step < 5; ++step) {
    check_call(oracle, g, d, {d.tensor({2, 3}), w2});
    check_call(oracle, g, d, {d.tensor({4}), w});
  }
  CHECK(oracle.plans() == 2);
  CHECK(oracle.planned_calls() == 19 + 9);
}

TEST_CASE("eager oracle: aliasing between inputs is part of a plan's shape") {
  Device d;
  // h(a, b): a += b, then a * b. With a and b one tensor: 2a * 2a.
  const FunctionDef h =
      def_of(2, {op(BodyOpKind::kAddInplace, {0, 1}), op(BodyOpKind::kMul, {2, 1})}, {3});
  EagerOracle oracle;
  for (int step = 0; step < 4; ++step) {
    const TensorId x = d.tensor({3}), y = d.tensor({3});
    check_call(oracle, h, d, {x, y});
    check_call(oracle, h, d, {x, x});
    // Two views of one storage, overlapping nowhere, and then everywhere.
    const TensorId base = d.tensor({6});
    check_call(oracle, h, d, {d.view(base, {3}, 0), d.view(base, {3}, 3)});
    check_call(oracle, h, d, {d.view(base, {3}, 0), d.view(base, {3}, 0)});
  }
  CHECK(oracle.plans() == 4);
  CHECK(oracle.planned_calls() == 12);
}

TEST_CASE("eager oracle: an input in a larger storage, or at another offset, is another shape") {
  Device d;
  const FunctionDef g = def_of(2, {op(BodyOpKind::kMul, {0, 1})}, {2});
  EagerOracle oracle;
  const TensorId w = d.tensor({2});
  for (int step = 0; step < 3; ++step) {
    check_call(oracle, g, d, {d.tensor({2}), w});
    check_call(oracle, g, d, {d.view(d.tensor({5}), {2}, 0), w});
    check_call(oracle, g, d, {d.view(d.tensor({5}), {2}, 3), w});
  }
  CHECK(oracle.plans() == 3);
}

TEST_CASE("eager oracle: a body edited in place is not answered from the old plan") {
  Device d;
  // full(-0.0) then full(0.0): equal as floats, not as bits.
  FunctionDef f = def_of(0, {op(BodyOpKind::kFull, {})}, {0});
  f.ops[0].sizes = {2};
  f.ops[0].scalar = -0.0f;
  EagerOracle oracle;
  check_call(oracle, f, d, {});
  check_call(oracle, f, d, {});
  f.ops[0].scalar = 0.0f;
  check_call(oracle, f, d, {});
  const auto bits = oracle.outputs(f, d.store, d.memory, {}).value();
  CHECK(bits == std::vector<ElementBits>{{0u, 0u}});
  f.ops[0].sizes = {3};
  check_call(oracle, f, d, {});
  CHECK(oracle.planned_calls() == 2);

  // A sum's dims and keepdim are part of the body too.
  FunctionDef s = def_of(1, {op(BodyOpKind::kSum, {0})}, {1});
  s.ops[0].dims = std::vector<std::int64_t>{0};
  const TensorId x = d.tensor({2, 3});
  check_call(oracle, s, d, {x});
  check_call(oracle, s, d, {x});
  s.ops[0].dims = std::vector<std::int64_t>{1};
  check_call(oracle, s, d, {x});
  s.ops[0].keepdim = true;
  check_call(oracle, s, d, {x});
}

}  // namespace
}  // namespace capsim
