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

TEST_CASE("saturating sum: a saturated figure breaks every limit and wins every max") {
  SaturatingSum huge;
  for (int i = 0; i < (1 << 14); ++i) huge.add(std::uint64_t{1} << 50);
  // The wrap it replaces: 2^14 * 2^50 is 2^64, 0 in a uint64, "ok 0 <= 0".
  CHECK(huge > 0);
  CHECK(huge > std::numeric_limits<std::uint64_t>::max());
  CHECK_FALSE(huge <= std::numeric_limits<std::uint64_t>::max());
  SaturatingSum exact;
  exact.add(std::numeric_limits<std::uint64_t>::max());
  CHECK(exact < huge);
  SaturatingSum most = exact;
  most.take_max(huge);
  CHECK(most.saturated);
  huge.take_max(exact);
  CHECK(huge.saturated);
  CHECK(saturating(5) == 5);
  CHECK_FALSE(huge == std::numeric_limits<std::uint64_t>::max());
  SaturatingSum sum;
  sum.add(huge);
  CHECK(sum.saturated);
}

}  // namespace
}  // namespace capsim
