// Device tests: the CUDA launchers of cuda_reference/ against the CPU backend.
//
// Each case builds launches over a simulated DeviceMemory world, runs every
// launch on the host (run_kernel_on_host) and on the GPU (one device buffer per
// pointer argument, filled with the same input bytes, launch_and_wait), and
// requires the two to agree byte for byte on every argument afterwards: the
// shared kernel bodies must compute the same float32 sequence on both sides
// (no FMA, no flush-to-zero, correctly rounded division and sqrt).
//
// Without a usable GPU the executable prints "no CUDA device: skipped (<reason>)"
// and exits 77 (ctest's SKIP_RETURN_CODE) before any other CUDA call.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "cuda_reference/cuda_probe.hpp"
#include "cuda_reference/device_kernels.hpp"
#include "model/caching_allocator.hpp"
#include "model/cpu_backend.hpp"
#include "model/device_memory.hpp"
#include "model/kernel_launch.hpp"
#include "model/kernel_table.hpp"
#include "model/tensor.hpp"
#include "model/tensor_store.hpp"
#include "tests/support/lcg.hpp"

namespace capsim {
namespace {

using testing::Lcg;

// Uniform values with the corner cases sprinkled in: zeros of both signs,
// subnormals (which must not be flushed) and values near 1.
std::vector<float> spiky(Lcg& rng, std::int64_t n) {
  std::vector<float> out = rng.floats(n, -2.0f, 2.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::denorm_min(),
                            -3 * std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::min() * 0.75f,
                            1.0f + 0x1p-12f};
  std::size_t k = 0;
  for (std::size_t i = 5; i < out.size(); i += 13) out[i] = specials[k++ % std::size(specials)];
  return out;
}

// "1.5 (0x3fc00000)": the value and its bits, for a float that may differ in
// the last bit only.
std::string describe(const std::vector<float>& v, std::size_t i) {
  if (i >= v.size()) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%.9g (0x%08x)", static_cast<double>(v[i]),
                static_cast<unsigned>(std::bit_cast<std::uint32_t>(v[i])));
  return text;
}

template <typename T>
void require_ok(const Result<T>& r) {
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
}

void require_cuda(int rc, const char* what) {
  REQUIRE_MESSAGE(rc == 0, what << ": " << cuda::error_name(rc));
}

// One simulated device and, beside it, the real one: every pointer argument of
// a launch gets its own device buffer, filled from the simulated memory the
// first time its range is seen. Distinct arguments must therefore never overlap
// in simulated memory (separate device buffers could not alias them); the same
// range used again (a param updated step after step) reuses its buffer.
class Mirror {
 public:
  Mirror() = default;
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;
  ~Mirror() {
    for (const Buffer& b : buffers_) (void)cuda::device_free(b.device);
  }

  Tensor tensor(const Dims& sizes, const std::vector<float>& values) {
    auto t = store_.empty(sizes);
    require_ok(t);
    REQUIRE(static_cast<std::int64_t>(values.size()) == numel(sizes));
    require_ok(memory_.write(address(*t), std::as_bytes(std::span(values))));
    return *t;
  }
  Tensor filled(const Dims& sizes, float value) {
    return tensor(sizes, std::vector<float>(static_cast<std::size_t>(numel(sizes)), value));
  }
  Tensor view(const Tensor& base, const Result<TensorMeta>& meta) {
    require_ok(meta);
    auto v = store_.view(base.id, *meta);
    require_ok(v);
    return *v;
  }
  TensorArg arg(const Tensor& t) const { return TensorArg{address(t), t.meta}; }

  // Runs `launch` on both sides and requires every argument's bytes to agree.
  void run_both(const Result<KernelLaunch>& built, const std::string& what) {
    CAPTURE(what);
    require_ok(built);
    const KernelLaunch& launch = *built;
    const KernelSignature& s = signature(launch.kind);
    std::array<float*, kMaxKernelPointers> ptrs{};
    for (int p = 0; p < s.num_pointers; ++p) ptrs[p] = buffer_for(pointer_extent(launch, p));
    require_ok(run_kernel_on_host(launch, memory_));
    require_cuda(cuda::launch_and_wait(launch, ptrs.data()), "launch_and_wait");
    for (int p = 0; p < s.num_pointers; ++p) {
      const AddressRange range = pointer_extent(launch, p);
      std::vector<float> host(range.bytes / sizeof(float));
      std::vector<float> device(host.size());
      require_ok(memory_.read(range.base, std::as_writable_bytes(std::span(host))));
      require_cuda(cuda::copy_to_host(device.data(), ptrs[p], range.bytes), "copy_to_host");
      const bool same = std::memcmp(host.data(), device.data(), range.bytes) == 0;
      std::size_t first = 0;
      while (!same && first < host.size() &&
             std::memcmp(&host[first], &device[first], sizeof(float)) == 0) {
        ++first;
      }
      CHECK_MESSAGE(same, kernel_name(launch.kind)
                              << " argument " << s.pointer_names[p] << " ("
                              << access_name(s.pointer_access[p]) << "): first difference at float "
                              << first << ": host " << describe(host, first) << ", device "
                              << describe(device, first));
    }
  }

 private:
  struct Buffer {
    AddressRange range;
    float* device = nullptr;
  };

  Address address(const Tensor& t) const {
    auto a = store_.data_address(t.id);
    require_ok(a);
    return *a;
  }

  float* buffer_for(const AddressRange& range) {
    for (const Buffer& b : buffers_) {
      if (b.range == range) return b.device;
      REQUIRE_MESSAGE(!b.range.overlaps(range),
                      "test setup: arguments " << hex(b.range.base) << "+" << b.range.bytes
                                               << " and " << hex(range.base) << "+" << range.bytes
                                               << " overlap but would get separate buffers");
    }
    Buffer b{range, nullptr};
    // At least one float, so that an empty argument still gets a real pointer.
    const std::size_t bytes = std::max<std::size_t>(range.bytes, sizeof(float));
    require_cuda(cuda::device_malloc(&b.device, bytes), "device_malloc");
    buffers_.push_back(b);
    if (range.bytes > 0) {
      std::vector<float> host(range.bytes / sizeof(float));
      require_ok(memory_.read(range.base, std::as_writable_bytes(std::span(host))));
      require_cuda(cuda::copy_to_device(b.device, host.data(), range.bytes), "copy_to_device");
    }
    return b.device;
  }

  DeviceMemory memory_;
  CachingAllocator allocator_{memory_};
  TensorStore store_{allocator_};
  std::vector<Buffer> buffers_;
};

TEST_CASE("fill and copy through strided views") {
  Mirror m;
  Lcg rng(1u);
  const Tensor out_fill = m.tensor({3, 7}, spiky(rng, 21));
  const Tensor cols = m.view(out_fill, slice(out_fill.meta, 1, 1, 7, 3));
  m.run_both(launch_fill(m.arg(cols), -0.0f), "fill of a step-3 column slice");

  // Transposed source: [17, 33] viewed as [33, 17].
  const Tensor base = m.tensor({17, 33}, spiky(rng, 17 * 33));
  const Tensor base_t = m.view(base, as_strided(base.meta, {33, 17}, {1, 33}, 0, 17 * 33 * 4));
  const Tensor out_t = m.tensor({33, 17}, std::vector<float>(33 * 17, 0.0f));
  m.run_both(launch_copy(m.arg(out_t), m.arg(base_t)), "copy from a transposed view");

  // Step-2 slice source into a transposed destination (strided to strided).
  const Tensor src = m.tensor({6, 10}, spiky(rng, 60));
  const Tensor src_s = m.view(src, slice(src.meta, 1, 1, 10, 2));  // [6, 5], strides [10, 2]
  const Tensor dst = m.tensor({5, 6}, std::vector<float>(30, 7.0f));
  const Tensor dst_t = m.view(dst, as_strided(dst.meta, {6, 5}, {1, 6}, 0, 30 * 4));
  m.run_both(launch_copy(m.arg(dst_t), m.arg(src_s)), "copy slice -> transposed");

  // Stride-0 expand source.
  const Tensor row = m.tensor({1, 9}, spiky(rng, 9));
  const Tensor row_e = m.view(row, expand(row.meta, {12, 9}));
  const Tensor out_e = m.tensor({12, 9}, std::vector<float>(108, 0.0f));
  m.run_both(launch_copy(m.arg(out_e), m.arg(row_e)), "copy from an expanded view");
}

TEST_CASE("add, sub, mul and div with a broadcast operand") {
  Mirror m;
  Lcg rng(2u);
  const Tensor a = m.tensor({16, 40}, spiky(rng, 16 * 40));
  const Tensor b_row = m.tensor({40}, spiky(rng, 40));
  const Tensor b = m.view(b_row, expand(b_row.meta, {16, 40}));
  const Tensor c_col = m.tensor({16, 1}, spiky(rng, 16));
  const Tensor c = m.view(c_col, expand(c_col.meta, {16, 40}));
  const KernelKind kinds[] = {KernelKind::kAdd, KernelKind::kSub, KernelKind::kMul,
                              KernelKind::kDiv};
  for (const KernelKind kind : kinds) {
    const Tensor out = m.tensor({16, 40}, std::vector<float>(16 * 40, 0.0f));
    m.run_both(launch_binary(kind, m.arg(out), m.arg(a), m.arg(b)),
               std::string(kernel_name(kind)) + " a, row-broadcast b");
    const Tensor out2 = m.tensor({16, 40}, std::vector<float>(16 * 40, 0.0f));
    m.run_both(launch_binary(kind, m.arg(out2), m.arg(c), m.arg(a)),
               std::string(kernel_name(kind)) + " column-broadcast c, a");
  }
  // Products and quotients that land in the subnormal range must not flush.
  const float tiny = std::numeric_limits<float>::min();
  const Tensor small = m.tensor({4}, {tiny, tiny * 3, -tiny, tiny * 0.5f});
  const Tensor scale = m.tensor({4}, {0.5f, 0.25f, 0.125f, 3.0f});
  const Tensor prod = m.tensor({4}, std::vector<float>(4, 0.0f));
  m.run_both(launch_binary(KernelKind::kMul, m.arg(prod), m.arg(small), m.arg(scale)),
             "mul into subnormals");
  const Tensor quot = m.tensor({4}, std::vector<float>(4, 0.0f));
  m.run_both(launch_binary(KernelKind::kDiv, m.arg(quot), m.arg(small), m.arg(scale)),
             "div of subnormals");
}

TEST_CASE("neg, relu and relu_backward, NaN and signed zeros included") {
  Mirror m;
  Lcg rng(3u);
  std::vector<float> x = spiky(rng, 300);
  x[1] = std::numeric_limits<float>::quiet_NaN();
  x[2] = -std::numeric_limits<float>::infinity();
  const Tensor in = m.tensor({300}, x);
  const Tensor neg = m.tensor({300}, std::vector<float>(300, 0.0f));
  m.run_both(launch_unary(KernelKind::kNeg, m.arg(neg), m.arg(in)), "neg");
  const Tensor relu = m.tensor({300}, std::vector<float>(300, 1.0f));
  m.run_both(launch_unary(KernelKind::kRelu, m.arg(relu), m.arg(in)), "relu");

  const Tensor grad = m.tensor({300}, spiky(rng, 300));
  const Tensor grad_in = m.tensor({300}, std::vector<float>(300, 1.0f));
  m.run_both(launch_relu_backward(m.arg(grad_in), m.arg(grad), m.arg(in)),
             "relu_backward against the relu input (signed zeros, NaN)");
  const Tensor grad_in2 = m.tensor({300}, std::vector<float>(300, 1.0f));
  m.run_both(launch_relu_backward(m.arg(grad_in2), m.arg(grad), m.arg(relu)),
             "relu_backward against the relu result");
}

TEST_CASE("sum over dims and sum_to_size") {
  Mirror m;
  Lcg rng(4u);
  const Tensor in = m.tensor({5, 7, 11}, spiky(rng, 5 * 7 * 11));
  const Tensor o_02 = m.tensor({7}, std::vector<float>(7, 0.0f));
  m.run_both(launch_sum(m.arg(o_02), m.arg(in), {0, 2}), "sum dims {0, 2}");
  const Tensor o_1 = m.tensor({5, 1, 11}, std::vector<float>(55, 0.0f));
  m.run_both(launch_sum(m.arg(o_1), m.arg(in), {1}), "sum dim 1, keepdim");
  const Tensor o_all = m.tensor({}, {0.0f});
  m.run_both(launch_sum(m.arg(o_all), m.arg(in), {0, 1, 2}), "sum over everything");
  // A transposed input.
  const Tensor in_t = m.view(in, as_strided(in.meta, {11, 35}, {1, 11}, 0, 385 * 4));
  const Tensor o_t = m.tensor({11}, std::vector<float>(11, 0.0f));
  m.run_both(launch_sum(m.arg(o_t), m.arg(in_t), {1}), "sum of a transposed view");
  const Tensor o_sts = m.tensor({7, 1}, std::vector<float>(7, 0.0f));
  m.run_both(launch_sum_to_size(m.arg(o_sts), m.arg(in)), "sum_to_size [5,7,11] -> [7,1]");
}

TEST_CASE("unary_math, every function, and amax, NaN and infinities included") {
  Mirror m;
  Lcg rng(8u);
  std::vector<float> x = spiky(rng, 600);
  for (std::size_t i = 0; i < x.size(); i += 7) x[i] *= 50.0f;  // exp's and tanh's far ranges
  x[1] = std::numeric_limits<float>::quiet_NaN();
  x[2] = -std::numeric_limits<float>::infinity();
  x[3] = std::numeric_limits<float>::infinity();
  x[4] = 88.7f;
  x[5] = -103.0f;
  const Tensor in = m.tensor({600}, x);
  for (int k = 0; k < kernels::kNumUnaryMath; ++k) {
    const Tensor out = m.tensor({600}, std::vector<float>(600, 0.0f));
    m.run_both(launch_unary_math(static_cast<kernels::UnaryMath>(k), m.arg(out), m.arg(in)),
               "unary_math " + std::to_string(k));
  }
  const Tensor grid = m.tensor({20, 30}, x);
  const Tensor rows = m.tensor({20, 1}, std::vector<float>(20, 0.0f));
  m.run_both(launch_amax(m.arg(rows), m.arg(grid), {1}), "amax dim 1, keepdim");
  const Tensor all = m.tensor({}, {0.0f});
  m.run_both(launch_amax(m.arg(all), m.arg(grid), {0, 1}), "amax over everything");
}

TEST_CASE("mm 17x33x9, contiguous and with a transposed operand") {
  Mirror m;
  Lcg rng(5u);
  const Tensor a = m.tensor({17, 33}, spiky(rng, 17 * 33));
  const Tensor b = m.tensor({33, 9}, spiky(rng, 33 * 9));
  const Tensor out = m.tensor({17, 9}, std::vector<float>(17 * 9, 0.0f));
  m.run_both(launch_mm(m.arg(out), m.arg(a), m.arg(b)), "mm contiguous");
  const Tensor bt = m.tensor({9, 33}, spiky(rng, 9 * 33));
  const Tensor b_view = m.view(bt, as_strided(bt.meta, {33, 9}, {1, 33}, 0, 9 * 33 * 4));
  const Tensor out2 = m.tensor({17, 9}, std::vector<float>(17 * 9, 0.0f));
  m.run_both(launch_mm(m.arg(out2), m.arg(a), m.arg(b_view)), "mm with b transposed");
}

TEST_CASE("sgd with momentum, nesterov and weight decay over 3 steps") {
  struct Case {
    const char* name;
    SgdHyper hyper;
  };
  const Case cases[] = {
      {"momentum", {0.1f, 0.9f, 0.0f, 0.0f, false}},
      {"momentum, dampening, weight decay", {0.05f, 0.8f, 0.1f, 1e-2f, false}},
      {"nesterov, weight decay", {0.1f, 0.9f, 0.0f, 1e-2f, true}},
      {"no momentum", {0.1f, 0.0f, 0.0f, 0.0f, false}},
  };
  for (const Case& c : cases) {
    Mirror m;
    Lcg rng(6u);
    const Tensor param = m.tensor({500}, rng.floats(500, -1.0f, 1.0f));
    const Tensor buf = m.tensor({500}, rng.floats(500, -1.0f, 1.0f));
    for (int step = 0; step < 3; ++step) {
      const Tensor grad = m.tensor({500}, spiky(rng, 500));  // a fresh tensor each step
      m.run_both(launch_sgd(m.arg(param), m.arg(grad), m.arg(buf), c.hyper),
                 std::string("sgd ") + c.name + ", step " + std::to_string(step));
    }
  }
}

TEST_CASE("adam_powers then adam or adamw, 5 steps") {
  struct Case {
    const char* name;
    KernelKind kind;
    float weight_decay;
  };
  const Case cases[] = {
      {"adam", KernelKind::kAdam, 0.0f},
      {"adam, weight decay", KernelKind::kAdam, 0.01f},
      {"adamw, weight decay", KernelKind::kAdamW, 0.01f},
  };
  for (const Case& c : cases) {
    Mirror m;
    Lcg rng(7u);
    constexpr std::int64_t kN = 1000;
    AdamHyper hyper;
    hyper.weight_decay = c.weight_decay;
    const Tensor param = m.tensor({kN}, rng.floats(kN, -1.0f, 1.0f));
    const Tensor exp_avg = m.filled({kN}, 0.0f);
    const Tensor exp_avg_sq = m.filled({kN}, 0.0f);
    const Tensor state = m.tensor({2}, {1.0f, 1.0f});
    for (int step = 1; step <= 5; ++step) {
      std::vector<float> g = rng.floats(kN, -1.0f, 1.0f);
      for (std::size_t i = 3; i < g.size(); i += 11) g[i] *= 1e-8f;  // sqrt(v_hat) ~ eps
      const Tensor grad = m.tensor({kN}, g);                         // a fresh tensor each step
      const std::string at = std::string(c.name) + ", step " + std::to_string(step);
      m.run_both(launch_adam_powers(m.arg(state), hyper), "adam_powers, " + at);
      m.run_both(launch_adam(c.kind, m.arg(param), m.arg(grad), m.arg(exp_avg), m.arg(exp_avg_sq),
                             m.arg(state), hyper),
                 at);
    }
  }
}

}  // namespace
}  // namespace capsim

#include "tests/support/device_test_main.hpp"
