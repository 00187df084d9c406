// Optimizer kernels: adam_powers, Adam and AdamW against float64 references of
// torch.optim's formulas, and SGD (momentum, dampening, nesterov, weight decay).
#include "tests/model/kernel_test_world.hpp"

namespace capsim {
namespace {
using namespace kernel_test;

TEST_CASE("adam_powers multiplies the running powers by beta1 and beta2") {
  World w;
  const Tensor state = w.tensor({2}, {1.0f, 1.0f});
  AdamHyper hyper;
  hyper.beta1 = 0.5f;
  hyper.beta2 = 0.25f;
  w.run(launch_adam_powers(w.arg(state), hyper));
  check_equal(w.read(state), {0.5f, 0.25f});
  w.run(launch_adam_powers(w.arg(state), hyper));
  check_equal(w.read(state), {0.25f, 0.0625f});
  hyper.beta1 = 0.9f;
  hyper.beta2 = 0.999f;
  w.run(launch_adam_powers(w.arg(state), hyper));
  check_equal(w.read(state), {0.25f * 0.9f, 0.0625f * 0.999f});
}

// --- Optimizers against float64 references --------------------------------------

// PyTorch's _single_tensor_adam in float64. The bias corrections come from the
// beta powers the caller passes (running products, as the kernel keeps them).
struct AdamReference {
  std::vector<double> param, exp_avg, exp_avg_sq;

  void step(const std::vector<float>& grad, const AdamHyper& h, bool decoupled, double beta1_power,
            double beta2_power) {
    const double lr = h.lr, beta1 = h.beta1, beta2 = h.beta2, eps = h.eps, wd = h.weight_decay;
    const double bias_correction1 = 1.0 - beta1_power;
    const double bias_correction2 = 1.0 - beta2_power;
    const double step_size = lr / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);
    for (std::size_t i = 0; i < param.size(); ++i) {
      double g = grad[i];
      double& p = param[i];
      if (wd != 0.0) {
        if (decoupled) {
          p *= 1.0 - lr * wd;  // AdamW: param.mul_(1 - lr * weight_decay)
        } else {
          g += wd * p;  // Adam: grad = grad.add(param, alpha=weight_decay)
        }
      }
      exp_avg[i] += (1.0 - beta1) * (g - exp_avg[i]);  // exp_avg.lerp_(grad, 1 - beta1)
      exp_avg_sq[i] = exp_avg_sq[i] * beta2 + (1.0 - beta2) * g * g;
      const double denom = std::sqrt(exp_avg_sq[i]) / bias_correction2_sqrt + eps;
      p += -step_size * exp_avg[i] / denom;  // param.addcdiv_(exp_avg, denom, value=-step_size)
    }
  }
};

// max over i of |got[i] - want[i]| / max(|want[i]|, floor).
double worst_relative_error(const std::vector<float>& got, const std::vector<double>& want,
                            double floor) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double scale = std::max(std::abs(want[i]), floor);
    const double err = std::abs(static_cast<double>(got[i]) - want[i]) / scale;
    // A NaN must fail, not compare false.
    worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : std::max(worst, err);
  }
  return worst;
}

TEST_CASE("adam and adamw match a float64 reference of torch.optim over 10 steps") {
  struct AdamCase {
    const char* name;
    KernelKind kind;
    float weight_decay;
  };
  const AdamCase cases[] = {
      {"adam", KernelKind::kAdam, 0.0f},
      {"adam, weight_decay 0.01", KernelKind::kAdam, 0.01f},
      {"adamw, weight_decay 0.01", KernelKind::kAdamW, 0.01f},
      {"adamw, weight_decay 0.1", KernelKind::kAdamW, 0.1f},
  };
  constexpr std::int64_t kN = 1000;
  constexpr int kSteps = 10;
  for (const AdamCase& c : cases) {
    const std::string case_name = c.name;
    CAPTURE(case_name);
    const bool decoupled = c.kind == KernelKind::kAdamW;
    World w;
    Lcg rng(20240611u);
    const std::vector<float> p0 = rng.floats(kN, -1.0f, 1.0f);
    AdamHyper hyper;
    hyper.lr = 1e-3f;
    hyper.weight_decay = c.weight_decay;
    const Tensor param = w.tensor({kN}, p0);
    const Tensor grad = w.tensor({kN});
    const Tensor exp_avg = w.tensor({kN}, std::vector<float>(kN, 0.0f));
    const Tensor exp_avg_sq = w.tensor({kN}, std::vector<float>(kN, 0.0f));
    const Tensor state = w.tensor({2}, {1.0f, 1.0f});
    const auto powers = launch_adam_powers(w.arg(state), hyper);
    const auto update = launch_adam(c.kind, w.arg(param), w.arg(grad), w.arg(exp_avg),
                                    w.arg(exp_avg_sq), w.arg(state), hyper);

    // `exact` keeps the beta powers in float64; `own` is handed the kernel's
    // float32 powers, read back from the state buffer after each adam_powers.
    AdamReference exact, own;
    for (AdamReference* r : {&exact, &own}) {
      r->param.assign(p0.begin(), p0.end());
      r->exp_avg.assign(kN, 0.0);
      r->exp_avg_sq.assign(kN, 0.0);
    }
    double beta1_power = 1.0, beta2_power = 1.0;
    for (int step = 1; step <= kSteps; ++step) {
      // Gradients of mixed magnitudes: some ~1e-3, some ~1e-8 so that
      // sqrt(v_hat) ~ eps and eps's place in the denominator matters.
      std::vector<float> g = rng.floats(kN, -1.0f, 1.0f);
      for (std::size_t i = 0; i < g.size(); i += 7) g[i] *= 1e-3f;
      for (std::size_t i = 3; i < g.size(); i += 11) g[i] *= 1e-8f;
      w.write_raw(grad, g);
      w.run(powers);
      w.run(update);
      beta1_power *= static_cast<double>(hyper.beta1);
      beta2_power *= static_cast<double>(hyper.beta2);
      exact.step(g, hyper, decoupled, beta1_power, beta2_power);
      const auto powers_now = w.read(state);
      own.step(g, hyper, decoupled, powers_now[0], powers_now[1]);
    }
    const auto got = w.read(param);

    // Against the float64 powers, the error is measured relative to
    // max(|ref|, 1): the params are O(1) (drawn from [-1, 1]) and float32 errors
    // are absolute on the scale of the operands. One of them does not shrink
    // with the param: 1 - beta2^t cancels (beta2^t ~ 0.99), so the float32
    // running product, exact to ~2^-24 absolute, gives bias_correction2 only to
    // ~2^-24 / (1 - beta2) ~ 6e-5 relative. That puts up to ~lr * 3e-5 of error
    // on every element's update each step (~5e-6 relative to a param of 1e-3,
    // measured), so a floor of 1e-3 would demand what float32 cannot give.
    const double err_exact = worst_relative_error(got, exact.param, 1.0);
    CHECK_MESSAGE(err_exact <= 1e-6, "worst error vs float64 powers " << err_exact);
    // Handed the kernel's own powers, the rest of the update carries only a
    // few roundings per step, relative to each value: here the floor is 1e-3
    // (errors on params that cancel to below 1e-3 are absolute, ~1e-10).
    const double err_own = worst_relative_error(got, own.param, 1e-3);
    CHECK_MESSAGE(err_own <= 1e-6, "worst error vs the kernel's powers " << err_own);
    // exp_avg_sq is a sum of non-negative terms: plainly relative (floor 1e-30).
    const double err_v = worst_relative_error(w.read(exp_avg_sq), own.exp_avg_sq, 1e-30);
    CHECK_MESSAGE(err_v <= 1e-6, "worst error of exp_avg_sq " << err_v);
    // The beta powers themselves: 10 float32 products, each good to 2^-24.
    const auto powers_end = w.read(state);
    CHECK(std::abs(powers_end[0] - beta1_power) / beta1_power <= 10 * 0x1p-24);
    CHECK(std::abs(powers_end[1] - beta2_power) / beta2_power <= 10 * 0x1p-24);
    MESSAGE(case_name << ": worst error " << err_exact << " (float64 powers), " << err_own
                      << " (kernel powers), " << err_v << " (exp_avg_sq)");
  }
}

TEST_CASE("adam and adamw take different paths for weight decay") {
  // One element, exact dyadic inputs, first step: with p = 1, g = 0, wd = 0.5,
  // Adam sees g = 0.5 and moves p by -lr (m / sqrt(v_hat) = sign(g) on step 1),
  // AdamW shrinks p to 1 - lr * wd first and, with g = 0, moves it by 0.
  for (const KernelKind kind : {KernelKind::kAdam, KernelKind::kAdamW}) {
    CAPTURE(static_cast<int>(kind));
    World w;
    AdamHyper hyper;
    hyper.lr = 0.25f;
    hyper.beta1 = 0.5f;
    hyper.beta2 = 0.75f;
    // AdamW sees g = 0 here, so m = v = 0 and eps must keep 0 / 0 away.
    hyper.eps = kind == KernelKind::kAdamW ? 1.0f : 0.0f;
    hyper.weight_decay = 0.5f;
    const Tensor param = w.tensor({1}, {1.0f});
    const Tensor grad = w.tensor({1}, {0.0f});
    const Tensor m = w.tensor({1}, {0.0f});
    const Tensor v = w.tensor({1}, {0.0f});
    const Tensor state = w.tensor({2}, {1.0f, 1.0f});
    w.run(launch_adam_powers(w.arg(state), hyper));
    w.run(launch_adam(kind, w.arg(param), w.arg(grad), w.arg(m), w.arg(v), w.arg(state), hyper));
    if (kind == KernelKind::kAdam) {
      // g = 0.5; m = 0.25; v = 0.0625; bc1 = 0.5, bc2 = 0.25; step_size = 0.5;
      // denom = 0.25 / 0.5 = 0.5; p = 1 - 0.5 * 0.5 = 0.75.
      check_equal(w.read(m), {0.25f});
      check_equal(w.read(v), {0.0625f});
      check_equal(w.read(param), {0.75f});
    } else {
      // p = 1 * (1 - 0.125) = 0.875; m = v = 0; update 0 / 1 = 0.
      check_equal(w.read(m), {0.0f});
      check_equal(w.read(v), {0.0f});
      check_equal(w.read(param), {0.875f});
    }
  }
}

// torch.optim.SGD for one element in float64, from the second step on (the
// momentum buffer already holds its first value).
struct SgdReference {
  double param, buf;
  void step(double g, const SgdHyper& h) {
    if (h.weight_decay != 0.0f) g += static_cast<double>(h.weight_decay) * param;
    if (h.momentum != 0.0f) {
      buf = buf * static_cast<double>(h.momentum) + (1.0 - static_cast<double>(h.dampening)) * g;
      g = h.nesterov ? g + static_cast<double>(h.momentum) * buf : buf;
    }
    param += -static_cast<double>(h.lr) * g;
  }
};

TEST_CASE("sgd known values: plain, momentum, dampening, nesterov, weight decay") {
  // p = 1, g = 0.5, buf = 0.25, lr = 0.5: every result is a short dyadic.
  struct SgdCase {
    const char* name;
    SgdHyper hyper;
    float want_param;
    float want_buf;
  };
  const SgdCase cases[] = {
      // p = 1 - 0.5 * 0.5; buf untouched.
      {"plain", {0.5f, 0.0f, 0.0f, 0.0f, false}, 0.75f, 0.25f},
      // buf = 0.25 * 0.5 + 0.5 = 0.625; p = 1 - 0.3125.
      {"momentum", {0.5f, 0.5f, 0.0f, 0.0f, false}, 0.6875f, 0.625f},
      // buf = 0.125 + 0.5 * 0.5 = 0.375; p = 1 - 0.1875.
      {"dampening", {0.5f, 0.5f, 0.5f, 0.0f, false}, 0.8125f, 0.375f},
      // buf = 0.625; g = 0.5 + 0.5 * 0.625 = 0.8125; p = 1 - 0.40625.
      {"nesterov", {0.5f, 0.5f, 0.0f, 0.0f, true}, 0.59375f, 0.625f},
      // g = 0.5 + 0.5 * 1 = 1; buf = 0.125 + 1 = 1.125; p = 1 - 0.5625.
      {"weight decay", {0.5f, 0.5f, 0.0f, 0.5f, false}, 0.4375f, 1.125f},
      // g = 1; p = 1 - 0.5; buf untouched.
      {"weight decay, no momentum", {0.5f, 0.0f, 0.0f, 0.5f, false}, 0.5f, 0.25f},
  };
  for (const SgdCase& c : cases) {
    const std::string case_name = c.name;
    CAPTURE(case_name);
    World w;
    const Tensor param = w.tensor({1}, {1.0f});
    const Tensor grad = w.tensor({1}, {0.5f});
    const Tensor buf = w.tensor({1}, {0.25f});
    w.run(launch_sgd(w.arg(param), w.arg(grad), w.arg(buf), c.hyper));
    check_equal(w.read(param), {c.want_param});
    check_equal(w.read(buf), {c.want_buf});
  }
}

TEST_CASE("sgd with momentum, nesterov and weight decay matches a float64 reference") {
  struct SgdCase {
    const char* name;
    SgdHyper hyper;
  };
  const SgdCase cases[] = {
      {"momentum 0.9", {0.1f, 0.9f, 0.0f, 0.0f, false}},
      {"momentum 0.9, dampening 0.1", {0.1f, 0.9f, 0.1f, 0.0f, false}},
      {"nesterov", {0.1f, 0.9f, 0.0f, 0.0f, true}},
      {"nesterov, weight decay 1e-2", {0.1f, 0.9f, 0.0f, 1e-2f, true}},
      {"momentum, weight decay 1e-2", {0.05f, 0.8f, 0.0f, 1e-2f, false}},
      {"no momentum, weight decay 1e-2", {0.1f, 0.0f, 0.0f, 1e-2f, false}},
  };
  constexpr std::int64_t kN = 256;
  constexpr int kSteps = 5;
  for (const SgdCase& c : cases) {
    const std::string case_name = c.name;
    CAPTURE(case_name);
    World w;
    Lcg rng(77u);
    const std::vector<float> p0 = rng.floats(kN, -1.0f, 1.0f);
    const std::vector<float> b0 = rng.floats(kN, -1.0f, 1.0f);
    const Tensor param = w.tensor({kN}, p0);
    const Tensor grad = w.tensor({kN});
    const Tensor buf = w.tensor({kN}, b0);
    const auto launch = launch_sgd(w.arg(param), w.arg(grad), w.arg(buf), c.hyper);
    std::vector<SgdReference> ref(kN);
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = {p0[i], b0[i]};
    for (int step = 0; step < kSteps; ++step) {
      const std::vector<float> g = rng.floats(kN, -1.0f, 1.0f);
      w.write_raw(grad, g);
      w.run(launch);
      for (std::size_t i = 0; i < ref.size(); ++i) ref[i].step(g[i], c.hyper);
    }
    std::vector<double> want_param(kN), want_buf(kN);
    for (std::size_t i = 0; i < ref.size(); ++i) {
      want_param[i] = ref[i].param;
      want_buf[i] = ref[i].buf;
    }
    // Relative to max(|ref|, 1): values and updates are O(1), and a param that
    // cancels to near zero keeps the absolute float32 error (~2^-24) of the O(1)
    // operands it came from.
    const double err_param = worst_relative_error(w.read(param), want_param, 1.0);
    const double err_buf = worst_relative_error(w.read(buf), want_buf, 1.0);
    CHECK_MESSAGE(err_param <= 1e-6, "worst param error " << err_param);
    CHECK_MESSAGE(err_buf <= 1e-6, "worst momentum_buffer error " << err_buf);
    if (c.hyper.momentum == 0.0f) {
      // The buffer is not touched at all.
      const auto after = w.read(buf);
      CHECK(std::memcmp(after.data(), b0.data(), b0.size() * sizeof(float)) == 0);
    }
    MESSAGE(case_name << ": worst error " << err_param << " (param), " << err_buf << " (buf)");
  }
}

}  // namespace
}  // namespace capsim
