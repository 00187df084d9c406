// CachingAllocator (see caching_allocator.hpp): size rounding, best-fit allocation with splits
// and coalescing, private pools, and their checkpoints and restores.
#include "model/caching_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace capsim {

std::uint64_t round_size(std::uint64_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

std::uint64_t allocation_size(std::uint64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

namespace {
// Only for Fault::kProcessGlobalPlacement: process-wide state, the
// kind of hidden global the determinism rules forbid. Each faulty allocator
// takes the next number, so two of them in one process place blocks apart.
std::uint64_t next_faulty_instance() {
  static std::atomic<std::uint64_t> instances{0};
  return instances.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

CachingAllocator::CachingAllocator(DeviceMemory& memory, AllocatorOptions options)
    : memory_(memory), options_(options) {
  CAPSIM_CHECK_FAULT_SITE(options_.fault, FaultSite::kAllocator);
  if (options_.fault == Fault::kProcessGlobalPlacement) {
    fault_instance_ = next_faulty_instance();
  }
  pools_.emplace_back();  // kDefaultPool
}

Result<PoolId> CachingAllocator::create_pool() {
  if (pools_.size() >= kMaxPools) {
    return make_error(fmt::format("too many memory pools: the limit is {}", kMaxPools));
  }
  pools_.emplace_back();
  return PoolId{static_cast<std::uint32_t>(pools_.size() - 1)};
}

CachingAllocator::FreeSet& CachingAllocator::free_set(PoolId pool, SizeClass size_class) {
  if (options_.fault == Fault::kIgnorePools) pool = kDefaultPool;
  PoolState& state = pools_.at(pool.value);
  return size_class == SizeClass::kSmall ? state.free_small : state.free_large;
}

const CachingAllocator::SegmentState& CachingAllocator::segment_of(const BlockState& block) const {
  auto it = segments_.find(block.segment);
  CAPSIM_CHECK(it != segments_.end(), "block without a segment");
  return it->second;
}

void CachingAllocator::insert_free(const BlockState& block) {
  CAPSIM_CHECK(!block.allocated);
  const SegmentState& segment = segment_of(block);
  const bool inserted =
      free_set(segment.pool, segment.size_class).emplace(block.size, block.address).second;
  CAPSIM_CHECK(inserted, "a free block was listed twice");
}

void CachingAllocator::erase_free(const BlockState& block) {
  const SegmentState& segment = segment_of(block);
  const auto erased = free_set(segment.pool, segment.size_class).erase({block.size, block.address});
  CAPSIM_CHECK(erased == 1, "a free block was missing from its free list");
}

Result<Address> CachingAllocator::map_segment(PoolId pool, SizeClass size_class,
                                              std::uint64_t rounded) {
  if (options_.fault == Fault::kProcessGlobalPlacement) {
    // Burn 1..8 granules chosen by this allocator's process-wide number.
    const std::uint64_t skip = 1 + fault_instance_ % 8;
    auto burned = memory_.map_segment(skip * memory_.options().segment_granularity);
    if (!burned) return burned.error();
  }
  auto range = memory_.map_segment(allocation_size(rounded));
  if (!range) return range.error();
  segments_.emplace(range->base, SegmentState{*range, pool, size_class});
  BlockState whole{range->base, range->bytes, 0, range->base, false};
  blocks_.emplace(whole.address, whole);
  insert_free(whole);
  ++stats_.segments_mapped;
  stats_.reserved_bytes += range->bytes;
  pools_[pool.value].reserved_bytes += range->bytes;
  return range->base;
}

Result<Block> CachingAllocator::allocate(std::int64_t bytes, PoolId pool) {
  if (bytes <= 0) {
    return make_error(fmt::format("allocation size must be positive, got {} bytes", bytes));
  }
  if (bytes > kMaxAllocationBytes) {
    return make_error(fmt::format("allocation of {} bytes exceeds the limit of {} bytes", bytes,
                                  kMaxAllocationBytes));
  }
  if (!pool_exists(pool)) {
    return make_error(fmt::format("allocation from unknown memory pool {}", pool.value));
  }
  const std::uint64_t rounded = round_size(static_cast<std::uint64_t>(bytes));
  const SizeClass size_class = rounded <= kSmallSize ? SizeClass::kSmall : SizeClass::kLarge;

  FreeSet& free = free_set(pool, size_class);
  auto fit = free.lower_bound({rounded, 0});
  if (fit == free.end()) {
    auto mapped = map_segment(pool, size_class, rounded);
    if (!mapped) return mapped.error();
    fit = free.lower_bound({rounded, 0});
    CAPSIM_CHECK(fit != free.end(), "a fresh segment did not fit its request");
  }
  BlockState& block = blocks_.at(fit->second);
  CAPSIM_CHECK(!block.allocated && block.size >= rounded);
  free.erase(fit);

  const std::uint64_t remaining = block.size - rounded;
  const bool split =
      size_class == SizeClass::kSmall ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (split) {
    // The fault makes the rest start 256 bytes early, overlapping this block.
    const Address rest_at = options_.fault == Fault::kOverlappingSplit
                                ? block.address + rounded - kMinBlockSize / 2
                                : block.address + rounded;
    BlockState rest{rest_at, remaining, 0, block.segment, false};
    block.size = rounded;
    blocks_.emplace(rest.address, rest);
    insert_free(rest);
    ++stats_.splits;
  }
  block.allocated = true;
  block.requested = static_cast<std::uint64_t>(bytes);
  ++stats_.allocations;
  stats_.allocated_bytes += block.size;
  pools_[pool.value].allocated_bytes += block.size;
  return Block{block.address, block.size, block.requested, pool};
}

Address CachingAllocator::coalesce(Address address) {
  auto it = blocks_.find(address);
  CAPSIM_CHECK(it != blocks_.end() && !it->second.allocated);
  // Merge the following free neighbour into this block.
  auto next = std::next(it);
  if (next != blocks_.end() && next->second.segment == it->second.segment &&
      !next->second.allocated) {
    erase_free(next->second);
    it->second.size += next->second.size;
    blocks_.erase(next);
    ++stats_.merges;
  }
  // Merge this block into the preceding free neighbour.
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.segment == it->second.segment && !prev->second.allocated) {
      erase_free(prev->second);
      prev->second.size += it->second.size;
      blocks_.erase(it);
      ++stats_.merges;
      return prev->first;
    }
  }
  return it->first;
}

Status CachingAllocator::free(Address address) {
  auto it = blocks_.find(address);
  if (it == blocks_.end()) {
    return make_error(
        fmt::format("free of unknown address {}: no block starts there", hex(address)));
  }
  BlockState& block = it->second;
  if (!block.allocated) {
    return make_error(fmt::format("double free of {}: the block is already free", hex(address)));
  }
  const PoolId pool = segment_of(block).pool;
  block.allocated = false;
  block.requested = 0;
  ++stats_.frees;
  stats_.allocated_bytes -= block.size;
  pools_[pool.value].allocated_bytes -= block.size;
  memory_.on_free(AddressRange{block.address, block.size});
  const Address merged = coalesce(address);
  insert_free(blocks_.at(merged));
  return {};
}

Result<Block> CachingAllocator::block_at(Address address) const {
  auto it = blocks_.find(address);
  if (it == blocks_.end() || !it->second.allocated) {
    return make_error(fmt::format("no allocated block starts at {}", hex(address)));
  }
  const BlockState& b = it->second;
  return Block{b.address, b.size, b.requested, segment_of(b).pool};
}

std::vector<Block> CachingAllocator::live_blocks(PoolId pool) const {
  std::vector<Block> live;
  for (const auto& [address, block] : blocks_) {
    if (!block.allocated) continue;
    const SegmentState& segment = segment_of(block);
    if (segment.pool != pool) continue;
    live.push_back(Block{block.address, block.size, block.requested, pool});
  }
  return live;
}

std::vector<SegmentInfo> CachingAllocator::segments() const {
  std::vector<SegmentInfo> out;
  for (const auto& [base, segment] : segments_) out.push_back({segment.range, segment.pool});
  return out;
}

std::uint64_t CachingAllocator::allocated_bytes(PoolId pool) const {
  return pool_exists(pool) ? pools_[pool.value].allocated_bytes : 0;
}

std::uint64_t CachingAllocator::reserved_bytes(PoolId pool) const {
  return pool_exists(pool) ? pools_[pool.value].reserved_bytes : 0;
}

Status CachingAllocator::check_pool_live_allocations(PoolId pool,
                                                     std::span<const Address> expected) const {
  if (!pool_exists(pool)) {
    return make_error(fmt::format("check of unknown memory pool {}", pool.value));
  }
  const std::set<Address> want(expected.begin(), expected.end());
  std::set<Address> have;
  for (const Block& b : live_blocks(pool)) have.insert(b.address);
  for (Address a : want) {
    if (!have.contains(a)) {
      return make_error(
          fmt::format("pool {}: expected a live allocation at {}, but it is not allocated",
                      pool.value, hex(a)));
    }
  }
  for (Address a : have) {
    if (!want.contains(a)) {
      return make_error(
          fmt::format("pool {}: allocation at {} is live but not tracked", pool.value, hex(a)));
    }
  }
  return {};
}

Result<PoolCheckpoint> CachingAllocator::checkpoint(PoolId pool) const {
  if (!pool_exists(pool)) {
    return make_error(fmt::format("checkpoint of unknown memory pool {}", pool.value));
  }
  PoolCheckpoint cp;
  cp.pool = pool;
  for (const auto& [base, segment] : segments_) {
    if (segment.pool != pool) continue;
    PoolCheckpoint::SegmentRecord record{segment.range, {}};
    for (auto it = blocks_.find(base); it != blocks_.end() && it->second.segment == base; ++it) {
      const BlockState& b = it->second;
      record.blocks.push_back({b.address, b.size, b.requested, b.allocated});
    }
    cp.segments.push_back(std::move(record));
  }
  return cp;
}

void CachingAllocator::reset_segment(const SegmentState& segment,
                                     const PoolCheckpoint::SegmentRecord* record,
                                     const std::set<Address>& live) {
  const Address base = segment.range.base;
  // Drop the segment's current blocks.
  for (auto it = blocks_.find(base); it != blocks_.end() && it->second.segment == base;) {
    if (!it->second.allocated) {
      erase_free(it->second);
    } else {
      pools_[segment.pool.value].allocated_bytes -= it->second.size;
      stats_.allocated_bytes -= it->second.size;
    }
    it = blocks_.erase(it);
  }
  // Reinstall the checkpointed layout (or one free block for a segment mapped
  // after the checkpoint), keeping only the live blocks allocated.
  std::vector<PoolCheckpoint::BlockRecord> layout;
  if (record != nullptr) {
    layout = record->blocks;
  } else {
    layout.push_back({base, segment.range.bytes, 0, false});
  }
  const bool keep_all = options_.fault == Fault::kPoolRestoreKeepsAll;
  for (auto& r : layout) {
    if (r.allocated && !keep_all && !live.contains(r.address)) {
      r.allocated = false;
      r.requested = 0;
    }
  }
  // Adjacent free records merge, as they would have on free().
  std::vector<PoolCheckpoint::BlockRecord> merged;
  for (const auto& r : layout) {
    if (!merged.empty() && !r.allocated && !merged.back().allocated) {
      merged.back().size += r.size;
      ++stats_.merges;
    } else {
      merged.push_back(r);
    }
  }
  for (const auto& r : merged) {
    BlockState b{r.address, r.size, r.requested, base, r.allocated};
    blocks_.emplace(b.address, b);
    if (b.allocated) {
      pools_[segment.pool.value].allocated_bytes += b.size;
      stats_.allocated_bytes += b.size;
    } else {
      insert_free(b);
    }
  }
}

Status CachingAllocator::restore(PoolId pool, const PoolCheckpoint& checkpoint,
                                 std::span<const Address> live) {
  if (!pool_exists(pool)) {
    return make_error(fmt::format("restore of unknown memory pool {}", pool.value));
  }
  if (checkpoint.pool != pool) {
    return make_error(fmt::format("restore of pool {} from a checkpoint of pool {}", pool.value,
                                  checkpoint.pool.value));
  }
  // Validate everything before changing anything.
  std::map<Address, const PoolCheckpoint::SegmentRecord*> records;
  std::set<Address> checkpointed_allocated;
  for (const auto& record : checkpoint.segments) {
    auto it = segments_.find(record.range.base);
    if (it == segments_.end() || it->second.range != record.range || it->second.pool != pool) {
      return make_error(fmt::format(
          "checkpoint of pool {} names segment {} that this allocator does not have in that pool",
          pool.value, hex(record.range.base)));
    }
    records.emplace(record.range.base, &record);
    for (const auto& b : record.blocks) {
      if (b.allocated) checkpointed_allocated.insert(b.address);
    }
  }
  const std::set<Address> live_set(live.begin(), live.end());
  for (Address a : live_set) {
    if (!checkpointed_allocated.contains(a)) {
      return make_error(fmt::format(
          "restore of pool {}: live address {} was not an allocated block in the checkpoint",
          pool.value, hex(a)));
    }
  }

  // Only poison mode needs to know what was allocated before.
  std::vector<AddressRange> before;
  if (memory_.poison_mode()) {
    for (const Block& b : live_blocks(pool)) before.push_back(b.range());
  }

  for (const auto& [base, segment] : segments_) {
    if (segment.pool != pool) continue;
    auto rec = records.find(base);
    reset_segment(segment, rec == records.end() ? nullptr : rec->second, live_set);
  }

  // Bytes that were allocated and are now free count as freed (poison mode).
  for (const AddressRange& range : before) {
    auto it = blocks_.upper_bound(range.base);
    if (it != blocks_.begin()) --it;  // the block that may start before `range`
    for (; it != blocks_.end() && it->first < range.end(); ++it) {
      const AddressRange block{it->first, it->second.size};
      if (it->second.allocated || !block.overlaps(range)) continue;
      const Address lo = std::max(block.base, range.base);
      const Address hi = std::min(block.end(), range.end());
      memory_.on_free(AddressRange{lo, hi - lo});
    }
  }
  return {};
}

}  // namespace capsim
