// Rng: the one seeded source of randomness a World owns.
//
// splitmix64, written out so that the same seed gives the same numbers on every
// platform and standard library (std::uniform_real_distribution does not).
// Nothing in capsim draws randomness from anywhere else: a failure is a seed,
// and a seed is a replay.
#pragma once

#include <cstdint>

namespace capsim {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // A float in [lo, hi) from the top 24 bits: exact and platform-independent.
  float uniform(float lo, float hi) {
    const float unit = static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * unit;
  }

 private:
  std::uint64_t state_;
};

}  // namespace capsim
