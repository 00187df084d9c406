// Value digests: a stable 64-bit FNV-1a hash of bytes, printed as 16 hex digits.
//
// Used wherever output must summarise memory contents (value digests in events,
// the CLI's per-step lines): identical bytes give identical digests on every
// machine and build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace capsim {

inline std::uint64_t fnv1a64(std::span<const std::byte> bytes,
                             std::uint64_t hash = 0xcbf29ce484222325ull) {
  for (std::byte b : bytes) {
    hash ^= static_cast<std::uint8_t>(b);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string digest_hex(std::uint64_t digest);

}  // namespace capsim
