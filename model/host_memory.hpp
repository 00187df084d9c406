// How much memory this host can give the process: simulated device memory
// with values on is host memory, so a device budget above it would end in
// running out midway; a command refuses it before the run instead.
//
// The limit is physical memory, lowered by RLIMIT_AS and RLIMIT_DATA where
// they are set. It depends on the machine, never on a seed: it decides only
// whether a run is refused, never what a run computes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/result.hpp"

namespace capsim {

struct HostMemoryLimit {
  std::uint64_t bytes = 0;
  std::string what;  // "physical memory", "RLIMIT_AS" or "RLIMIT_DATA"
};
HostMemoryLimit host_memory_limit();

// An error unless `budget` bytes of simulated device memory (values on, so
// backed by host memory) fit the host: "N bytes is more than this host can
// give (WHAT: M bytes); simulated device memory is host memory".
Status budget_fits_host(std::uint64_t budget);

}  // namespace capsim
