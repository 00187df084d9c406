// DeviceMemory: the simulated, byte-addressed device address space.
//
// Memory is made of segments mapped at fixed, deterministic base addresses
// (first at 0x7f0000000000, each segment a multiple of 2 MiB, laid out one after
// the other and never reused). This is the memory a StepProgram reads and writes
// at its baked addresses. As on a GPU, freeing a block does not clear it: the old
// bytes stay until something overwrites them, which is exactly what makes a stale
// replay read old (or someone else's new) values. The optional poison mode fills
// freed bytes with a NaN pattern so that a read after free becomes visible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "model/address.hpp"
#include "model/result.hpp"

namespace capsim {

// Writes are tracked per page of this many bytes (see DeviceMemory::written_since).
inline constexpr std::uint64_t kWritePageBytes = 4096;

// The poison pattern: a quiet NaN with a recognisable payload, so that poisoned
// floats propagate through arithmetic and poisoned bytes are easy to spot.
inline constexpr std::uint32_t kPoisonWord = 0x7fc0dead;

struct DeviceMemoryOptions {
  Address first_base = 0x7f0000000000;
  std::uint64_t segment_granularity = 2 * kMiB;
  // The limit on all mapped segments together; mapping past it is an
  // out-of-memory error, never a host allocation failure.
  std::uint64_t capacity_bytes = 4 * kGiB;
  bool poison_freed = false;
  // Values off (docs/trace-format.md §8): segments get addresses but no host
  // bytes, so that a program whose tensors exceed the host (a 7B-parameter
  // model) runs in little memory. Reads give zeros, writes are dropped and
  // resolve() refuses: a backend runs nothing over unbacked memory.
  bool backed = true;
};

// The segments that exist, in base order: what a Backend must materialise.
struct MemoryLayout {
  std::vector<AddressRange> segments;
};

class DeviceMemory {
 public:
  explicit DeviceMemory(DeviceMemoryOptions options = {});
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Maps a new zero-filled segment of `bytes` (a positive multiple of the
  // granularity) at the next deterministic base.
  Result<AddressRange> map_segment(std::uint64_t bytes);

  // The host bytes behind [address, address + bytes), which must lie inside one
  // segment; for bytes == 0, a null pointer, wherever `address` is. The pointer
  // is for backends only and must never reach output. An error for any bytes
  // of unbacked memory. The mutable form is the only way to write (write()
  // and the poison on free go through it), so it marks the range's pages
  // written, whether or not the caller then writes all of them.
  Result<std::byte*> resolve(Address address, std::uint64_t bytes);
  Result<const std::byte*> resolve(Address address, std::uint64_t bytes) const;

  // An error unless [address, address + bytes) lies inside one segment.
  Status check_mapped(Address address, std::uint64_t bytes) const;

  // Unbacked: read gives zeros, write drops its bytes (both check the range).
  Status read(Address address, std::span<std::byte> out) const;
  Status write(Address address, std::span<const std::byte> in);

  // Called by the allocator when [range) stops being allocated. In poison mode
  // the bytes become kPoisonWord; otherwise they are left as they are.
  void on_free(AddressRange range);

  bool poison_mode() const { return options_.poison_freed; }
  bool backed() const { return options_.backed; }
  MemoryLayout layout() const;

  // Write tracking, for a mirror that keeps a copy of this memory
  // (cuda_reference/reference_mirror.hpp): each mutable resolve stamps the
  // pages it covers with the next write count, so that the pages written
  // after a count are known without comparing bytes. A page never written
  // still holds the zeros it was mapped with.
  std::uint64_t write_count() const { return writes_; }
  // The pages written after `count` (an earlier write_count()), adjacent ones
  // merged, in address order. Costs a look at each segment written since,
  // and at each of its pages.
  std::vector<AddressRange> written_since(std::uint64_t count) const;
  std::uint64_t mapped_bytes() const { return mapped_bytes_; }
  const DeviceMemoryOptions& options() const { return options_; }

 private:
  // Host backing is an anonymous mmap: zeroed pages that the kernel only
  // materialises when touched, so a 2 MiB segment that holds a few small
  // tensors costs a few pages. (calloc promised the same, but once a World had
  // freed a segment, glibc's dynamic mmap threshold served the next ones from
  // the heap and zeroed all 2 MiB with memset: 17 % of `capsim check`.)
  struct Unmapper {
    std::size_t bytes = 0;
    void operator()(std::byte* p) const;
  };
  struct Segment {
    AddressRange range;
    std::unique_ptr<std::byte, Unmapper> bytes;
    // Backed only: per page, the write count of its last mutable resolve;
    // and the segment's latest, so that written_since skips a clean segment.
    std::vector<std::uint64_t> page_writes;
    std::uint64_t last_write = 0;
  };
  const Segment* find(Address address, std::uint64_t bytes) const;
  // The segment holding [address, address + bytes) (bytes > 0), or the
  // check_mapped error.
  Result<const Segment*> segment_of(Address address, std::uint64_t bytes) const;

  DeviceMemoryOptions options_;
  std::map<Address, Segment> segments_;  // keyed by base; ordered on purpose
  Address next_base_;
  std::uint64_t mapped_bytes_ = 0;
  std::uint64_t writes_ = 0;
};

}  // namespace capsim
