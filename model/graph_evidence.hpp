// GraphEvidence: what a backend can say about one replay of a graph.
//
// Two digests summarise a replay so that a trace can carry them and a later
// re-simulation can check them: the baked pointers (each pointer argument's
// step, argument index, simulated address and extent, as the backend holds
// them; the CUDA backend reads them back from the driver) and the bytes of
// every range the graph writes, read after the replay. The model computes the
// same two from its own program and memory, so a trace recorded on a GPU is
// checked without one. Buffer ids are the CUDA driver's
// (CU_POINTER_ATTRIBUTE_BUFFER_ID) of the allocations the graph bakes, in
// baked order without repeats; the model has none.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/result.hpp"
#include "model/step_program.hpp"

namespace capsim {

struct GraphEvidence {
  std::uint64_t baked = 0;  // pointer arguments
  std::uint64_t baked_digest = 0;
  std::uint64_t written_digest = 0;
  std::vector<std::uint64_t> buffer_ids;  // CUDA only
  friend bool operator==(const GraphEvidence&, const GraphEvidence&) = default;
};

// FNV-1a 64 over (step, arg, address, bytes) of each use, as little-endian
// 64-bit words, in the order given (pointer_uses order).
std::uint64_t baked_digest(std::span<const PointerUse> baked);

// Reads `bytes` bytes at a simulated address into `out`.
using ReadMemory = std::function<Status(Address address, std::span<std::byte> out)>;

// FNV-1a 64 over the bytes of every written range of `baked` (kWrite or
// kReadWrite), in order; a range written twice is hashed twice.
Result<std::uint64_t> written_digest(std::span<const PointerUse> baked, const ReadMemory& read);

// Both digests of `baked` over `read`.
Result<GraphEvidence> graph_evidence(std::span<const PointerUse> baked, const ReadMemory& read);

}  // namespace capsim
