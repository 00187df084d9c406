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
// address a CUDA kernel node holds is visible to node introspection.
// See docs/architecture.md, "Kernels".
#pragma once

#include <cstdint>

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
// pointer itself (the storage offset is already folded into the pointer).
struct Geometry {
  std::int32_t rank = 0;
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

CAPSIM_HD void neg_elem(std::int64_t i, float* out, const Geometry& g_out, const float* in,
                        const Geometry& g_in) {
  out[element_offset(g_out, i)] = -in[element_offset(g_in, i)];
}

// relu as clamp_min(x, 0): NaN propagates, as in PyTorch.
CAPSIM_HD void relu_elem(std::int64_t i, float* out, const Geometry& g_out, const float* in,
                         const Geometry& g_in) {
  const float x = in[element_offset(g_in, i)];
  out[element_offset(g_out, i)] = (x > 0.0f || is_nan(x)) ? x : 0.0f;
}

// threshold_backward(grad, result, 0): zero where result <= 0.
CAPSIM_HD void relu_backward_elem(std::int64_t i, float* out, const Geometry& g_out,
                                  const float* grad, const Geometry& g_grad, const float* result,
                                  const Geometry& g_result) {
  const float r = result[element_offset(g_result, i)];
  out[element_offset(g_out, i)] = r <= 0.0f ? 0.0f : grad[element_offset(g_grad, i)];
}

// --- Reductions, in one fixed order --------------------------------------------

// Sum over the dims of `g_in` whose bit is set in `reduce_mask`. `g_out` has the
// same rank as `g_in` with the reduced dims of size 1 (keepdim form; a caller
// that wants fewer dims passes stride-0 size-1 dims). Output element i adds its
// inputs in row-major order of the reduced dims, starting from +0.0f.
CAPSIM_HD void sum_elem(std::int64_t i, float* out, const Geometry& g_out, const float* in,
                        const Geometry& g_in, std::uint32_t reduce_mask) {
  // Offset of the first input element of this output, from i's kept indices.
  std::int64_t base = 0;
  std::int64_t rest = i;
  std::int64_t reduced_count = 1;
  for (int d = g_in.rank - 1; d >= 0; --d) {
    if ((reduce_mask >> d) & 1u) {
      reduced_count *= g_in.sizes[d];
      continue;
    }
    base += (rest % g_in.sizes[d]) * g_in.strides[d];
    rest /= g_in.sizes[d];
  }
  float acc = 0.0f;
  for (std::int64_t j = 0; j < reduced_count; ++j) {
    std::int64_t offset = base;
    std::int64_t r = j;
    for (int d = g_in.rank - 1; d >= 0; --d) {
      if (!((reduce_mask >> d) & 1u)) continue;
      offset += (r % g_in.sizes[d]) * g_in.strides[d];
      r /= g_in.sizes[d];
    }
    acc = f_add(acc, in[offset]);
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

}  // namespace capsim::kernels
