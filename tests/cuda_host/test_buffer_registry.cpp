// The registry of real allocations (cuda_reference/buffer_registry.hpp),
// without a GPU: what it refuses to register, which one buffer holds a range,
// the translation between device and simulated addresses, and the check that
// every buffer is still the allocation it was (a free and a new allocation
// at the same address has a new driver id).
#include <doctest/doctest.h>

#include <vector>

#include "cuda_reference/buffer_registry.hpp"

namespace capsim::cuda {
namespace {

constexpr std::uint64_t kDev = 0x7a0000000000ull;
constexpr Address kSim = 0x7f0000000000ull;

BufferRegistry two_segments_and_staging() {
  BufferRegistry r;
  REQUIRE(r.add({"segment 0", BufferKind::kDevice, kDev, 2 * kMiB, 11, kSim}));
  REQUIRE(
      r.add({"segment 1", BufferKind::kDevice, kDev + 4 * kMiB, 2 * kMiB, 12, kSim + 2 * kMiB}));
  REQUIRE(r.add({"staging 0", BufferKind::kPinnedHost, 0x10000, 4096, 13, std::nullopt}));
  return r;
}

std::string error_of(const Status& s) {
  return s ? "" : s.error().message;
}

TEST_CASE("cuda host: the registry refuses overlaps, empty buffers and reused ids") {
  BufferRegistry r = two_segments_and_staging();
  CHECK(error_of(r.add({"x", BufferKind::kDevice, kDev + 512, 64, 20, std::nullopt}))
            .find("overlaps buffer segment 0") != std::string::npos);
  CHECK(error_of(r.add({"x", BufferKind::kDevice, kDev + 8 * kMiB, 0, 20, std::nullopt}))
            .find("empty") != std::string::npos);
  CHECK(error_of(r.add({"x", BufferKind::kDevice, kDev + 8 * kMiB, 64, 12, std::nullopt}))
            .find("the driver never reuses one") != std::string::npos);
  CHECK(error_of(r.add({"segment 1", BufferKind::kDevice, kDev + 8 * kMiB, 64, 20, std::nullopt}))
            .find("registered twice") != std::string::npos);
  CHECK(error_of(r.add({"x", BufferKind::kDevice, kDev + 8 * kMiB, 64, 20, kSim}))
            .find("map the same simulated segment") != std::string::npos);
  CHECK(error_of(r.add({"x", BufferKind::kPinnedHost, 0x20000, 64, 20, kSim + 8 * kMiB}))
            .find("only device buffers") != std::string::npos);
  CHECK(r.buffers().size() == 3);
}

TEST_CASE("cuda host: locate finds the one buffer that holds a whole range") {
  const BufferRegistry r = two_segments_and_staging();
  CHECK(r.locate(kDev, 2 * kMiB).value() == 0);
  CHECK(r.locate(kDev + 4 * kMiB + 100, 4).value() == 1);
  CHECK(r.locate(0x10000 + 4000, 96).value() == 2);
  CHECK(r.locate(kDev + 2 * kMiB, 0).value() == 0);  // an empty tensor at the end

  const auto past = r.locate(kDev + 2 * kMiB - 8, 16);
  REQUIRE_FALSE(past);
  CHECK(past.error().message.find("runs 8 bytes past its end") != std::string::npos);
  const auto gap = r.locate(kDev + 3 * kMiB, 4);
  REQUIRE_FALSE(gap);
  CHECK(gap.error().message.find("outside every registered buffer") != std::string::npos);
  CHECK_FALSE(r.locate(0x100, 4));            // below every buffer
  CHECK_FALSE(r.locate(kDev + 2 * kMiB, 4));  // just past segment 0
}

TEST_CASE("cuda host: device and simulated addresses translate both ways") {
  const BufferRegistry r = two_segments_and_staging();
  CHECK(r.to_simulated(kDev + 4 * kMiB + 0x200).value() == kSim + 2 * kMiB + 0x200);
  CHECK(r.to_device(kSim + 0x600).value() == kDev + 0x600);
  CHECK(r.to_device(r.to_simulated(kDev + 77).value()).value() == kDev + 77);
  const auto staging = r.to_simulated(0x10000);
  REQUIRE_FALSE(staging);
  CHECK(staging.error().message.find("maps no simulated segment") != std::string::npos);
  CHECK_FALSE(r.to_device(kSim + 8 * kMiB));
}

TEST_CASE("cuda host: a buffer freed and made again at its address is caught by its id") {
  const BufferRegistry r = two_segments_and_staging();
  std::vector<BufferObservation> now = {{true, 11, kDev, 2 * kMiB},
                                        {true, 12, kDev + 4 * kMiB, 2 * kMiB},
                                        {true, 13, 0, 0}};  // pinned: no range query
  CHECK(r.check_unchanged(now));

  SUBCASE("a new id at the same address") {
    now[1].buffer_id = 99;
    CHECK(error_of(r.check_unchanged(now)).find("segment 1") != std::string::npos);
    CHECK(error_of(r.check_unchanged(now)).find("freed and another allocation") !=
          std::string::npos);
  }
  SUBCASE("no allocation any more") {
    now[0].found = false;
    CHECK(error_of(r.check_unchanged(now)).find("no allocation there") != std::string::npos);
  }
  SUBCASE("a smaller range") {
    now[0].range_bytes = kMiB;
    CHECK(error_of(r.check_unchanged(now)).find("the driver's range is now") != std::string::npos);
  }
  SUBCASE("an observation missing") {
    now.pop_back();
    CHECK(error_of(r.check_unchanged(now)).find("2 observations for 3") != std::string::npos);
  }
}

}  // namespace
}  // namespace capsim::cuda
