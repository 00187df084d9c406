// Lcg: deterministic test data from integers.
//
// std::uniform_real_distribution is not portable across standard libraries;
// this is. uniform() takes an exact 24-bit fraction, then two correctly rounded
// float operations, so the same seed gives the same floats everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace capsim::testing {

class Lcg {
 public:
  explicit Lcg(std::uint32_t seed) : state_(seed) {}
  std::uint32_t next() {
    state_ = state_ * 1664525u + 1013904223u;
    return state_;
  }
  // In [lo, hi).
  float uniform(float lo, float hi) {
    const float u = static_cast<float>(next() >> 8) * 0x1p-24f;
    return lo + (hi - lo) * u;
  }
  std::vector<float> floats(std::size_t n, float lo, float hi) {
    std::vector<float> out(n);
    for (float& f : out) f = uniform(lo, hi);
    return out;
  }

 private:
  std::uint32_t state_;
};

}  // namespace capsim::testing
