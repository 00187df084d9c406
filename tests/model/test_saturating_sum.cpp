// SaturatingSum (model/saturating_sum.hpp): a sum of input numbers that stops
// at the largest value and says so, instead of wrapping.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

#include "model/saturating_sum.hpp"

namespace capsim {
namespace {

TEST_CASE("saturating sum: exact below the limit, marked at it") {
  SaturatingSum sum;
  sum.add(40);
  sum.add(2);
  CHECK(sum.value == 42);
  CHECK(sum.text() == "42");
  // 2^14 copy-ins of 2^50 bytes: a wrapping uint64 would read 0.
  SaturatingSum bytes;
  for (int i = 0; i < (1 << 14); ++i) bytes.add(std::uint64_t{1} << 50);
  CHECK(bytes.saturated);
  CHECK(bytes.value == std::numeric_limits<std::uint64_t>::max());
  CHECK(bytes.text() == "more than 18446744073709551615");
  // The largest value itself is exact, and adding 0 to it keeps it so.
  SaturatingSum edge;
  edge.add(std::numeric_limits<std::uint64_t>::max());
  edge.add(0);
  CHECK_FALSE(edge.saturated);
}

}  // namespace
}  // namespace capsim
