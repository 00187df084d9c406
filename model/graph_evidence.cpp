// The two digests of GraphEvidence (see graph_evidence.hpp): of the baked pointers and of the
// bytes the graph writes, hashed word by word in little-endian order.
#include "model/graph_evidence.hpp"

#include <array>
#include <bit>
#include <cstring>

#include "model/digest.hpp"

namespace capsim {

namespace {
static_assert(std::endian::native == std::endian::little, "digests hash little-endian words");

std::uint64_t hash_word(std::uint64_t word, std::uint64_t hash) {
  std::array<std::byte, 8> bytes;
  std::memcpy(bytes.data(), &word, sizeof word);
  return fnv1a64(bytes, hash);
}

// The limit on one range read at once for the digest (a segment's worth).
constexpr std::uint64_t kMaxDigestChunk = std::uint64_t{1} << 22;
}  // namespace

std::uint64_t baked_digest(std::span<const PointerUse> baked) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const PointerUse& use : baked) {
    hash = hash_word(use.step, hash);
    hash = hash_word(use.arg, hash);
    hash = hash_word(use.range.base, hash);
    hash = hash_word(use.range.bytes, hash);
  }
  return hash;
}

Result<std::uint64_t> written_digest(std::span<const PointerUse> baked, const ReadMemory& read) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  std::vector<std::byte> buffer;
  for (const PointerUse& use : baked) {
    if (use.access == Access::kRead) continue;
    for (std::uint64_t done = 0; done < use.range.bytes;) {
      const std::uint64_t chunk = std::min(use.range.bytes - done, kMaxDigestChunk);
      buffer.resize(chunk);
      CAPSIM_TRY(read(use.range.base + done, buffer));
      hash = fnv1a64(buffer, hash);
      done += chunk;
    }
  }
  return hash;
}

Result<GraphEvidence> graph_evidence(std::span<const PointerUse> baked, const ReadMemory& read) {
  GraphEvidence e;
  e.baked = baked.size();
  e.baked_digest = baked_digest(baked);
  CAPSIM_TRY_ASSIGN(e.written_digest, written_digest(baked, read));
  return e;
}

}  // namespace capsim
