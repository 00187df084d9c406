// Kernel element bodies shared by the CPU backend and the CUDA backend.
//
// This header is compiled twice: by the host compiler for CpuBackend and by
// nvcc for cuda_reference/. Both sides must execute the same sequence of
// IEEE-754 single-precision operations, so:
//  - arithmetic goes through f_add/f_sub/f_mul/f_div/f_sqrt, which use the
//    explicitly rounded intrinsics on the device (never fused, whatever -fmad
//    says) and plain operators on the host (built with -ffp-contract=off);
//  - only + - * / and sqrt, which are correctly rounded on both sides; no powf:
//    Adam's beta powers are running products kept in device memory;
//  - reductions (sum, mm) run in one fixed order: each output element is owned
//    by one thread, which loops over its inputs in row-major order.
// Every body computes one output element `i` (0 <= i < grid size). Arguments are
// raw pointers, scalars and pointer-free Geometry structs only, so that every
// address a CUDA kernel node holds is visible to node introspection. The
// `*_value` functions are an element's arithmetic alone: the host's dense
// loops (model/cpu_backend.cpp) call them too, so both paths compute the same
// bits.
// See docs/architecture.md, "Kernels".
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define CAPSIM_HD __host__ __device__ __forceinline__
#else
#include <cfloat>
#include <cmath>
#define CAPSIM_HD inline
static_assert(FLT_EVAL_METHOD == 0, "float arithmetic must not use excess precision");
#endif

namespace capsim::kernels {

inline constexpr int kMaxGeometryRank = 8;

// Sizes and strides (in elements) of one pointer argument, relative to the
// pointer itself (the storage offset is already folded into the pointer), and
// the bytes of one element (4 for the float32 kernels; generic_mix reads and
// writes every dtype).
struct Geometry {
  std::int32_t rank = 0;
  std::int32_t elem_bytes = 4;
  std::int64_t sizes[kMaxGeometryRank] = {};
  std::int64_t strides[kMaxGeometryRank] = {};
};

CAPSIM_HD std::int64_t geometry_numel(const Geometry& g) {
  std::int64_t n = 1;
  for (int d = 0; d < g.rank; ++d) n *= g.sizes[d];
  return n;
}

// Element offset of the row-major linear index `i` within geometry `g`
// (0 <= i < numel(g)).
CAPSIM_HD std::int64_t element_offset(const Geometry& g, std::int64_t i) {
  if (g.rank == 1) return i * g.strides[0];  // the common, collapsed case
  std::int64_t offset = 0;
  for (int d = g.rank - 1; d >= 0; --d) {
    const std::int64_t size = g.sizes[d];
    offset += (i % size) * g.strides[d];
    i /= size;
  }
  return offset;
}

// --- Correctly rounded float32 operations ------------------------------------

CAPSIM_HD float f_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
CAPSIM_HD float f_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
CAPSIM_HD float f_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
CAPSIM_HD float f_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
CAPSIM_HD float f_sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
CAPSIM_HD bool is_nan(float a) {
  return a != a;
}

// --- Elementwise bodies ------------------------------------------------------

CAPSIM_HD void fill_elem(std::int64_t i, float* out, const Geometry& g_out, float value) {
  out[element_offset(g_out, i)] = value;
}

CAPSIM_HD void copy_elem(std::int64_t i, float* out, const Geometry& g_out, const float* in,
                         const Geometry& g_in) {
  out[element_offset(g_out, i)] = in[element_offset(g_in, i)];
}

enum class BinaryOp : std::int32_t { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3 };

CAPSIM_HD float apply_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return f_add(a, b);
    case BinaryOp::kSub: return f_sub(a, b);
    case BinaryOp::kMul: return f_mul(a, b);
    case BinaryOp::kDiv: return f_div(a, b);
  }
  return 0.0f;
}

// out = a (op) b; broadcasting is expressed by stride-0 dims in g_a / g_b.
CAPSIM_HD void binary_elem(std::int64_t i, BinaryOp op, float* out, const Geometry& g_out,
                           const float* a, const Geometry& g_a, const float* b,
                           const Geometry& g_b) {
  out[element_offset(g_out, i)] =
      apply_binary(op, a[element_offset(g_a, i)], b[element_offset(g_b, i)]);
}

CAPSIM_HD float neg_value(float x) {
  return -x;
}
CAPSIM_HD void neg_elem(std::int64_t i, float* out, const Geometry& g_out, const float* in,
                        const Geometry& g_in) {
  out[element_offset(g_out, i)] = neg_value(in[element_offset(g_in, i)]);
}

// relu as clamp_min(x, 0): NaN propagates, as in PyTorch.
CAPSIM_HD float relu_value(float x) {
  return (x > 0.0f || is_nan(x)) ? x : 0.0f;
}
CAPSIM_HD void relu_elem(std::int64_t i, float* out, const Geometry& g_out, const float* in,
                         const Geometry& g_in) {
  out[element_offset(g_out, i)] = relu_value(in[element_offset(g_in, i)]);
}

// threshold_backward(grad, result, 0): zero where result <= 0.
CAPSIM_HD float relu_backward_value(float grad, float result) {
  return result <= 0.0f ? 0.0f : grad;
}
CAPSIM_HD void relu_backward_elem(std::int64_t i, float* out, const Geometry& g_out,
                                  const float* grad, const Geometry& g_grad, const float* result,
                                  const Geometry& g_result) {
  out[element_offset(g_out, i)] =
      relu_backward_value(grad[element_offset(g_grad, i)], result[element_offset(g_result, i)]);
}

// --- Transcendental functions from + - * / and sqrt ---------------------------
//
// exp, log and tanh built from the correctly rounded operations above, so that
// both sides compute the same bits: within a few ulp of the true value (the
// tests measure it against the host's libm), not bit-equal to any libm, and
// not to PyTorch's kernels, which differ between the CPU and CUDA themselves.

CAPSIM_HD float bits_to_float(std::uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
CAPSIM_HD std::uint32_t float_to_bits(float f) {
  std::uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return bits;
}
CAPSIM_HD float f_inf() {
  return bits_to_float(0x7f800000u);
}
CAPSIM_HD float f_nan() {
  return bits_to_float(0x7fc00000u);
}
// 2^k for -126 <= k <= 127, exactly.
CAPSIM_HD float pow2i(int k) {
  return bits_to_float(static_cast<std::uint32_t>(k + 127) << 23);
}

// sum_{k=first}^{last} x^(k-first) / k!, in Horner form from the highest
// term (first <= last <= 10): the Taylor series of exp and expm1.
CAPSIM_HD float inverse_factorial_series(float x, int first, int last) {
  const float inverse_factorial[11] = {1.0f,
                                       1.0f,
                                       0.5f,
                                       1.66666666666667e-01f,
                                       4.16666666666667e-02f,
                                       8.33333333333333e-03f,
                                       1.38888888888889e-03f,
                                       1.98412698412698e-04f,
                                       2.48015873015873e-05f,
                                       2.75573192239859e-06f,
                                       2.75573192239859e-07f};
  float p = inverse_factorial[last];
  for (int k = last - 1; k >= first; --k) p = f_add(f_mul(p, x), inverse_factorial[k]);
  return p;
}

// e^r for |r| <= ln(2)/2, as 1 + r + ... + r^8/8!; the truncation error is
// below r^9/9! < 2^-27 relative.
CAPSIM_HD float exp_reduced(float r) {
  return inverse_factorial_series(r, 0, 8);
}

// e^x: x = k ln2 + r (Cody and Waite's two-part ln2, whose high part has
// trailing zero bits so that k * ln2_hi is exact), e^r by its series, then
// 2^k in two exact steps so that neither step overflows or goes subnormal
// too early.
CAPSIM_HD float f_exp(float x) {
  if (is_nan(x)) return x;
  if (x > 88.7228394f) return f_inf();
  if (x < -103.972084f) return 0.0f;
  const float t = f_mul(x, 1.44269502f);  // x / ln2
  const int k = static_cast<int>(t < 0.0f ? f_sub(t, 0.5f) : f_add(t, 0.5f));
  const float kf = static_cast<float>(k);
  float r = f_sub(x, f_mul(kf, 0.693145752f));  // ln2_hi = 0x3f317200
  r = f_sub(r, f_mul(kf, 1.42860677e-06f));     // ln2_lo
  const float p = exp_reduced(r);
  if (k > 127) return f_mul(f_mul(p, pow2i(127)), pow2i(k - 127));
  if (k < -126) return f_mul(f_mul(p, pow2i(-126)), pow2i(k + 126));
  return f_mul(p, pow2i(k));
}

// e^x - 1 for |x| <= 0.7, by its series to x^10/10!, without the
// cancellation of f_exp(x) - 1 near 0: x + x^2 (1/2! + x/3! + ...).
CAPSIM_HD float expm1_small(float x) {
  return f_add(f_mul(f_mul(inverse_factorial_series(x, 2, 10), x), x), x);
}

// ln x: x = 2^e * m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
// s = f / (2 + f), and ln(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)) with R the
// series 2/3 z + 2/5 z^2 + ... + 2/11 z^5 of 2 atanh(s) / s - 2.
CAPSIM_HD float f_log(float x) {
  if (is_nan(x) || x < 0.0f) return f_nan();
  if (x == 0.0f) return -f_inf();
  if (x == f_inf()) return x;
  int e = 0;
  if (x < 1.17549435e-38f) {  // subnormal: scale into the normal range first
    x = f_mul(x, 8388608.0f);
    e = -23;
  }
  const std::uint32_t bits = float_to_bits(x);
  e += static_cast<int>(bits >> 23) - 127;
  float m = bits_to_float((bits & 0x007fffffu) | 0x3f800000u);
  if (m > 1.41421354f) {
    m = f_mul(m, 0.5f);
    e += 1;
  }
  const float f = f_sub(m, 1.0f);
  const float s = f_div(f, f_add(2.0f, f));
  const float z = f_mul(s, s);
  float r = 1.81818181818182e-01f;  // 2/11
  r = f_add(f_mul(r, z), 2.22222222222222e-01f);
  r = f_add(f_mul(r, z), 2.85714285714286e-01f);
  r = f_add(f_mul(r, z), 4.00000000000000e-01f);
  r = f_add(f_mul(r, z), 6.66666666666667e-01f);
  r = f_mul(r, z);
  const float hfsq = f_mul(0.5f, f_mul(f, f));
  const float ef = static_cast<float>(e);
  const float tail = f_add(f_mul(ef, 1.42860677e-06f), f_mul(s, f_add(hfsq, r)));
  return f_add(f_mul(ef, 0.693145752f), f_add(f_sub(f, hfsq), tail));
}

// tanh x = e / (e + 2) with e = e^(2|x|) - 1, signed (so tanh(-0) = -0); 1
// beyond |x| = 9.1, where tanh rounds to 1 in float32.
CAPSIM_HD float f_tanh(float x) {
  if (is_nan(x)) return x;
  const bool negative = (float_to_bits(x) >> 31) != 0;  // -0.0f too
  const float a = negative ? -x : x;
  float t;
  if (a > 9.1f) {
    t = 1.0f;
  } else if (a <= 0.35f) {
    const float e = expm1_small(f_add(a, a));
    t = f_div(e, f_add(e, 2.0f));
  } else {
    t = f_sub(1.0f, f_div(2.0f, f_add(f_exp(f_add(a, a)), 1.0f)));
  }
  return negative ? -t : t;
}

// The float32 functions of unary_math, by the scalar that selects them.
enum class UnaryMath : std::int32_t {
  kExp = 0,
  kLog = 1,
  kSigmoid = 2,
  kTanh = 3,
  kRsqrt = 4,
  kSqrt = 5,
  kReciprocal = 6,
};
inline constexpr int kNumUnaryMath = 7;

CAPSIM_HD float apply_unary_math(UnaryMath op, float x) {
  switch (op) {
    case UnaryMath::kExp: return f_exp(x);
    case UnaryMath::kLog: return f_log(x);
    case UnaryMath::kSigmoid: return f_div(1.0f, f_add(1.0f, f_exp(-x)));
    case UnaryMath::kTanh: return f_tanh(x);
    case UnaryMath::kRsqrt: return f_div(1.0f, f_sqrt(x));
    case UnaryMath::kSqrt: return f_sqrt(x);
    case UnaryMath::kReciprocal: return f_div(1.0f, x);
  }
  return f_nan();
}

CAPSIM_HD void unary_math_elem(std::int64_t i, UnaryMath op, float* out, const Geometry& g_out,
                               const float* in, const Geometry& g_in) {
  out[element_offset(g_out, i)] = apply_unary_math(op, in[element_offset(g_in, i)]);
}

// --- Reductions, in one fixed order --------------------------------------------

// The input offset of output element i's first reduced element, from i's
// kept indices, and how many elements it reduces.
CAPSIM_HD std::int64_t reduction_base(std::int64_t i, const Geometry& g_in,
                                      std::uint32_t reduce_mask, std::int64_t* reduced_count) {
  std::int64_t base = 0;
  std::int64_t rest = i;
  *reduced_count = 1;
  for (int d = g_in.rank - 1; d >= 0; --d) {
    if ((reduce_mask >> d) & 1u) {
      *reduced_count *= g_in.sizes[d];
      continue;
    }
    base += (rest % g_in.sizes[d]) * g_in.strides[d];
    rest /= g_in.sizes[d];
  }
  return base;
}
// The offset of the j-th reduced element (row-major over the reduced dims).
CAPSIM_HD std::int64_t reduction_offset(std::int64_t base, std::int64_t j, const Geometry& g_in,
                                        std::uint32_t reduce_mask) {
  std::int64_t offset = base;
  for (int d = g_in.rank - 1; d >= 0; --d) {
    if (!((reduce_mask >> d) & 1u)) continue;
    offset += (j % g_in.sizes[d]) * g_in.strides[d];
    j /= g_in.sizes[d];
  }
  return offset;
}

// Sum over the dims of `g_in` whose bit is set in `reduce_mask`. `g_out` has the
// same rank as `g_in` with the reduced dims of size 1 (keepdim form; a caller
// that wants fewer dims passes stride-0 size-1 dims). Output element i adds its
// inputs in row-major order of the reduced dims, starting from +0.0f.
CAPSIM_HD void sum_elem(std::int64_t i, float* out, const Geometry& g_out, const float* in,
                        const Geometry& g_in, std::uint32_t reduce_mask) {
  std::int64_t count = 0;
  const std::int64_t base = reduction_base(i, g_in, reduce_mask, &count);
  float acc = 0.0f;
  for (std::int64_t j = 0; j < count; ++j) {
    acc = f_add(acc, in[reduction_offset(base, j, g_in, reduce_mask)]);
  }
  out[element_offset(g_out, i)] = acc;
}

// amax over the dims in `reduce_mask`, in sum_elem's order: the largest
// input, NaN if any input is NaN (as torch.amax), -inf over no inputs.
CAPSIM_HD void amax_elem(std::int64_t i, float* out, const Geometry& g_out, const float* in,
                         const Geometry& g_in, std::uint32_t reduce_mask) {
  std::int64_t count = 0;
  const std::int64_t base = reduction_base(i, g_in, reduce_mask, &count);
  float acc = -f_inf();
  for (std::int64_t j = 0; j < count && !is_nan(acc); ++j) {
    const float x = in[reduction_offset(base, j, g_in, reduce_mask)];
    if (is_nan(x) || x > acc) acc = x;
  }
  out[element_offset(g_out, i)] = acc;
}

// out[m, n] = sum_k a[m, k] * b[k, n], k ascending, no fused multiply-add.
CAPSIM_HD void mm_elem(std::int64_t i, float* out, const Geometry& g_out, const float* a,
                       const Geometry& g_a, const float* b, const Geometry& g_b) {
  const std::int64_t n_cols = g_out.sizes[1];
  const std::int64_t m = i / n_cols;
  const std::int64_t n = i % n_cols;
  const std::int64_t k_count = g_a.sizes[1];
  float acc = 0.0f;
  for (std::int64_t k = 0; k < k_count; ++k) {
    acc = f_add(acc, f_mul(a[m * g_a.strides[0] + k * g_a.strides[1]],
                           b[k * g_b.strides[0] + n * g_b.strides[1]]));
  }
  out[m * g_out.strides[0] + n * g_out.strides[1]] = acc;
}

// --- Optimizer updates ---------------------------------------------------------

// torch.optim.SGD, one element. The momentum buffer must already hold its first
// value (PyTorch clones the grad on the first step, outside any graph); with
// momentum == 0 the buffer is not touched.
CAPSIM_HD void sgd_elem(std::int64_t i, float* param, const Geometry& g_param, const float* grad,
                        const Geometry& g_grad, float* momentum_buffer, const Geometry& g_buf,
                        float lr, float momentum, float dampening, float weight_decay,
                        float nesterov) {
  float& p = param[element_offset(g_param, i)];
  float g = grad[element_offset(g_grad, i)];
  if (weight_decay != 0.0f) g = f_add(g, f_mul(weight_decay, p));
  if (momentum != 0.0f) {
    float& buf = momentum_buffer[element_offset(g_buf, i)];
    buf = f_add(f_mul(buf, momentum), f_mul(f_sub(1.0f, dampening), g));
    g = nesterov != 0.0f ? f_add(g, f_mul(momentum, buf)) : buf;
  }
  p = f_add(p, f_mul(-lr, g));
}

// Advances Adam's running beta powers: state = {beta1^t, beta2^t}. Runs as its
// own one-thread-per-element kernel before the update, so that a replayed graph
// advances the step count on the device without any argument changing.
CAPSIM_HD void adam_powers_elem(std::int64_t i, float* state, float beta1, float beta2) {
  state[i] = f_mul(state[i], i == 0 ? beta1 : beta2);
}

// torch.lerp's CPU formula, which Adam uses for exp_avg.
CAPSIM_HD float lerp(float self, float end, float weight) {
  const float w_abs = weight < 0.0f ? -weight : weight;
  return w_abs < 0.5f ? f_add(self, f_mul(weight, f_sub(end, self)))
                      : f_sub(end, f_mul(f_sub(end, self), f_sub(1.0f, weight)));
}

// torch.optim.Adam (decoupled == 0) or AdamW (decoupled != 0), one element,
// following _single_tensor_adam. `state` holds the already advanced powers.
CAPSIM_HD void adam_elem(std::int64_t i, float* param, const Geometry& g_param, const float* grad,
                         const Geometry& g_grad, float* exp_avg, const Geometry& g_avg,
                         float* exp_avg_sq, const Geometry& g_avg_sq, const float* state, float lr,
                         float beta1, float beta2, float eps, float weight_decay, float decoupled) {
  float& p = param[element_offset(g_param, i)];
  float& m = exp_avg[element_offset(g_avg, i)];
  float& v = exp_avg_sq[element_offset(g_avg_sq, i)];
  float g = grad[element_offset(g_grad, i)];
  if (weight_decay != 0.0f) {
    if (decoupled != 0.0f) {
      p = f_mul(p, f_sub(1.0f, f_mul(lr, weight_decay)));
    } else {
      g = f_add(g, f_mul(weight_decay, p));
    }
  }
  m = lerp(m, g, f_sub(1.0f, beta1));
  v = f_add(f_mul(v, beta2), f_mul(f_mul(f_sub(1.0f, beta2), g), g));
  const float bias_correction1 = f_sub(1.0f, state[0]);
  const float bias_correction2 = f_sub(1.0f, state[1]);
  const float step_size = f_div(lr, bias_correction1);
  const float denom = f_add(f_div(f_sqrt(v), f_sqrt(bias_correction2)), eps);
  p = f_add(p, f_mul(-step_size, f_div(m, denom)));
}

// --- Copies and fills across dtypes -------------------------------------------

// How typed_copy reads and writes an element: float32 or float64 as values
// (converted exactly, or rounded to nearest from float64 to float32), any
// other dtype as raw bits, which only a copy between equal dtypes uses.
enum class CopyElem : std::int32_t { kFloat32 = 0, kFloat64 = 1, kBits = 2 };

CAPSIM_HD float f_narrow(double d) {
#if defined(__CUDA_ARCH__)
  return __double2float_rn(d);
#else
  return static_cast<float>(d);
#endif
}

// out[i] = in[i] converted, or `value` converted when `use_value` (a fill).
CAPSIM_HD void typed_copy_elem(std::int64_t i, unsigned char* out, const Geometry& g_out,
                               CopyElem out_kind, const unsigned char* in, const Geometry& g_in,
                               CopyElem in_kind, float value, bool use_value) {
  unsigned char* o = out + element_offset(g_out, i) * g_out.elem_bytes;
  if (!use_value && in_kind == CopyElem::kBits) {
    const unsigned char* s = in + element_offset(g_in, i) * g_in.elem_bytes;
    for (int b = 0; b < g_out.elem_bytes; ++b) o[b] = s[b];
    return;
  }
  double v = value;
  if (!use_value) {
    const unsigned char* s = in + element_offset(g_in, i) * g_in.elem_bytes;
    if (in_kind == CopyElem::kFloat32) {
      float f;
      memcpy(&f, s, sizeof f);
      v = f;
    } else {
      memcpy(&v, s, sizeof v);
    }
  }
  if (out_kind == CopyElem::kFloat32) {
    const float f = f_narrow(v);
    memcpy(o, &f, sizeof f);
  } else {
    memcpy(o, &v, sizeof v);
  }
}

// --- The generic op ----------------------------------------------------------
//
// What a generic op (an aten op capsim has no exact kernel for) writes:
// docs/trace-format.md §4.1 defines it, this is that definition. Integer
// arithmetic only, so both sides agree bit for bit. It is not an element
// body: one call computes the whole launch, element after element, so that an
// operand overlapping the output is read as the earlier elements left it on
// both sides (the CUDA reference runs it in one thread).

inline constexpr int kMaxMixInputs = 4;

// How an element stores the 64-bit state: a floating dtype as a finite value
// of magnitude in [0.5, 1), bool as 0 or 1, an integer dtype its low bytes.
enum class MixStore : std::int32_t {
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kComplex64 = 4,
  kBool = 5,
  kInteger = 6,
};

// SplitMix64's finaliser: a bijection of 64-bit words.
CAPSIM_HD std::uint64_t mix64(std::uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z;
}

// An element's bytes, little-endian, zero-extended.
CAPSIM_HD std::uint64_t load_element(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int b = 0; b < bytes; ++b) v |= static_cast<std::uint64_t>(p[b]) << (8 * b);
  return v;
}
CAPSIM_HD void store_element(unsigned char* p, int bytes, std::uint64_t v) {
  for (int b = 0; b < bytes; ++b) p[b] = static_cast<unsigned char>(v >> (8 * b));
}

CAPSIM_HD std::uint64_t stored_bits(MixStore store, std::uint64_t h) {
  constexpr std::uint64_t kLow32 = 0xffffffffull;
  switch (store) {
    case MixStore::kFloat32: return (h & 0x807fffffull) | 0x3f000000ull;
    case MixStore::kFloat64: return (h & 0x800fffffffffffffull) | 0x3fe0000000000000ull;
    case MixStore::kFloat16: return (h & 0x83ffull) | 0x3800ull;
    case MixStore::kBFloat16: return (h & 0x807full) | 0x3f00ull;
    case MixStore::kComplex64:
      return ((h & 0x807fffffull) | 0x3f000000ull) |
             ((((h >> 32) & kLow32 & 0x807fffffull) | 0x3f000000ull) << 32);
    case MixStore::kBool: return h & 1ull;
    case MixStore::kInteger: return h;
  }
  return h;
}

// Folds element j's operands into h: each operand of M <= N elements at
// j mod M, a larger one at j, j + N, j + 2N, ...
CAPSIM_HD std::uint64_t mix_operands(std::uint64_t h, std::int64_t j, std::int64_t n,
                                     const unsigned char* const* in, const Geometry* g_in,
                                     int num_inputs) {
  for (int a = 0; a < num_inputs; ++a) {
    const Geometry& g = g_in[a];
    const std::int64_t m = geometry_numel(g);
    if (m == 0) continue;
    for (std::int64_t p = m <= n ? j % m : j; p < m; p += n) {
      h = mix64(h ^ load_element(in[a] + element_offset(g, p) * g.elem_bytes, g.elem_bytes));
      if (m <= n) break;
    }
  }
  return h;
}

// The whole launch: `seed` is the op's seed already combined with the result
// index; `first` starts each element from its index, otherwise from the bits
// the previous group of operands stored.
CAPSIM_HD void generic_mix_run(unsigned char* out, const Geometry& g_out,
                               const unsigned char* const* in, const Geometry* g_in, int num_inputs,
                               std::uint64_t seed, MixStore store, bool first) {
  const std::int64_t n = geometry_numel(g_out);
  const std::uint64_t base = mix64(seed);
  for (std::int64_t j = 0; j < n; ++j) {
    unsigned char* o = out + element_offset(g_out, j) * g_out.elem_bytes;
    const std::uint64_t start =
        first ? static_cast<std::uint64_t>(j) : load_element(o, g_out.elem_bytes);
    const std::uint64_t h = mix_operands(mix64(base ^ start), j, n, in, g_in, num_inputs);
    store_element(o, g_out.elem_bytes, stored_bits(store, h));
  }
}

// The 64-bit seed travels as four 16-bit float scalars (integers below 2^24
// are exact in float32).
CAPSIM_HD std::uint64_t seed_from_scalars(float s0, float s1, float s2, float s3) {
  return static_cast<std::uint64_t>(s0) | (static_cast<std::uint64_t>(s1) << 16) |
         (static_cast<std::uint64_t>(s2) << 32) | (static_cast<std::uint64_t>(s3) << 48);
}

}  // namespace capsim::kernels
