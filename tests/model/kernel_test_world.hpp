// Shared fixtures of the kernel tests: a small simulated world, a portable LCG,
// exact float comparison and error-message checks.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "model/caching_allocator.hpp"
#include "model/cpu_backend.hpp"
#include "model/device_memory.hpp"
#include "model/kernel_launch.hpp"
#include "model/kernel_table.hpp"
#include "model/tensor.hpp"
#include "model/tensor_store.hpp"
#include "tests/support/lcg.hpp"

namespace capsim::kernel_test {

inline std::uint32_t bits(float f) {
  return std::bit_cast<std::uint32_t>(f);
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
// A value never produced by the kernels under test: marks bytes they must not touch.
constexpr float kSentinel = -12345.5f;

using testing::Lcg;

template <typename T>
void require_ok(const Result<T>& r) {
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
}

// One simulated device: memory, allocator and tensors over them.
struct World {
  DeviceMemory memory;
  CachingAllocator allocator{memory};
  TensorStore store{allocator};

  // A fresh contiguous tensor holding `values` (or the sentinel everywhere).
  Tensor tensor(const Dims& sizes, const std::vector<float>& values = {}) {
    auto t = store.empty(sizes);
    require_ok(t);
    std::vector<float> init = values;
    if (init.empty()) init.assign(static_cast<std::size_t>(numel(sizes)), kSentinel);
    REQUIRE(static_cast<std::int64_t>(init.size()) == numel(sizes));
    write_raw(*t, init);
    return *t;
  }
  Tensor view(const Tensor& base, const Result<TensorMeta>& meta) {
    require_ok(meta);
    auto v = store.view(base.id, *meta);
    require_ok(v);
    return *v;
  }
  Address address(const Tensor& t) const {
    auto a = store.data_address(t.id);
    require_ok(a);
    return *a;
  }
  TensorArg arg(const Tensor& t) const { return TensorArg{address(t), t.meta}; }

  // Raw floats from element 0 on, ignoring strides.
  void write_raw(const Tensor& t, const std::vector<float>& values) {
    auto s = memory.write(address(t), std::as_bytes(std::span(values)));
    require_ok(s);
  }
  std::vector<float> read_raw(const Tensor& t, std::size_t n) const {
    std::vector<float> out(n);
    auto s = memory.read(address(t), std::as_writable_bytes(std::span(out)));
    require_ok(s);
    return out;
  }
  // The logical elements of `t`, in row-major order, through its strides.
  std::vector<float> read(const Tensor& t) const {
    auto g = to_geometry(t.meta);
    require_ok(g);
    std::vector<float> out(static_cast<std::size_t>(numel(t.meta)));
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto offset = kernels::element_offset(*g, static_cast<std::int64_t>(i));
      auto s = memory.read(address(t) + static_cast<Address>(offset) * kElementBytes,
                           std::as_writable_bytes(std::span(&out[i], 1)));
      require_ok(s);
    }
    return out;
  }
  void run(const Result<KernelLaunch>& launch) {
    require_ok(launch);
    require_ok(run_kernel_on_host(*launch, memory));
  }
};

// Exact equality, element by element, reported with the index.
inline void check_equal(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK_MESSAGE(bits(got[i]) == bits(want[i]),
                  "element " << i << ": got " << got[i] << ", want " << want[i]);
  }
}

inline std::vector<float> iota(std::size_t n, float start = 0.0f) {
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = start + static_cast<float>(i);
  return out;
}

// The builder must fail, and its message must contain every one of `needles`.
template <typename T>
void check_error(const Result<T>& r, std::initializer_list<std::string> needles) {
  REQUIRE_FALSE(r.ok());
  const std::string& message = r.error().message;
  for (const std::string& needle : needles) {
    CHECK_MESSAGE(message.find(needle) != std::string::npos,
                  "message '" << message << "' lacks '" << needle << "'");
  }
}

}  // namespace capsim::kernel_test
