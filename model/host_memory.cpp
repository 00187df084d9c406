// The host's memory limit (see host_memory.hpp): sysconf's physical pages, then the resource
// limits that lower it.
#include "model/host_memory.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

namespace capsim {

HostMemoryLimit host_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  HostMemoryLimit limit{pages > 0 && page > 0
                            ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                            : UINT64_MAX,
                        "physical memory"};
  for (const auto& [resource, name] :
       {std::pair{RLIMIT_AS, "RLIMIT_AS"}, std::pair{RLIMIT_DATA, "RLIMIT_DATA"}}) {
    struct rlimit r {};
    if (::getrlimit(resource, &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < limit.bytes) {
      limit = {r.rlim_cur, name};
    }
  }
  return limit;
}

Status budget_fits_host(std::uint64_t budget) {
  const HostMemoryLimit limit = host_memory_limit();
  if (budget <= limit.bytes) return {};
  return make_error(fmt::format(
      "{} bytes is more than this host can give ({}: {} bytes); simulated device memory is host "
      "memory",
      budget, limit.what, limit.bytes));
}

}  // namespace capsim
