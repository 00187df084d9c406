// The registry of the allocations a reference graph may touch.
//
// The CUDA backend maps each simulated segment onto one cudaMalloc allocation
// at the same offsets, and stages host data through cudaHostAlloc buffers; it
// registers every such allocation here with the identity the driver gave it
// (CU_POINTER_ATTRIBUTE_BUFFER_ID, unique per allocation over the process's
// life and never reused after a free: docs/cuda-reference.md, "What the
// backend proves from the driver"). The registry answers the questions the
// graph checks ask: which one buffer holds a baked pointer's range, what
// simulated address a device address stands for, and whether every buffer is
// still the allocation it was (same id, same base and size) after a replay.
// Plain C++: the driver queries live in the CUDA backend, which hands their
// answers in as BufferObservations, so all of this is tested without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/address.hpp"
#include "model/result.hpp"

namespace capsim::cuda {

// X(enumerator, name)
#define CAPSIM_BUFFER_KINDS(X) \
  X(kDevice, "device")         \
  X(kPinnedHost, "pinned_host")

enum class BufferKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_BUFFER_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view buffer_kind_name(BufferKind kind);

struct StaticBuffer {
  std::string name;  // "segment 0x7f0000000000", "staging 0"
  BufferKind kind = BufferKind::kDevice;
  std::uint64_t base = 0;  // the real address
  std::uint64_t bytes = 0;
  std::uint64_t buffer_id = 0;  // the driver's id when it was registered
  // A device buffer that maps a simulated segment: the segment's base.
  std::optional<Address> simulated_base;
};

// What the driver says of a registered buffer's base now.
struct BufferObservation {
  bool found = false;  // false: the driver knows no allocation there any more
  std::uint64_t buffer_id = 0;
  std::uint64_t range_base = 0;  // cuMemGetAddressRange (device buffers)
  std::uint64_t range_bytes = 0;
};

// The limit on registered buffers (a World maps at most a few thousand
// segments before its capacity limit).
inline constexpr std::size_t kMaxBuffers = 1u << 16;

class BufferRegistry {
 public:
  // Refuses an empty buffer, one that overlaps a registered buffer (of either
  // kind: they share one address space under UVA), a reused buffer id or
  // name, and a simulated base mapped twice. Errors name both buffers.
  Status add(StaticBuffer buffer);

  const std::vector<StaticBuffer>& buffers() const { return buffers_; }

  // The one buffer that holds all of [address, address + bytes). A range of
  // 0 bytes (a tensor with no elements) must start inside a buffer or at its
  // end. The error says whether the range lies outside every buffer or runs
  // off the end of the one it starts in.
  Result<std::size_t> locate(std::uint64_t address, std::uint64_t bytes) const;

  // A device address inside a segment's buffer, as the simulated address at
  // the same offset of the segment; and back.
  Result<Address> to_simulated(std::uint64_t device_address) const;
  Result<std::uint64_t> to_device(Address simulated) const;

  // One observation per buffer, in registration order: every buffer must
  // still be found with its id (a free and a new allocation at the same
  // address has a new id) and, for device buffers, its base and at least its
  // size. The error names the first buffer that changed and how.
  Status check_unchanged(std::span<const BufferObservation> now) const;

 private:
  std::vector<StaticBuffer> buffers_;  // in registration order
  // Indices sorted by base, for locate().
  std::vector<std::size_t> by_base_;
};

}  // namespace capsim::cuda
