// Properties of the CachingAllocator over random alloc/free sequences, each
// with a negative control: the same property run against a deliberately broken
// allocator (Fault) must fail, and RapidCheck must shrink it.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "model/caching_allocator.hpp"
#include "model/device_memory.hpp"
#include "tests/support/rc_doctest.hpp"

using namespace capsim;

namespace capsim {
// How RapidCheck shows a Block in a counterexample.
std::ostream& operator<<(std::ostream& os, const Block& b) {
  return os << "Block{" << hex(b.address) << ", size " << b.size << ", pool " << b.pool.value
            << "}";
}
}  // namespace capsim

using capsim::testing::rc_expect_failure;
using capsim::testing::rc_prop;

namespace {

constexpr int kPools = 3;  // the default pool and two private ones

// One call: allocate `bytes` from pool `pool`, or free the live block number
// `pick` (modulo the live count; a no-op when nothing is live).
struct Op {
  bool allocate = true;
  std::int64_t bytes = 512;
  int pool = 0;
  std::size_t pick = 0;
};

std::ostream& operator<<(std::ostream& os, const Op& op) {
  if (op.allocate) return os << "alloc(" << op.bytes << ", pool " << op.pool << ")";
  return os << "free(#" << op.pick << ")";
}

rc::Gen<std::int64_t> gen_bytes() {
  // Mostly small requests, some large ones, a few that get their own segment.
  return rc::gen::weightedOneOf<std::int64_t>({
      {6, rc::gen::inRange<std::int64_t>(1, 8193)},
      {2, rc::gen::inRange<std::int64_t>(8193, 1 << 20)},
      {1, rc::gen::inRange<std::int64_t>((1 << 20) + 1, 12 << 20)},
  });
}

rc::Gen<Op> gen_op() {
  return rc::gen::weightedOneOf<Op>({
      {3, rc::gen::map(rc::gen::pair(gen_bytes(), rc::gen::inRange(0, kPools)),
                       [](const std::pair<std::int64_t, int>& p) {
                         return Op{true, p.first, p.second, 0};
                       })},
      {2, rc::gen::map(rc::gen::inRange<std::size_t>(0, 64),
                       [](std::size_t pick) {
                         return Op{false, 0, 0, pick};
                       })},
  });
}

// A world that runs a sequence and keeps what the caller holds.
struct Harness {
  explicit Harness(Fault fault = Fault::kNone) : alloc(memory, AllocatorOptions{fault}) {
    for (int p = 1; p < kPools; ++p) RC_ASSERT(alloc.create_pool().ok());
  }

  // Runs the ops; returns every address handed out, in order.
  std::vector<Address> run(const std::vector<Op>& ops) {
    std::vector<Address> handed_out;
    for (const Op& op : ops) {
      if (op.allocate) {
        auto block = alloc.allocate(op.bytes, PoolId{static_cast<std::uint32_t>(op.pool)});
        RC_ASSERT(block.ok());
        handed_out.push_back(block->address);
        live.push_back(*block);
      } else if (!live.empty()) {
        const std::size_t i = op.pick % live.size();
        RC_ASSERT(alloc.free(live[i].address).ok());
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    return handed_out;
  }

  DeviceMemory memory;
  CachingAllocator alloc;
  std::vector<Block> live;
};

void same_sequence_same_addresses(Fault fault) {
  const auto ops = *rc::gen::container<std::vector<Op>>(gen_op());
  // Both worlds are alive at once, as two runs of one program would be.
  Harness first(fault);
  Harness second(fault);
  RC_ASSERT(first.run(ops) == second.run(ops));
}

void live_blocks_never_overlap(Fault fault) {
  const auto ops = *rc::gen::container<std::vector<Op>>(gen_op());
  Harness h(fault);
  h.run(ops);
  // What the caller holds, not what the allocator believes: no two overlap.
  auto blocks = h.live;
  std::sort(blocks.begin(), blocks.end(),
            [](const Block& a, const Block& b) { return a.address < b.address; });
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    RC_ASSERT(blocks[i - 1].address + blocks[i - 1].size <= blocks[i].address);
  }
  for (const Block& b : blocks) RC_ASSERT(b.size >= static_cast<std::uint64_t>(b.requested));
}

void pools_are_isolated(Fault fault) {
  const auto ops = *rc::gen::container<std::vector<Op>>(gen_op());
  Harness h(fault);
  h.run(ops);
  const auto segments = h.alloc.segments();
  for (const Block& b : h.live) {
    const auto it = std::find_if(segments.begin(), segments.end(),
                                 [&](const SegmentInfo& s) { return s.range.contains(b.range()); });
    RC_ASSERT(it != segments.end());
    RC_ASSERT(it->pool == b.pool);  // a block lies in a segment of its own pool
  }
  for (int p = 0; p < kPools; ++p) {
    std::vector<Address> expected;
    for (const Block& b : h.live) {
      if (b.pool.value == static_cast<std::uint32_t>(p)) expected.push_back(b.address);
    }
    RC_ASSERT(
        h.alloc.check_pool_live_allocations(PoolId{static_cast<std::uint32_t>(p)}, expected).ok());
  }
}

// Restoring a checkpoint with a live set is the same as having freed, at the
// checkpoint, every block that is not live: same live blocks, same layout.
void restore_is_free_of_the_dead(Fault fault) {
  const PoolId pool{1};
  auto in_pool = [](std::vector<Op> ops) {
    for (Op& op : ops) op.pool = 1;
    return ops;
  };
  const auto before = in_pool(*rc::gen::container<std::vector<Op>>(gen_op()));
  const auto after = in_pool(*rc::gen::container<std::vector<Op>>(gen_op()));

  Harness restored(fault);
  restored.run(before);
  const auto at_checkpoint = restored.live;
  const auto keep =
      *rc::gen::container<std::vector<bool>>(at_checkpoint.size(), rc::gen::arbitrary<bool>());
  auto cp = restored.alloc.checkpoint(pool);
  RC_ASSERT(cp.ok());
  restored.run(after);
  std::vector<Address> live;
  for (std::size_t i = 0; i < at_checkpoint.size(); ++i) {
    if (keep[i]) live.push_back(at_checkpoint[i].address);
  }
  RC_ASSERT(restored.alloc.restore(pool, *cp, live).ok());

  Harness freed;
  freed.run(before);
  for (std::size_t i = 0; i < at_checkpoint.size(); ++i) {
    if (!keep[i]) RC_ASSERT(freed.alloc.free(at_checkpoint[i].address).ok());
  }

  RC_ASSERT(restored.alloc.live_blocks(pool) == freed.alloc.live_blocks(pool));
  RC_ASSERT(restored.alloc.check_pool_live_allocations(pool, live).ok());
  // Same layout in the checkpointed segments; later segments are wholly free.
  auto a = restored.alloc.checkpoint(pool);
  auto b = freed.alloc.checkpoint(pool);
  RC_ASSERT(a.ok() && b.ok());
  RC_ASSERT(a->segments.size() >= b->segments.size());
  for (std::size_t s = 0; s < a->segments.size(); ++s) {
    if (s < b->segments.size()) {
      RC_ASSERT(a->segments[s] == b->segments[s]);
    } else {
      RC_ASSERT(a->segments[s].blocks.size() == 1u);
      RC_ASSERT(!a->segments[s].blocks[0].allocated);
    }
  }
}

}  // namespace

TEST_CASE("allocator: the same call sequence gives the same addresses") {
  rc_prop("deterministic", [] { same_sequence_same_addresses(Fault::kNone); });
  rc_expect_failure("process-wide state leaks into placement",
                    [] { same_sequence_same_addresses(Fault::kProcessGlobalPlacement); });
}

TEST_CASE("allocator: no two live blocks overlap") {
  rc_prop("no overlap", [] { live_blocks_never_overlap(Fault::kNone); });
  rc_expect_failure("overlapping split",
                    [] { live_blocks_never_overlap(Fault::kOverlappingSplit); });
}

TEST_CASE("allocator: pools are isolated") {
  rc_prop("isolated", [] { pools_are_isolated(Fault::kNone); });
  rc_expect_failure("pools ignored", [] { pools_are_isolated(Fault::kIgnorePools); });
}

TEST_CASE("allocator: restore keeps exactly the live set") {
  rc_prop("restore == free the dead", [] { restore_is_free_of_the_dead(Fault::kNone); });
  rc_expect_failure("restore keeps every block",
                    [] { restore_is_free_of_the_dead(Fault::kPoolRestoreKeepsAll); });
}
