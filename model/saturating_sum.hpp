// A sum of numbers that come from input, for a figure shown to a user.
//
// A trace's fields are each bounded (docs/trace-format.md, the limits), but
// a sum over many events is not: 2^14 copy-ins of 2^50 bytes wrap a 64-bit
// total to a small, wrong number. A SaturatingSum stops at the largest value
// and remembers that it did, and its text says so ("more than
// 18446744073709551615"), so a figure is either right or marked.
#pragma once

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
  // The total, or "more than MAX" once it saturated.
  std::string text() const {
    return saturated ? "more than " + std::to_string(value) : std::to_string(value);
  }
};

}  // namespace capsim
