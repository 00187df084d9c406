// DeviceMemory: deterministic segment bases, bounds, and freed bytes that keep
// their contents (GPU-like) or become poison (poison mode).
#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "model/caching_allocator.hpp"
#include "model/device_memory.hpp"

using namespace capsim;

namespace {
std::array<float, 4> read4(const DeviceMemory& memory, Address address) {
  std::array<float, 4> out{};
  REQUIRE(memory.read(address, std::as_writable_bytes(std::span(out))).ok());
  return out;
}
}  // namespace

TEST_CASE("segments are mapped one after another at fixed bases") {
  DeviceMemory memory;
  auto a = memory.map_segment(2 * kMiB);
  auto b = memory.map_segment(20 * kMiB);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->base == 0x7f0000000000);
  CHECK(b->base == 0x7f0000200000);
  CHECK(memory.mapped_bytes() == 22 * kMiB);
  const MemoryLayout layout = memory.layout();
  REQUIRE(layout.segments.size() == 2);
  CHECK(layout.segments[1] == *b);
  auto odd = memory.map_segment(1000);
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.error().message == "segment size 1000 is not a positive multiple of 2097152");
}

TEST_CASE("reads and writes are bounds-checked against one segment") {
  DeviceMemory memory;
  auto a = memory.map_segment(2 * kMiB);
  REQUIRE(a.ok());
  const std::array<float, 4> values{1.5f, -2.0f, 3.25f, 0.0f};
  REQUIRE(memory.write(a->base + 64, std::as_bytes(std::span(values))).ok());
  CHECK(read4(memory, a->base + 64) == values);
  CHECK(read4(memory, a->base + 1024) == std::array<float, 4>{});  // fresh memory is zero
  // Straddling the end of the segment is refused, whole.
  std::array<std::byte, 8> buffer{};
  auto past = memory.read(a->end() - 4, buffer);
  REQUIRE_FALSE(past.ok());
  CHECK(past.error().message ==
        "access of 8 bytes at 0x7f00001ffffc is outside every mapped segment");
  CHECK_FALSE(memory.write(0x1000, buffer).ok());
}

TEST_CASE("freed bytes keep their contents unless poison mode is on") {
  for (const bool poison : {false, true}) {
    CAPTURE(poison);
    DeviceMemoryOptions options;
    options.poison_freed = poison;
    DeviceMemory memory(options);
    CachingAllocator alloc(memory);
    auto block = alloc.allocate(16);
    REQUIRE(block.ok());
    const std::array<float, 4> values{1.0f, 2.0f, 3.0f, 4.0f};
    REQUIRE(memory.write(block->address, std::as_bytes(std::span(values))).ok());
    REQUIRE(alloc.free(block->address).ok());
    const auto after = read4(memory, block->address);
    if (!poison) {
      CHECK(after == values);  // a read after free sees the old values, as on a GPU
    } else {
      for (float f : after) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &f, 4);
        CHECK(bits == kPoisonWord);  // the read after free is exposed
      }
    }
  }
}

TEST_CASE("restore poisons the blocks it frees, and only those") {
  DeviceMemoryOptions options;
  options.poison_freed = true;
  DeviceMemory memory(options);
  CachingAllocator alloc(memory);
  const PoolId pool = *alloc.create_pool();
  auto keep = alloc.allocate(16, pool);
  auto drop = alloc.allocate(16, pool);
  REQUIRE((keep.ok() && drop.ok()));
  const std::array<float, 4> values{5.0f, 6.0f, 7.0f, 8.0f};
  REQUIRE(memory.write(keep->address, std::as_bytes(std::span(values))).ok());
  REQUIRE(memory.write(drop->address, std::as_bytes(std::span(values))).ok());
  auto cp = alloc.checkpoint(pool);
  REQUIRE(cp.ok());
  const std::vector<Address> live{keep->address};
  REQUIRE(alloc.restore(pool, *cp, live).ok());
  CHECK(read4(memory, keep->address) == values);
  std::uint32_t bits = 0;
  const float first = read4(memory, drop->address)[0];
  std::memcpy(&bits, &first, 4);
  CHECK(bits == kPoisonWord);
}

// Values off: addresses and bounds as ever, no bytes behind them.
TEST_CASE("unbacked memory maps addresses, reads zeros and keeps nothing") {
  DeviceMemoryOptions options;
  options.backed = false;
  options.capacity_bytes = std::uint64_t{64} << 30;
  DeviceMemory memory(options);
  auto big = memory.map_segment(std::uint64_t{32} << 30);  // 32 GiB: no host bytes
  REQUIRE(big.ok());
  CHECK(big->base == 0x7f0000000000);
  CHECK_FALSE(memory.backed());
  const std::array<float, 4> values{1.5f, -2.0f, 3.25f, 7.0f};
  REQUIRE(memory.write(big->base + 64, std::as_bytes(std::span(values))).ok());
  CHECK(read4(memory, big->base + 64) == std::array<float, 4>{});
  CHECK(memory.check_mapped(big->base, 16).ok());
  CHECK_FALSE(memory.check_mapped(big->end() - 4, 8).ok());
  CHECK_FALSE(memory.write(0x1000, std::as_bytes(std::span(values))).ok());
  auto host = memory.resolve(big->base, 16);
  REQUIRE_FALSE(host.ok());
  CHECK(host.error().message == "values are off: no bytes behind 0x7f0000000000");
  memory.on_free(AddressRange{big->base, 16});  // nothing to poison
}

// Write tracking: the pages each mutable resolve covers, merged inside a
// segment but never across two neighbouring ones; reads mark nothing.
TEST_CASE("written_since names the pages written after a count") {
  DeviceMemory memory;
  const AddressRange a = memory.map_segment(2 * kMiB).value();
  const AddressRange b = memory.map_segment(2 * kMiB).value();
  REQUIRE(a.end() == b.base);  // neighbours
  CHECK(memory.write_count() == 0);
  CHECK(memory.written_since(0).empty());
  const std::array<float, 4> values{1.0f, 2.0f, 3.0f, 4.0f};
  const auto bytes = std::as_bytes(std::span(values));
  // The last word of a and the first of b: two ranges, not one.
  REQUIRE(memory.write(a.end() - 4, bytes.first(4)).ok());
  REQUIRE(memory.write(b.base, bytes).ok());
  const std::uint64_t after_two = memory.write_count();
  CHECK(after_two == 2);
  CHECK(memory.written_since(0) ==
        std::vector<AddressRange>{{a.end() - kWritePageBytes, kWritePageBytes},
                                  {b.base, kWritePageBytes}});
  // A write across a page boundary marks both pages; adjacent pages merge.
  REQUIRE(memory.write(b.base + 2 * kWritePageBytes - 8, bytes).ok());
  CHECK(memory.written_since(after_two) ==
        std::vector<AddressRange>{{b.base + kWritePageBytes, 2 * kWritePageBytes}});
  CHECK(memory.written_since(0).back() == AddressRange{b.base, 3 * kWritePageBytes});
  // Reads, and the const resolve, are not writes.
  const std::uint64_t before_reads = memory.write_count();
  CHECK(read4(memory, b.base) == values);
  CHECK(std::as_const(memory).resolve(a.base, 64).ok());
  CHECK(memory.write_count() == before_reads);
  CHECK(memory.written_since(before_reads).empty());
}
