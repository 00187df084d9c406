// A figure shown to a user or compared with a limit: a sum (or the largest
// of several sums) of numbers that come from input.
//
// A trace's fields are each bounded (docs/trace-format.md, the limits), but
// a sum over many events is not: 2^14 copy-ins of 2^50 bytes wrap a 64-bit
// total to 0, and "ok 0 <= 0" would pass a limit the run broke by far. A
// SaturatingSum stops at the largest value and remembers that it did: it
// compares above every exact figure, so a limit check fails, and every form
// that shows it says so (text "more than 18446744073709551615", JSON an extra
// `*_saturated: true` beside the number), so a figure is either right or
// marked. Every byte total capsim prints (render, explain, expect, what-if,
// simulate, the charts) is one.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <string>

namespace capsim {

struct SaturatingSum {
  std::uint64_t value = 0;
  bool saturated = false;

  void add(std::uint64_t x) {
    if (x > std::numeric_limits<std::uint64_t>::max() - value) {
      value = std::numeric_limits<std::uint64_t>::max();
      saturated = true;
      return;
    }
    value += x;
  }
  void add(const SaturatingSum& other) {
    add(other.value);
    saturated = saturated || other.saturated;
  }
  SaturatingSum& operator+=(std::uint64_t x) {
    add(x);
    return *this;
  }
  // The larger of the two (a saturated sum is larger than any exact one).
  void take_max(const SaturatingSum& other) {
    if (*this < other) *this = other;
  }
  // The total, or "more than MAX" once it saturated.
  std::string text() const {
    return saturated ? "more than " + std::to_string(value) : std::to_string(value);
  }
  // Ordered by (value, saturated): a saturated sum is past every exact one,
  // the largest exact value included.
  friend auto operator<=>(const SaturatingSum&, const SaturatingSum&) = default;
  friend bool operator==(const SaturatingSum&, const SaturatingSum&) = default;
  // Against a limit or an exact figure: exact comparison, saturated above.
  friend bool operator>(const SaturatingSum& s, std::uint64_t limit) {
    return s.saturated || s.value > limit;
  }
  friend bool operator<=(const SaturatingSum& s, std::uint64_t limit) { return !(s > limit); }
  friend bool operator==(const SaturatingSum& s, std::uint64_t x) {
    return !s.saturated && s.value == x;
  }
};

inline SaturatingSum saturating(std::uint64_t x) {
  return SaturatingSum{x, false};
}

}  // namespace capsim
