// The reference kernels (see device_kernels.hpp): one __global__ function per kernel family,
// each calling model/kernel_bodies.hpp's element body once per thread, their launcher, and the
// thin runtime wrappers that keep CUDA headers out of the tests. The __global__ signatures must
// match kernel_abi.cpp's parameter lists.
#include <cuda_runtime.h>

#include "cuda_reference/device_kernels.hpp"
#include "model/kernel_bodies.hpp"

namespace capsim::cuda {

namespace {
namespace k = capsim::kernels;
using k::Geometry;

__device__ __forceinline__ std::int64_t thread_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__global__ void fill_kernel(std::int64_t n, float* out, Geometry g_out, float value) {
  const auto i = thread_index();
  if (i < n) k::fill_elem(i, out, g_out, value);
}
__global__ void copy_kernel(std::int64_t n, float* out, Geometry g_out, const float* in,
                            Geometry g_in) {
  const auto i = thread_index();
  if (i < n) k::copy_elem(i, out, g_out, in, g_in);
}
__global__ void binary_kernel(std::int64_t n, int op, float* out, Geometry g_out, const float* a,
                              Geometry g_a, const float* b, Geometry g_b) {
  const auto i = thread_index();
  if (i < n) k::binary_elem(i, static_cast<k::BinaryOp>(op), out, g_out, a, g_a, b, g_b);
}
__global__ void neg_kernel(std::int64_t n, float* out, Geometry g_out, const float* in,
                           Geometry g_in) {
  const auto i = thread_index();
  if (i < n) k::neg_elem(i, out, g_out, in, g_in);
}
__global__ void relu_kernel(std::int64_t n, float* out, Geometry g_out, const float* in,
                            Geometry g_in) {
  const auto i = thread_index();
  if (i < n) k::relu_elem(i, out, g_out, in, g_in);
}
__global__ void relu_backward_kernel(std::int64_t n, float* out, Geometry g_out, const float* grad,
                                     Geometry g_grad, const float* result, Geometry g_result) {
  const auto i = thread_index();
  if (i < n) k::relu_backward_elem(i, out, g_out, grad, g_grad, result, g_result);
}
__global__ void sum_kernel(std::int64_t n, float* out, Geometry g_out, const float* in,
                           Geometry g_in, std::uint32_t mask) {
  const auto i = thread_index();
  if (i < n) k::sum_elem(i, out, g_out, in, g_in, mask);
}
__global__ void amax_kernel(std::int64_t n, float* out, Geometry g_out, const float* in,
                            Geometry g_in, std::uint32_t mask) {
  const auto i = thread_index();
  if (i < n) k::amax_elem(i, out, g_out, in, g_in, mask);
}
__global__ void unary_math_kernel(std::int64_t n, float* out, Geometry g_out, const float* in,
                                  Geometry g_in, float op) {
  const auto i = thread_index();
  if (i < n) {
    k::unary_math_elem(i, static_cast<k::UnaryMath>(static_cast<int>(op)), out, g_out, in, g_in);
  }
}
__global__ void mm_kernel(std::int64_t n, float* out, Geometry g_out, const float* a, Geometry g_a,
                          const float* b, Geometry g_b) {
  const auto i = thread_index();
  if (i < n) k::mm_elem(i, out, g_out, a, g_a, b, g_b);
}
__global__ void sgd_kernel(std::int64_t n, float* param, Geometry g_param, const float* grad,
                           Geometry g_grad, float* buf, Geometry g_buf, float lr, float momentum,
                           float dampening, float weight_decay, float nesterov) {
  const auto i = thread_index();
  if (i < n) {
    k::sgd_elem(i, param, g_param, grad, g_grad, buf, g_buf, lr, momentum, dampening, weight_decay,
                nesterov);
  }
}
__global__ void sgd_plain_kernel(std::int64_t n, float* param, Geometry g_param, const float* grad,
                                 Geometry g_grad, float lr, float momentum, float dampening,
                                 float weight_decay, float nesterov) {
  const auto i = thread_index();
  // momentum is 0 (the launch checks it): sgd_elem never touches the buffer.
  if (i < n) {
    k::sgd_elem(i, param, g_param, grad, g_grad, nullptr, g_grad, lr, momentum, dampening,
                weight_decay, nesterov);
  }
}
__global__ void adam_powers_kernel(std::int64_t n, float* state, float beta1, float beta2) {
  const auto i = thread_index();
  if (i < n) k::adam_powers_elem(i, state, beta1, beta2);
}
__global__ void adam_kernel(std::int64_t n, float* param, Geometry g_param, const float* grad,
                            Geometry g_grad, float* exp_avg, Geometry g_avg, float* exp_avg_sq,
                            Geometry g_avg_sq, const float* state, float lr, float beta1,
                            float beta2, float eps, float weight_decay, float decoupled) {
  const auto i = thread_index();
  if (i < n) {
    k::adam_elem(i, param, g_param, grad, g_grad, exp_avg, g_avg, exp_avg_sq, g_avg_sq, state, lr,
                 beta1, beta2, eps, weight_decay, decoupled);
  }
}
__global__ void typed_copy_kernel(std::int64_t n, float* out, Geometry g_out, const float* in,
                                  Geometry g_in, float value, float use_value, float out_kind,
                                  float in_kind) {
  const auto i = thread_index();
  if (i < n) {
    k::typed_copy_elem(i, reinterpret_cast<unsigned char*>(out), g_out,
                       static_cast<k::CopyElem>(static_cast<int>(out_kind)),
                       reinterpret_cast<const unsigned char*>(in), g_in,
                       static_cast<k::CopyElem>(static_cast<int>(in_kind)), value,
                       use_value != 0.0f);
  }
}
// A generic op's values: the whole output in thread 0, element after element,
// as the CPU backend computes it (kernel_bodies.hpp says why).
__global__ void generic_mix_kernel(std::int64_t n, float* out, Geometry g_out, const float* a,
                                   Geometry g_a, const float* b, Geometry g_b, const float* c,
                                   Geometry g_c, const float* d, Geometry g_d, float seed0,
                                   float seed1, float seed2, float seed3, float store,
                                   float first) {
  if (thread_index() != 0 || n == 0) return;
  const unsigned char* in[k::kMaxMixInputs] = {
      reinterpret_cast<const unsigned char*>(a), reinterpret_cast<const unsigned char*>(b),
      reinterpret_cast<const unsigned char*>(c), reinterpret_cast<const unsigned char*>(d)};
  const Geometry g_in[k::kMaxMixInputs] = {g_a, g_b, g_c, g_d};
  k::generic_mix_run(reinterpret_cast<unsigned char*>(out), g_out, in, g_in, k::kMaxMixInputs,
                     k::seed_from_scalars(seed0, seed1, seed2, seed3),
                     static_cast<k::MixStore>(static_cast<int>(store)), first != 0.0f);
}

constexpr unsigned kThreads = 256;
}  // namespace

int launch_and_wait(const KernelLaunch& launch, float* const* p) {
  const std::int64_t n = grid_size(launch);
  if (n == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  const auto& g = launch.geometry;
  const auto& s = launch.scalars;
  switch (launch.kind) {
    case KernelKind::kFill: fill_kernel<<<blocks, kThreads>>>(n, p[0], g[0], s[0]); break;
    case KernelKind::kCopy: copy_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1]); break;
    case KernelKind::kAdd:
    case KernelKind::kSub:
    case KernelKind::kMul:
    case KernelKind::kDiv:
      binary_kernel<<<blocks, kThreads>>>(
          n, static_cast<int>(launch.kind) - static_cast<int>(KernelKind::kAdd), p[0], g[0], p[1],
          g[1], p[2], g[2]);
      break;
    case KernelKind::kNeg: neg_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1]); break;
    case KernelKind::kRelu: relu_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1]); break;
    case KernelKind::kReluBackward:
      relu_backward_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1], p[2], g[2]);
      break;
    case KernelKind::kSum:
      sum_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1], launch.reduce_mask);
      break;
    case KernelKind::kAmax:
      amax_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1], launch.reduce_mask);
      break;
    case KernelKind::kUnaryMath:
      unary_math_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1], s[0]);
      break;
    case KernelKind::kMm:
      mm_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1], p[2], g[2]);
      break;
    case KernelKind::kSgd:
      sgd_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1], p[2], g[2], s[0], s[1], s[2],
                                       s[3], s[4]);
      break;
    case KernelKind::kSgdPlain:
      sgd_plain_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1], s[0], s[1], s[2], s[3],
                                             s[4]);
      break;
    case KernelKind::kAdamPowers:
      adam_powers_kernel<<<blocks, kThreads>>>(n, p[0], s[0], s[1]);
      break;
    case KernelKind::kAdam:
    case KernelKind::kAdamW:
      adam_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1], p[2], g[2], p[3], g[3], p[4],
                                        s[0], s[1], s[2], s[3], s[4],
                                        launch.kind == KernelKind::kAdamW ? 1.0f : 0.0f);
      break;
    case KernelKind::kTypedCopy:
      typed_copy_kernel<<<blocks, kThreads>>>(n, p[0], g[0], p[1], g[1], s[0], s[1], s[2], s[3]);
      break;
    case KernelKind::kGenericMix:
      generic_mix_kernel<<<1, 1>>>(n, p[0], g[0], p[1], g[1], p[2], g[2], p[3], g[3], p[4], g[4],
                                   s[0], s[1], s[2], s[3], s[4], s[5]);
      break;
  }
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  return cudaDeviceSynchronize();
}

const void* kernel_function(KernelKind kind) {
  switch (kind) {
    case KernelKind::kFill: return reinterpret_cast<const void*>(&fill_kernel);
    case KernelKind::kCopy: return reinterpret_cast<const void*>(&copy_kernel);
    case KernelKind::kAdd:
    case KernelKind::kSub:
    case KernelKind::kMul:
    case KernelKind::kDiv: return reinterpret_cast<const void*>(&binary_kernel);
    case KernelKind::kNeg: return reinterpret_cast<const void*>(&neg_kernel);
    case KernelKind::kRelu: return reinterpret_cast<const void*>(&relu_kernel);
    case KernelKind::kReluBackward: return reinterpret_cast<const void*>(&relu_backward_kernel);
    case KernelKind::kSum: return reinterpret_cast<const void*>(&sum_kernel);
    case KernelKind::kAmax: return reinterpret_cast<const void*>(&amax_kernel);
    case KernelKind::kUnaryMath: return reinterpret_cast<const void*>(&unary_math_kernel);
    case KernelKind::kMm: return reinterpret_cast<const void*>(&mm_kernel);
    case KernelKind::kSgd: return reinterpret_cast<const void*>(&sgd_kernel);
    case KernelKind::kSgdPlain: return reinterpret_cast<const void*>(&sgd_plain_kernel);
    case KernelKind::kAdamPowers: return reinterpret_cast<const void*>(&adam_powers_kernel);
    case KernelKind::kAdam:
    case KernelKind::kAdamW: return reinterpret_cast<const void*>(&adam_kernel);
    case KernelKind::kTypedCopy: return reinterpret_cast<const void*>(&typed_copy_kernel);
    case KernelKind::kGenericMix: return reinterpret_cast<const void*>(&generic_mix_kernel);
  }
  return nullptr;
}

int device_malloc(float** out, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(out), bytes);
}
int device_free(float* ptr) {
  return cudaFree(ptr);
}
int copy_to_device(float* dst, const float* src, std::size_t bytes) {
  return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}
int copy_to_host(float* dst, const float* src, std::size_t bytes) {
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}
std::string error_name(int error) {
  return cudaGetErrorName(static_cast<cudaError_t>(error));
}

}  // namespace capsim::cuda
