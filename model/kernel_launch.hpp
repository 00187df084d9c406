// Builders that turn tensors into checked KernelLaunches.
//
// A `TensorArg` is what a launch needs to know of a tensor: the address of its
// element 0 and its metadata. Each builder checks shapes and returns a
// KernelLaunch with the addresses baked in, or an Error naming the mismatch.
// Broadcasting is explicit: expand() the operand first (stride-0 dims).
#pragma once

#include <span>
#include <vector>

#include "model/kernel_table.hpp"
#include "model/result.hpp"
#include "model/tensor.hpp"

namespace capsim {

struct TensorArg {
  Address address = 0;
  TensorMeta meta;
};

Result<kernels::Geometry> to_geometry(const TensorMeta& meta);

Result<KernelLaunch> launch_fill(const TensorArg& out, float value);
Result<KernelLaunch> launch_copy(const TensorArg& out, const TensorArg& in);
// kind is one of kAdd, kSub, kMul, kDiv.
Result<KernelLaunch> launch_binary(KernelKind kind, const TensorArg& out, const TensorArg& a,
                                   const TensorArg& b);
// kind is kNeg or kRelu.
Result<KernelLaunch> launch_unary(KernelKind kind, const TensorArg& out, const TensorArg& in);
// exp, log, sigmoid, tanh, rsqrt, sqrt or reciprocal of `in`.
Result<KernelLaunch> launch_unary_math(kernels::UnaryMath op, const TensorArg& out,
                                       const TensorArg& in);
Result<KernelLaunch> launch_relu_backward(const TensorArg& out, const TensorArg& grad,
                                          const TensorArg& result);
// Sum of `in` over `dims`; `out` has the kept dims (keepdim or not).
Result<KernelLaunch> launch_sum(const TensorArg& out, const TensorArg& in,
                                const std::vector<std::int64_t>& dims);
// amax of `in` over `dims`, as launch_sum.
Result<KernelLaunch> launch_amax(const TensorArg& out, const TensorArg& in,
                                 const std::vector<std::int64_t>& dims);
// Tensor.sum_to_size(out.sizes): sums leading dims and dims broadcast from 1.
Result<KernelLaunch> launch_sum_to_size(const TensorArg& out, const TensorArg& in);
// The most multiply-adds an exact mm does: 2^24 (a 256x256 by 256x256
// product, a few milliseconds on the host). An mm over it is modelled from its
// metadata instead: generic_mix of both operands under the seed of
// "capsim.mm", whose cost is its reads (docs/trace-format.md §4.1), so that a
// real model's matrix multiply neither refuses the trace nor takes minutes.
// The decision is per op and depends only on the shapes, so eager, a
// recording's replay and the CUDA reference make the same one.
inline constexpr std::int64_t kMaxExactMmMultiplyAdds = std::int64_t{1} << 24;
// Whether an mm of [m, k] by [k, n] is over kMaxExactMmMultiplyAdds (an
// overflowing product is).
bool mm_over_exact_work(std::int64_t m, std::int64_t k, std::int64_t n);
Result<KernelLaunch> launch_mm(const TensorArg& out, const TensorArg& a, const TensorArg& b);

struct SgdHyper {
  float lr = 0.01f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};
// SGD without momentum, which has no buffer: `param -= lr * (grad + wd * param)`.
Result<KernelLaunch> launch_sgd_plain(const TensorArg& param, const TensorArg& grad,
                                      const SgdHyper& hyper);
Result<KernelLaunch> launch_sgd(const TensorArg& param, const TensorArg& grad,
                                const TensorArg& momentum_buffer, const SgdHyper& hyper);

struct AdamHyper {
  float lr = 0.001f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};
// `state` is the 2-float buffer {beta1^t, beta2^t}.
Result<KernelLaunch> launch_adam_powers(const TensorArg& state, const AdamHyper& hyper);
// kind is kAdam or kAdamW.
Result<KernelLaunch> launch_adam(KernelKind kind, const TensorArg& param, const TensorArg& grad,
                                 const TensorArg& exp_avg, const TensorArg& exp_avg_sq,
                                 const TensorArg& state, const AdamHyper& hyper);

// generic_mix (docs/trace-format.md §4.1): up to kMaxMixInputs operands of
// any dtype mixed into `out` under `seed` (the op's seed combined with the
// result index). `first`: the first group of operands; a later group starts
// from what the previous one stored.
Result<KernelLaunch> launch_generic_mix(const TensorArg& out, std::span<const TensorArg> inputs,
                                        std::uint64_t seed, bool first);

}  // namespace capsim
