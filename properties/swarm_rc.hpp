// The pieces every RapidCheck generator of properties/ shares: ranges that
// do not grow with RapidCheck's size, weighted and rare choices that shrink
// towards the first or the false, and a swarm of switchable features.
//
// Swarm testing (Groce et al., ISSTA 2012): each case switches a random
// subset of a generator's features off, so that a program without one
// feature reaches the interleavings that feature would mask. A generator
// names its features in an X-macro table with a name per feature and draws a
// FeatureSwarm over it. Header-only and included only by test code, like the
// generators themselves.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/check.hpp"
#include "sim/core/torch_profile.hpp"

namespace capsim::rc_gen {

// Uniform in [lo, hi) whatever the size (rc::gen::inRange scales the range
// with the size, and the containers below are resized to a few elements).
template <typename T>
rc::Gen<T> uniform(T lo, T hi) {
  return rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(lo, hi));
}

// One of `pairs` with probability proportional to its weight, shrinking
// towards the first (rc::gen::weightedElement does not shrink).
template <typename T>
rc::Gen<T> weighted(std::vector<std::pair<std::uint32_t, T>> pairs) {
  std::uint32_t total = 0;
  for (const auto& p : pairs) total += p.first;
  return rc::gen::map(uniform<std::uint32_t>(0, total), [pairs](std::uint32_t r) {
    for (const auto& p : pairs) {
      if (r < p.first) return p.second;
      r -= p.first;
    }
    return pairs.back().second;
  });
}

// A flag that is true with probability 1 / `one_in`, shrinking to false.
inline rc::Gen<bool> sometimes(std::uint32_t one_in) {
  return rc::gen::map(uniform<std::uint32_t>(0, one_in),
                      [one_in](std::uint32_t r) { return r + 1 == one_in; });
}

inline rc::Gen<std::uint32_t> small(std::uint32_t below) {
  return uniform<std::uint32_t>(0, below);
}

// One of the torch profiles, uniformly; shrinks towards classic.
inline rc::Gen<TorchProfile> torch_profile() {
  return rc::gen::map(uniform<int>(0, static_cast<int>(TorchProfile::kCount)),
                      [](int i) { return static_cast<TorchProfile>(i); });
}

// A generator's feature enum (ending in kCount) and its name table, from its
// X-macro table of X(enumerator, name) rows.
#define CAPSIM_SWARM_ENUM_(e, name) e,
#define CAPSIM_SWARM_NAME_(e, name) name,
#define CAPSIM_DEFINE_SWARM_FEATURES(Feature, kNames, TABLE)              \
  enum class Feature : std::uint8_t { TABLE(CAPSIM_SWARM_ENUM_) kCount }; \
  inline constexpr std::string_view kNames[] = {TABLE(CAPSIM_SWARM_NAME_)}

// Which of a generator's features are on in one case. `Feature` is the
// generator's enum, ending in kCount; `names` its name table.
// A bit mask, not a vector<bool>: the generators capture the swarm by value
// and RapidCheck copies them at every pick (a copied vector was 2 % of a
// generated case, docs/performance.md, the properties' rows).
template <typename Feature>
struct FeatureSwarm {
  static_assert(static_cast<std::size_t>(Feature::kCount) <= 64, "one bit per feature");
  std::uint64_t on = 0;  // bit i: feature i is on
  std::span<const std::string_view> names;
  bool has(Feature f) const {
    const auto i = static_cast<std::size_t>(f);
    CAPSIM_CHECK(i < names.size());
    return ((on >> i) & 1u) != 0;
  }
  std::vector<std::string> off_names() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (((on >> i) & 1u) == 0) out.emplace_back(names[i]);
    }
    return out;
  }
};

// Each feature on with probability 1/2; shrinks towards off.
template <typename Feature, std::size_t N>
rc::Gen<FeatureSwarm<Feature>> swarm_of(const std::string_view (&names)[N]) {
  static_assert(N == static_cast<std::size_t>(Feature::kCount), "one name per feature");
  const std::span<const std::string_view> table(names);
  return rc::gen::map(rc::gen::container<std::vector<bool>>(N, sometimes(2)),
                      [table](const std::vector<bool>& on) {
                        FeatureSwarm<Feature> sw{0, table};
                        for (std::size_t i = 0; i < on.size(); ++i) {
                          if (on[i]) sw.on |= std::uint64_t{1} << i;
                        }
                        return sw;
                      });
}

}  // namespace capsim::rc_gen
