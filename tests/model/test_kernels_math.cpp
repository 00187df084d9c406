// The transcendental kernels (unary_math) and amax: each function against the
// host's libm over a sweep of float32 values, within a few ulp, with the IEEE
// corner cases PyTorch's kernels give (NaN, infinities, signed zeros,
// subnormals); amax's order and NaN rule; the launch checks.
#include <cmath>
#include <limits>

#include "tests/model/kernel_test_world.hpp"

namespace capsim {
namespace {
using namespace kernel_test;
using kernels::UnaryMath;

// The distance in representable float32 values between a and b (same sign).
std::int64_t ulp_distance(float a, float b) {
  const auto key = [](float f) {
    const auto i = static_cast<std::int64_t>(std::bit_cast<std::int32_t>(f));
    return i < 0 ? -(i & 0x7fffffff) : i;
  };
  const std::int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

// The largest ulp distance of f from `truth` (libm in double, rounded) over
// `n` points of [lo, hi].
std::int64_t worst_ulps(UnaryMath op, double (*truth)(double), float lo, float hi, int n) {
  std::int64_t worst = 0;
  for (int i = 0; i <= n; ++i) {
    const float x = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n);
    const float want = static_cast<float>(truth(static_cast<double>(x)));
    const float got = kernels::apply_unary_math(op, x);
    if (std::isinf(want) || want == 0.0f) {
      CHECK(got == want);
      continue;
    }
    const std::int64_t d = ulp_distance(got, want);
    if (d > worst) {
      worst = d;
      INFO("x = " << x);
    }
  }
  return worst;
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
double reciprocal(double x) {
  return 1.0 / x;
}

TEST_CASE("unary_math: within a few ulp of libm over the float32 range") {
  CHECK(worst_ulps(UnaryMath::kExp, std::exp, -103.0f, 88.7f, 200000) <= 2);
  CHECK(worst_ulps(UnaryMath::kExp, std::exp, -1.0f, 1.0f, 20000) <= 1);
  CHECK(worst_ulps(UnaryMath::kLog, std::log, 1e-30f, 1e30f, 200000) <= 2);
  CHECK(worst_ulps(UnaryMath::kLog, std::log, 0.5f, 2.0f, 20000) <= 2);
  CHECK(worst_ulps(UnaryMath::kTanh, std::tanh, -10.0f, 10.0f, 200000) <= 3);
  CHECK(worst_ulps(UnaryMath::kTanh, std::tanh, -0.4f, 0.4f, 20000) <= 2);
  CHECK(worst_ulps(UnaryMath::kSigmoid, sigmoid, -80.0f, 80.0f, 200000) <= 3);
  CHECK(worst_ulps(UnaryMath::kRsqrt, rsqrt, 1e-30f, 1e30f, 20000) <= 1);
  CHECK(worst_ulps(UnaryMath::kSqrt, std::sqrt, 0.0f, 1e30f, 20000) == 0);
  CHECK(worst_ulps(UnaryMath::kReciprocal, reciprocal, 1e-30f, 1e30f, 20000) == 0);
}

TEST_CASE("unary_math: NaN, infinities, zeros and subnormals as PyTorch gives them") {
  const float inf = std::numeric_limits<float>::infinity();
  const float denorm = std::numeric_limits<float>::denorm_min();
  const auto f = [](UnaryMath op, float x) { return kernels::apply_unary_math(op, x); };
  for (int k = 0; k < kernels::kNumUnaryMath; ++k) {
    CHECK(std::isnan(f(static_cast<UnaryMath>(k), kNaN)));
  }
  CHECK(f(UnaryMath::kExp, inf) == inf);
  CHECK(f(UnaryMath::kExp, -inf) == 0.0f);
  CHECK(f(UnaryMath::kExp, 0.0f) == 1.0f);
  CHECK(f(UnaryMath::kExp, -0.0f) == 1.0f);
  CHECK(f(UnaryMath::kExp, 89.0f) == inf);
  CHECK(f(UnaryMath::kExp, -100.0f) > 0.0f);  // subnormal, not flushed
  CHECK(f(UnaryMath::kLog, 0.0f) == -inf);
  CHECK(f(UnaryMath::kLog, -0.0f) == -inf);
  CHECK(std::isnan(f(UnaryMath::kLog, -1.0f)));
  CHECK(f(UnaryMath::kLog, inf) == inf);
  CHECK(f(UnaryMath::kLog, 1.0f) == 0.0f);
  CHECK(ulp_distance(f(UnaryMath::kLog, denorm), static_cast<float>(std::log(denorm))) <= 1);
  CHECK(f(UnaryMath::kTanh, inf) == 1.0f);
  CHECK(f(UnaryMath::kTanh, -inf) == -1.0f);
  CHECK(std::bit_cast<std::uint32_t>(f(UnaryMath::kTanh, -0.0f)) ==
        std::bit_cast<std::uint32_t>(-0.0f));
  CHECK(f(UnaryMath::kTanh, denorm) == denorm);
  CHECK(f(UnaryMath::kSigmoid, inf) == 1.0f);
  CHECK(f(UnaryMath::kSigmoid, -inf) == 0.0f);
  CHECK(f(UnaryMath::kSigmoid, 0.0f) == 0.5f);
  CHECK(f(UnaryMath::kRsqrt, 0.0f) == inf);
  CHECK(std::isnan(f(UnaryMath::kRsqrt, -1.0f)));
  CHECK(f(UnaryMath::kReciprocal, -0.0f) == -inf);
}

TEST_CASE("unary_math runs through a strided view into a fresh output") {
  World w;
  const Tensor base = w.tensor({2, 3}, {0.0f, 1.0f, 2.0f, -1.0f, 4.0f, 9.0f});
  const Tensor in_t = w.view(base, as_strided(base.meta, {3, 2}, {1, 3}, 0, 24));
  const Tensor out = w.tensor({3, 2});
  w.run(launch_unary_math(UnaryMath::kSqrt, w.arg(out), w.arg(in_t)));
  const std::vector<float> got = w.read(out);
  CHECK(got[0] == 0.0f);
  CHECK(std::isnan(got[1]));  // sqrt(-1)
  CHECK(got[2] == 1.0f);
  CHECK(got[3] == 2.0f);
  CHECK(got[5] == 3.0f);
  const Tensor wrong = w.tensor({2, 3});
  CHECK_FALSE(launch_unary_math(UnaryMath::kExp, w.arg(wrong), w.arg(in_t)).ok());
}

TEST_CASE("amax over dims: the largest, NaN wins, keepdim or not") {
  World w;
  const Tensor in = w.tensor({2, 3}, {1.0f, 5.0f, -2.0f, kNaN, 0.0f, 7.0f});
  const Tensor rows = w.tensor({2});
  w.run(launch_amax(w.arg(rows), w.arg(in), {1}));
  const std::vector<float> r = w.read(rows);
  CHECK(r[0] == 5.0f);
  CHECK(std::isnan(r[1]));
  const Tensor cols = w.tensor({1, 3});
  w.run(launch_amax(w.arg(cols), w.arg(in), {0}));
  const std::vector<float> c = w.read(cols);
  CHECK(std::isnan(c[0]));
  CHECK(c[1] == 5.0f);
  CHECK(c[2] == 7.0f);
  const Tensor all = w.tensor({});
  const Tensor neg = w.tensor({3}, {-3.0f, -1.0f, -2.0f});
  w.run(launch_amax(w.arg(all), w.arg(neg), {0}));
  CHECK(w.read(all)[0] == -1.0f);
  CHECK_FALSE(launch_amax(w.arg(rows), w.arg(in), {0}).ok());  // out has the wrong sizes
}

}  // namespace
}  // namespace capsim
