// CachingAllocator: rounding, segment sizes, best fit, split and coalesce,
// private pools, checkpoint/restore, pool accounting, and bad input.
#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "model/caching_allocator.hpp"
#include "model/device_memory.hpp"

using namespace capsim;

namespace {
constexpr Address kBase = 0x7f0000000000;

Block must_allocate(CachingAllocator& a, std::int64_t bytes, PoolId pool = kDefaultPool) {
  auto b = a.allocate(bytes, pool);
  REQUIRE_MESSAGE(b.ok(), (b.ok() ? "" : b.error().message));
  return *b;
}
}  // namespace

TEST_CASE("allocator rounds to 512 bytes and starts at the first base") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  const Block a = must_allocate(alloc, 1);
  CHECK(a.address == kBase);
  CHECK(a.size == 512);
  CHECK(a.requested == 1);
  const Block b = must_allocate(alloc, 513);
  CHECK(b.address == kBase + 512);
  CHECK(b.size == 1024);
  CHECK(round_size(0) == 512);
  CHECK(round_size(512) == 512);
  CHECK(round_size(1025) == 1536);
}

TEST_CASE("segment sizes follow PyTorch's small, large and huge classes") {
  CHECK(allocation_size(512) == 2 * kMiB);
  CHECK(allocation_size(1 * kMiB) == 2 * kMiB);
  CHECK(allocation_size(1 * kMiB + 512) == 20 * kMiB);
  CHECK(allocation_size(10 * kMiB - 512) == 20 * kMiB);
  CHECK(allocation_size(10 * kMiB) == 10 * kMiB);
  CHECK(allocation_size(11 * kMiB) == 12 * kMiB);

  DeviceMemory memory;
  CachingAllocator alloc(memory);
  must_allocate(alloc, 100);  // small: a 2 MiB segment
  // Huge: a segment of its own, rounded to 12 MiB. The 1 MiB left over is not
  // split off (a large block splits only when more than 1 MiB would remain).
  const Block huge = must_allocate(alloc, 11 * kMiB);
  CHECK(huge.size == 12 * kMiB);
  must_allocate(alloc, 2 * kMiB);  // large: a 20 MiB segment
  const auto segments = alloc.segments();
  REQUIRE(segments.size() == 3);
  CHECK(segments[0].range == AddressRange{kBase, 2 * kMiB});
  CHECK(segments[1].range == AddressRange{kBase + 2 * kMiB, 12 * kMiB});
  CHECK(segments[2].range == AddressRange{kBase + 14 * kMiB, 20 * kMiB});
  // A later large request is carved from the 20 MiB segment's free rest.
  CHECK(must_allocate(alloc, 11 * kMiB).address == kBase + 16 * kMiB);
  CHECK(alloc.stats().reserved_bytes == 34 * kMiB);
  // A small request never takes memory from a large segment, and vice versa.
  const Block small = must_allocate(alloc, 600);
  CHECK(AddressRange{kBase, 2 * kMiB}.contains(small.range()));
}

TEST_CASE("a freed block is reused, best fit first, lowest address on a tie") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  const Block a = must_allocate(alloc, 1024);
  const Block sep1 = must_allocate(alloc, 512);
  const Block b = must_allocate(alloc, 2048);
  const Block sep2 = must_allocate(alloc, 512);
  const Block c = must_allocate(alloc, 1024);
  const Block sep3 = must_allocate(alloc, 512);
  REQUIRE(alloc.free(b.address).ok());
  REQUIRE(alloc.free(c.address).ok());
  REQUIRE(alloc.free(a.address).ok());
  // Free: a (1024), b (2048), c (1024), and the segment's tail. 1024 fits a and
  // c exactly; a has the lower address.
  CHECK(must_allocate(alloc, 1000).address == a.address);
  CHECK(must_allocate(alloc, 1000).address == c.address);
  CHECK(must_allocate(alloc, 1500).address == b.address);
  (void)sep1;
  (void)sep2;
  (void)sep3;
}

TEST_CASE("a split block coalesces with its free neighbours") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  const Block a = must_allocate(alloc, 512);
  const Block b = must_allocate(alloc, 512);
  const Block c = must_allocate(alloc, 512);
  CHECK(alloc.stats().splits == 3);
  REQUIRE(alloc.free(a.address).ok());
  REQUIRE(alloc.free(c.address).ok());  // merges with the tail
  REQUIRE(alloc.free(b.address).ok());  // merges with both sides
  CHECK(alloc.stats().merges == 3);
  auto cp = alloc.checkpoint(kDefaultPool);
  REQUIRE(cp.ok());
  REQUIRE(cp->segments.size() == 1);
  REQUIRE(cp->segments[0].blocks.size() == 1);  // one free block: the whole segment
  CHECK(cp->segments[0].blocks[0].size == 2 * kMiB);
  CHECK_FALSE(cp->segments[0].blocks[0].allocated);
  // The whole segment is one block again, so a 1 MiB request fits at the base.
  CHECK(must_allocate(alloc, 1 * kMiB).address == kBase);
}

TEST_CASE("private pools never share segments") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  auto pool = alloc.create_pool();
  REQUIRE(pool.ok());
  CHECK(pool->value == 1);
  const Block eager = must_allocate(alloc, 512);
  const Block graph = must_allocate(alloc, 512, *pool);
  CHECK(eager.pool == kDefaultPool);
  CHECK(graph.pool == *pool);
  CHECK(graph.address == kBase + 2 * kMiB);  // a segment of its own
  // Freeing the eager block does not make its memory available to the pool.
  REQUIRE(alloc.free(eager.address).ok());
  CHECK(must_allocate(alloc, 512, *pool).address == graph.address + 512);
  const auto segments = alloc.segments();
  REQUIRE(segments.size() == 2);
  CHECK(segments[0].pool == kDefaultPool);
  CHECK(segments[1].pool == *pool);
  CHECK(alloc.live_blocks(kDefaultPool).empty());
  CHECK(alloc.live_blocks(*pool).size() == 2);
  CHECK(alloc.allocated_bytes(*pool) == 1024);
  // Each pool's segments are its own reserved bytes.
  CHECK(alloc.reserved_bytes(kDefaultPool) == 2 * kMiB);
  CHECK(alloc.reserved_bytes(*pool) == 2 * kMiB);
  CHECK(alloc.reserved_bytes(PoolId{7}) == 0);
}

TEST_CASE("check_pool_live_allocations names the first difference") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  const PoolId pool = *alloc.create_pool();
  const Block a = must_allocate(alloc, 512, pool);
  const Block b = must_allocate(alloc, 512, pool);
  const std::vector<Address> both{b.address, a.address, a.address};  // order and aliases ignored
  CHECK(alloc.check_pool_live_allocations(pool, both).ok());

  const std::vector<Address> only_a{a.address};
  auto untracked = alloc.check_pool_live_allocations(pool, only_a);
  REQUIRE_FALSE(untracked.ok());
  CHECK(untracked.error().message ==
        "pool 1: allocation at " + hex(b.address) + " is live but not tracked");

  REQUIRE(alloc.free(b.address).ok());
  auto missing = alloc.check_pool_live_allocations(pool, both);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message ==
        "pool 1: expected a live allocation at " + hex(b.address) + ", but it is not allocated");
}

TEST_CASE("restore gives back the checkpoint's layout with exactly the live blocks") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  const PoolId pool = *alloc.create_pool();
  const Block a = must_allocate(alloc, 512, pool);
  const Block b = must_allocate(alloc, 1024, pool);
  const Block c = must_allocate(alloc, 512, pool);
  auto cp = alloc.checkpoint(pool);
  REQUIRE(cp.ok());

  // Time passes: b dies, new blocks appear, one in a new (large) segment.
  REQUIRE(alloc.free(b.address).ok());
  must_allocate(alloc, 4096, pool);
  must_allocate(alloc, 3 * kMiB, pool);
  const Block eager = must_allocate(alloc, 512);  // other pools are untouched

  const std::vector<Address> live{a.address, c.address};
  REQUIRE(alloc.restore(pool, *cp, live).ok());
  const auto blocks = alloc.live_blocks(pool);
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[0] == a);
  CHECK(blocks[1] == c);
  CHECK(alloc.check_pool_live_allocations(pool, live).ok());
  CHECK(alloc.live_blocks(kDefaultPool) == std::vector<Block>{eager});
  // b's block is free again and, being the best fit, is handed out next.
  CHECK(must_allocate(alloc, 1024, pool).address == b.address);
  // The large segment mapped after the checkpoint is one free block again.
  CHECK(must_allocate(alloc, 3 * kMiB, pool).address == kBase + 2 * kMiB);

  // Live storages that died before the checkpoint cannot come back.
  auto cp2 = alloc.checkpoint(pool);
  REQUIRE(cp2.ok());
  const std::vector<Address> dead{b.address + 4096};
  auto bad = alloc.restore(pool, *cp2, dead);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "restore of pool 1: live address " + hex(b.address + 4096) +
                                   " was not an allocated block in the checkpoint");
}

TEST_CASE("restore from a checkpoint of another pool is an error and changes nothing") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  const PoolId p1 = *alloc.create_pool();
  const PoolId p2 = *alloc.create_pool();
  must_allocate(alloc, 512, p1);
  const Block in_p2 = must_allocate(alloc, 512, p2);
  auto cp1 = alloc.checkpoint(p1);
  REQUIRE(cp1.ok());
  auto r = alloc.restore(p2, *cp1, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "restore of pool 2 from a checkpoint of pool 1");
  CHECK(alloc.live_blocks(p2) == std::vector<Block>{in_p2});

  DeviceMemory other_memory;
  CachingAllocator other(other_memory);
  const PoolId q = *other.create_pool();
  REQUIRE(q == p1);
  auto foreign = other.restore(q, *cp1, {});
  REQUIRE_FALSE(foreign.ok());
  CHECK(foreign.error().message.find("does not have in that pool") != std::string::npos);
}

TEST_CASE("bad allocator input gets precise errors") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  auto zero = alloc.allocate(0);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().message == "allocation size must be positive, got 0 bytes");
  auto negative = alloc.allocate(-4);
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().message == "allocation size must be positive, got -4 bytes");
  auto huge = alloc.allocate(std::numeric_limits<std::int64_t>::max());
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().message.find("exceeds the limit") != std::string::npos);
  auto pool = alloc.allocate(16, PoolId{7});
  REQUIRE_FALSE(pool.ok());
  CHECK(pool.error().message == "allocation from unknown memory pool 7");

  auto unknown = alloc.free(0x1234);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message == "free of unknown address 0x1234: no block starts there");
  const Block a = must_allocate(alloc, 64);
  REQUIRE(alloc.free(a.address).ok());
  auto twice = alloc.free(a.address);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message == "double free of 0x7f0000000000: the block is already free");
  // An address inside a block is not the start of one.
  const Block b = must_allocate(alloc, 4096);
  auto inside = alloc.free(b.address + 512);
  REQUIRE_FALSE(inside.ok());
  CHECK(alloc.stats().allocations == 2);
  CHECK(alloc.stats().frees == 1);
}

TEST_CASE("running out of simulated device memory is an error, not a crash") {
  DeviceMemoryOptions options;
  options.capacity_bytes = 4 * kMiB;
  DeviceMemory memory(options);
  CachingAllocator alloc(memory);
  must_allocate(alloc, 512);            // maps 2 MiB
  auto big = alloc.allocate(2 * kMiB);  // needs a 20 MiB segment
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message ==
        "out of simulated device memory: mapping a segment of 20971520 bytes would exceed the "
        "capacity of 4194304 bytes (2097152 already mapped)");
  CHECK(alloc.stats().segments_mapped == 1);
  must_allocate(alloc, 512);  // still usable
}
