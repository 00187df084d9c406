// Simulated device addresses.
//
// An `Address` is a byte address in the simulated device address space owned by
// DeviceMemory. It is never a host pointer: host addresses are nondeterministic
// and must not reach output (docs/architecture.md, "Determinism", rule 2).
#pragma once

#include <cstdint>
#include <string>

namespace capsim {

using Address = std::uint64_t;

inline constexpr std::uint64_t kKiB = 1024;
inline constexpr std::uint64_t kMiB = 1024 * kKiB;
inline constexpr std::uint64_t kGiB = 1024 * kMiB;

// Bytes of one float32 element, the dtype the exact kernels compute; a
// tensor's own element size is element_bytes(meta) (model/tensor.hpp).
inline constexpr std::uint64_t kElementBytes = 4;

// "0x7f0000000200": the one spelling of an address in messages and output.
std::string hex(Address address);

// A half-open byte range [base, base + bytes).
struct AddressRange {
  Address base = 0;
  std::uint64_t bytes = 0;

  Address end() const { return base + bytes; }
  bool contains(Address a) const { return a >= base && a - base < bytes; }
  bool contains(const AddressRange& r) const {
    return r.base >= base && r.bytes <= bytes && r.base - base <= bytes - r.bytes;
  }
  bool overlaps(const AddressRange& r) const {
    return bytes != 0 && r.bytes != 0 && base < r.end() && r.base < end();
  }
};
// Spelled out rather than defaulted: nvcc compiles this header as C++17.
inline bool operator==(const AddressRange& a, const AddressRange& b) {
  return a.base == b.base && a.bytes == b.bytes;
}
inline bool operator!=(const AddressRange& a, const AddressRange& b) {
  return !(a == b);
}

}  // namespace capsim
