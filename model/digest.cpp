// A digest's printed form (see digest.hpp; the hash itself is inline there), out of line so
// that the header needs no fmt.
#include "model/digest.hpp"

#include <fmt/format.h>

namespace capsim {
std::string digest_hex(std::uint64_t digest) {
  return fmt::format("{:016x}", digest);
}
}  // namespace capsim
