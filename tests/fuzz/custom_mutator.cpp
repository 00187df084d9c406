// libFuzzer's custom mutator for the fuzz targets: half of the mutations are
// trace_mutations.hpp's structure-aware ones (boundary numbers, lines moved
// with the envelope renumbered, huge lists), which byte-level mutation
// reaches only by luck; the other half are libFuzzer's own. Linked only into
// the libFuzzer builds (run-libfuzzer.sh).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "tests/fuzz/trace_mutations.hpp"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  capsim::testing::Lcg rng(seed);
  if ((rng.next() & 1) != 0) return LLVMFuzzerMutate(data, size, max_size);
  std::string s(reinterpret_cast<const char*>(data), size);
  capsim::fuzz::mutate_once(s, rng);
  const std::size_t n = std::min(s.size(), max_size);
  std::memcpy(data, s.data(), n);
  return n;
}
