// The launch builders' shape checks and their messages, and the guarantee that
// the host never fuses a*b+c into an FMA (the CUDA backend must agree bit for bit).
#include "tests/model/kernel_test_world.hpp"

namespace capsim {
namespace {
using namespace kernel_test;

// --- The builders' checks -------------------------------------------------------

TEST_CASE("launch builders reject bad shapes with an error that names the problem") {
  World w;
  const Tensor a23 = w.tensor({2, 3});
  const Tensor b42 = w.tensor({4, 2});
  const Tensor b32 = w.tensor({3, 2});
  const Tensor o22 = w.tensor({2, 2});
  const Tensor o23 = w.tensor({2, 3});
  const Tensor v3 = w.tensor({3});
  const Tensor t234 = w.tensor({2, 3, 4});

  SUBCASE("mm") {
    check_error(launch_mm(w.arg(o22), w.arg(a23), w.arg(b42)),
                {"mm", "[2, 3]", "[4, 2]", "cannot be multiplied"});
    check_error(launch_mm(w.arg(o23), w.arg(a23), w.arg(b32)),
                {"mm", "out has sizes [2, 3]", "expected [2, 2]"});
    check_error(launch_mm(w.arg(o22), w.arg(v3), w.arg(b32)), {"mm", "2-d"});
    check_error(launch_mm(w.arg(o22), w.arg(a23), w.arg(t234)), {"mm", "2-d"});
  }
  SUBCASE("an mm over the exact work limit is modelled, one at it is exact") {
    CHECK_FALSE(mm_over_exact_work(256, 256, 256));
    CHECK(mm_over_exact_work(256, 256, 257));
    CHECK(mm_over_exact_work(std::int64_t{1} << 40, std::int64_t{1} << 40, 2));  // overflows
    const Tensor x = w.tensor({2, 1 << 12});
    const Tensor y = w.tensor({1 << 12, 1 << 12});
    const Tensor o = w.tensor({2, 1 << 12});
    CHECK(launch_mm(w.arg(o), w.arg(x), w.arg(y)).value().kind == KernelKind::kGenericMix);
    const Tensor y2 = w.tensor({1 << 12, 1 << 12 >> 8});
    const Tensor o2 = w.tensor({2, 1 << 12 >> 8});
    CHECK(launch_mm(w.arg(o2), w.arg(x), w.arg(y2)).value().kind == KernelKind::kMm);
  }
  SUBCASE("sum") {
    const Tensor o34 = w.tensor({3, 4});
    check_error(launch_sum(w.arg(o34), w.arg(t234), {3}),
                {"sum", "dim 3", "out of range", "rank 3"});
    check_error(launch_sum(w.arg(o34), w.arg(t234), {-4}), {"sum", "dim -4", "out of range"});
    check_error(launch_sum(w.arg(o34), w.arg(t234), {0, 0}), {"sum", "dim 0", "twice"});
    check_error(launch_sum(w.arg(o34), w.arg(t234), {0, -3}), {"sum", "dim 0", "twice"});
    // The out shape must be the kept dims, with or without the reduced ones.
    check_error(launch_sum(w.arg(o23), w.arg(t234), {0}), {"sum", "out has sizes [2, 3]"});
    const Tensor o134 = w.tensor({1, 3, 5});
    check_error(launch_sum(w.arg(o134), w.arg(t234), {0}), {"sum", "expected 4 in dim 2"});
  }
  SUBCASE("sum_to_size") {
    const Tensor o2 = w.tensor({2});
    check_error(launch_sum_to_size(w.arg(o2), w.arg(t234)),
                {"sum_to_size", "[2]", "not expandable", "[2, 3, 4]"});
    const Tensor o32 = w.tensor({3, 2});
    check_error(launch_sum_to_size(w.arg(o32), w.arg(t234)), {"sum_to_size", "not expandable"});
    const Tensor o5234 = w.tensor({5, 2, 3, 4});
    check_error(launch_sum_to_size(w.arg(o5234), w.arg(t234)),
                {"sum_to_size", "[5, 2, 3, 4]", "not expandable"});
  }
  SUBCASE("adam, adamw and adam_powers state") {
    const Tensor p = w.tensor({3});
    const Tensor g = w.tensor({3});
    const Tensor m = w.tensor({3});
    const Tensor v = w.tensor({3});
    const Tensor s3 = w.tensor({3});
    const Tensor s21 = w.tensor({2, 1});
    const Tensor s1 = w.tensor({1});
    const AdamHyper h;
    check_error(
        launch_adam(KernelKind::kAdam, w.arg(p), w.arg(g), w.arg(m), w.arg(v), w.arg(s3), h),
        {"adam", "state must have sizes [2]", "got [3]"});
    check_error(
        launch_adam(KernelKind::kAdamW, w.arg(p), w.arg(g), w.arg(m), w.arg(v), w.arg(s21), h),
        {"adamw", "state must have sizes [2]", "got [2, 1]"});
    check_error(launch_adam_powers(w.arg(s1), h),
                {"adam_powers", "state must have sizes [2]", "got [1]"});
    const Tensor g4 = w.tensor({4});
    const Tensor s2 = w.tensor({2});
    check_error(
        launch_adam(KernelKind::kAdam, w.arg(p), w.arg(g4), w.arg(m), w.arg(v), w.arg(s2), h),
        {"adam", "grad has sizes [4]"});
    check_error(
        launch_adam(KernelKind::kAdam, w.arg(p), w.arg(g), w.arg(g4), w.arg(v), w.arg(s2), h),
        {"adam", "exp_avg has sizes [4]"});
    check_error(
        launch_adam(KernelKind::kAdamW, w.arg(p), w.arg(g), w.arg(m), w.arg(g4), w.arg(s2), h),
        {"adamw", "exp_avg_sq has sizes [4]"});
  }
  SUBCASE("elementwise and sgd") {
    // Broadcasting is never implicit: b of [3] against out [2, 3] must be expanded.
    check_error(launch_binary(KernelKind::kAdd, w.arg(o23), w.arg(a23), w.arg(v3)),
                {"add", "b has sizes [3]", "out has sizes [2, 3]"});
    check_error(launch_binary(KernelKind::kDiv, w.arg(o23), w.arg(b32), w.arg(a23)),
                {"div", "a has sizes [3, 2]"});
    check_error(launch_copy(w.arg(o23), w.arg(b32)), {"copy", "in has sizes [3, 2]"});
    check_error(launch_unary(KernelKind::kRelu, w.arg(o23), w.arg(v3)), {"relu", "in has sizes"});
    check_error(launch_relu_backward(w.arg(o23), w.arg(a23), w.arg(b32)),
                {"relu_backward", "result has sizes [3, 2]"});
    check_error(launch_sgd(w.arg(o23), w.arg(a23), w.arg(v3), SgdHyper{}),
                {"sgd", "momentum_buffer has sizes [3]"});
  }
  SUBCASE("a rank beyond the kernels' geometry") {
    TensorArg big = w.arg(v3);
    big.meta.sizes.assign(9, 1);
    big.meta.strides.assign(9, 1);
    check_error(launch_fill(big, 0.0f), {"fill", "out", "rank 9", "limit of 8"});
  }
}

// --- No fused multiply-add ---------------------------------------------------------

// a * b + c with the product rounded first, as the kernels must compute it.
float unfused(float a, float b, float c) {
  volatile float product = a * b;
  return product + c;
}

TEST_CASE("mm and sgd never fuse a*b+c into an fma") {
  // x = 1 + 2^-12: x * x = 1 + 2^-11 + 2^-24 rounds (a tie, to even) to
  // 1 + 2^-11, so x * x - 1 is 2^-11 unfused but 2^-11 + 2^-24 fused.
  const float x = 1.0f + 0x1p-12f;
  const float want = unfused(x, x, -1.0f);
  const float fused = std::fma(x, x, -1.0f);
  REQUIRE(want == 0x1p-11f);
  REQUIRE(fused == 0x1p-11f + 0x1p-24f);
  REQUIRE(want != fused);

  SUBCASE("mm: acc + a[m,k] * b[k,n]") {
    // [-1, x] @ [1, x]^T: acc = -1 after k = 0, then -1 + x * x.
    World w;
    const Tensor a = w.tensor({1, 2}, {-1.0f, x});
    const Tensor b = w.tensor({2, 1}, {1.0f, x});
    const Tensor out = w.tensor({1, 1});
    w.run(launch_mm(w.arg(out), w.arg(a), w.arg(b)));
    CHECK(bits(w.read(out)[0]) == bits(want));
  }
  SUBCASE("sgd: p + (-lr) * g") {
    // lr = -x, g = x, p = -1: p + (-lr) * g is x * x - 1.
    World w;
    const Tensor param = w.tensor({1}, {-1.0f});
    const Tensor grad = w.tensor({1}, {x});
    const Tensor buf = w.tensor({1}, {0.0f});
    SgdHyper h;
    h.lr = -x;
    w.run(launch_sgd(w.arg(param), w.arg(grad), w.arg(buf), h));
    CHECK(bits(w.read(param)[0]) == bits(want));
  }
  SUBCASE("sgd: g + weight_decay * p") {
    // g = -1, wd = x, p = x: g becomes x * x - 1; lr = -2^20 scales it exactly
    // to 2^9 (+ 2^-4 if fused) and adds it to p, where both results are exact.
    World w;
    const Tensor param = w.tensor({1}, {x});
    const Tensor grad = w.tensor({1}, {-1.0f});
    const Tensor buf = w.tensor({1}, {0.0f});
    SgdHyper h;
    h.lr = -0x1p20f;
    h.weight_decay = x;
    const float want_p = x + 0x1p20f * want;
    REQUIRE(want_p != x + 0x1p20f * fused);
    w.run(launch_sgd(w.arg(param), w.arg(grad), w.arg(buf), h));
    CHECK(bits(w.read(param)[0]) == bits(want_p));
  }
  SUBCASE("sgd: buf * momentum + (1 - dampening) * g") {
    // buf = x, momentum = x, dampening = 1 - x (so 1 - dampening = x exactly),
    // g = -x: unfused, the two products round alike and cancel to +0; fusing
    // either one into an fma leaves +-2^-24.
    World w;
    const Tensor param = w.tensor({1}, {0.0f});
    const Tensor grad = w.tensor({1}, {-x});
    const Tensor buf = w.tensor({1}, {x});
    SgdHyper h;
    h.lr = 0.0f;
    h.momentum = x;
    h.dampening = 1.0f - x;
    REQUIRE(1.0f - h.dampening == x);
    REQUIRE(std::fma(x, x, unfused(x, -x, 0.0f)) != 0.0f);
    REQUIRE(std::fma(x, -x, unfused(x, x, 0.0f)) != 0.0f);
    w.run(launch_sgd(w.arg(param), w.arg(grad), w.arg(buf), h));
    CHECK(bits(w.read(buf)[0]) == bits(0.0f));
  }
}

}  // namespace
}  // namespace capsim
