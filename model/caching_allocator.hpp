// CachingAllocator: a deterministic model of PyTorch's CUDA caching allocator.
//
// What it models (c10/cuda/CUDACachingAllocator.cpp, see docs/architecture.md):
//  - sizes round up to 512 bytes; requests of at most 1 MiB are "small" and are
//    carved from 2 MiB segments, requests under 10 MiB from 20 MiB segments, and
//    larger ones get a segment of their own rounded up to 2 MiB;
//  - best fit: the smallest free block that is large enough, lowest address on a
//    tie; a block is split when the rest is at least 512 bytes (small) or more
//    than 1 MiB (large), and freed blocks coalesce with free neighbours;
//  - private pools (`PoolId`, like `graph_pool_handle()`): a pool's segments only
//    ever serve that pool, so the cudagraph pool never mixes with eager memory;
//  - `checkpoint(pool)` / `restore(pool, checkpoint, live)`, the equivalent of
//    `_cuda_getCheckpointState` + `_cuda_setCheckpointPoolState` followed by the
//    frees of the blocks that died since the checkpoint;
//  - `live_blocks(pool)` and `check_pool_live_allocations`, the equivalents of
//    `check_memory_pool` and `_cuda_checkPoolLiveAllocations`.
// It never asks the host for an address: the same sequence of calls gives the
// same addresses, always. Segments are never returned (no `empty_cache`).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "model/address.hpp"
#include "model/device_memory.hpp"
#include "model/fault.hpp"
#include "model/pool_id.hpp"
#include "model/result.hpp"

namespace capsim {

// PyTorch's constants (CUDACachingAllocator.cpp).
inline constexpr std::uint64_t kMinBlockSize = 512;
inline constexpr std::uint64_t kSmallSize = 1 * kMiB;
inline constexpr std::uint64_t kSmallBuffer = 2 * kMiB;
inline constexpr std::uint64_t kLargeBuffer = 20 * kMiB;
inline constexpr std::uint64_t kMinLargeAlloc = 10 * kMiB;
inline constexpr std::uint64_t kRoundLarge = 2 * kMiB;
// capsim's own limits: one request may not exceed this, and a world may not
// create more pools than this.
inline constexpr std::int64_t kMaxAllocationBytes = std::int64_t{1} << 40;
inline constexpr std::uint32_t kMaxPools = 1u << 16;

// One allocation handed to a caller.
struct Block {
  Address address = 0;
  std::uint64_t size = 0;       // rounded size that the block occupies
  std::uint64_t requested = 0;  // bytes the caller asked for
  PoolId pool;

  AddressRange range() const { return {address, size}; }
  friend bool operator==(const Block&, const Block&) = default;
};

// The state of one pool at a point in time: its segments and, inside each, the
// blocks in address order with their allocated flags.
struct PoolCheckpoint {
  struct BlockRecord {
    Address address = 0;
    std::uint64_t size = 0;
    std::uint64_t requested = 0;
    bool allocated = false;
    friend bool operator==(const BlockRecord&, const BlockRecord&) = default;
  };
  struct SegmentRecord {
    AddressRange range;
    std::vector<BlockRecord> blocks;
    friend bool operator==(const SegmentRecord&, const SegmentRecord&) = default;
  };
  PoolId pool;
  std::vector<SegmentRecord> segments;
  friend bool operator==(const PoolCheckpoint&, const PoolCheckpoint&) = default;
};

// A segment and the pool it serves.
struct SegmentInfo {
  AddressRange range;
  PoolId pool;
};

struct AllocatorStats {
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t segments_mapped = 0;
  std::uint64_t splits = 0;
  std::uint64_t merges = 0;
  std::uint64_t reserved_bytes = 0;   // bytes in segments
  std::uint64_t allocated_bytes = 0;  // bytes in allocated blocks (rounded sizes)
};

struct AllocatorOptions {
  Fault fault = Fault::kNone;  // a kAllocator fault (model/fault.hpp): negative controls only
};

class CachingAllocator {
 public:
  explicit CachingAllocator(DeviceMemory& memory, AllocatorOptions options = {});
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A new private pool (`torch.cuda.graph_pool_handle()`).
  Result<PoolId> create_pool();
  bool pool_exists(PoolId pool) const { return pool.value < pools_.size(); }

  // `bytes` is signed so that a negative request is an error, not a huge one.
  Result<Block> allocate(std::int64_t bytes, PoolId pool = kDefaultPool);
  Status free(Address address);

  // The allocated block that starts at `address`.
  Result<Block> block_at(Address address) const;
  // The allocated blocks of a pool, in address order.
  std::vector<Block> live_blocks(PoolId pool) const;
  // The pool's allocated blocks must start exactly at `expected` (duplicates
  // allowed: aliases share a block). The error names the first difference:
  // an expected pointer that is not allocated, or an untracked allocation.
  Status check_pool_live_allocations(PoolId pool, std::span<const Address> expected) const;

  Result<PoolCheckpoint> checkpoint(PoolId pool) const;
  // Puts the pool back into the checkpoint's layout, keeping allocated exactly
  // the checkpointed blocks that start at an address in `live`; all others are
  // freed. Every live address must be an allocated block of the checkpoint.
  Status restore(PoolId pool, const PoolCheckpoint& checkpoint, std::span<const Address> live);

  // Every mapped segment, in address order.
  std::vector<SegmentInfo> segments() const;
  const AllocatorStats& stats() const { return stats_; }
  std::uint64_t allocated_bytes(PoolId pool) const;
  // Bytes of the pool's segments (a segment is never unmapped).
  std::uint64_t reserved_bytes(PoolId pool) const;
  DeviceMemory& memory() { return memory_; }

 private:
  enum class SizeClass : std::uint8_t { kSmall, kLarge };
  struct BlockState {
    Address address = 0;
    std::uint64_t size = 0;
    std::uint64_t requested = 0;
    Address segment = 0;
    bool allocated = false;
  };
  struct SegmentState {
    AddressRange range;
    PoolId pool;
    SizeClass size_class = SizeClass::kSmall;
  };
  // Free blocks ordered by (size, address): begin of lower_bound is best fit.
  using FreeSet = std::set<std::pair<std::uint64_t, Address>>;
  struct PoolState {
    FreeSet free_small;
    FreeSet free_large;
    std::uint64_t allocated_bytes = 0;
    std::uint64_t reserved_bytes = 0;
  };

  FreeSet& free_set(PoolId pool, SizeClass size_class);
  Result<Address> map_segment(PoolId pool, SizeClass size_class, std::uint64_t rounded);
  void insert_free(const BlockState& block);
  void erase_free(const BlockState& block);
  const SegmentState& segment_of(const BlockState& block) const;
  // Merges the free block at `address` with free neighbours in its segment and
  // returns the address of the merged block.
  Address coalesce(Address address);
  void reset_segment(const SegmentState& segment, const PoolCheckpoint::SegmentRecord* record,
                     const std::set<Address>& live);

  DeviceMemory& memory_;
  AllocatorOptions options_;
  std::vector<PoolState> pools_;
  std::map<Address, SegmentState> segments_;  // by base
  std::map<Address, BlockState> blocks_;      // every block of every segment, by address
  std::uint64_t fault_instance_ = 0;          // kProcessGlobalPlacement only
  AllocatorStats stats_;
};

// Rounding used by PyTorch: at least 512 bytes, then a multiple of 512.
std::uint64_t round_size(std::uint64_t bytes);
// The segment size that a request of `rounded` bytes causes to be mapped.
std::uint64_t allocation_size(std::uint64_t rounded);

}  // namespace capsim
