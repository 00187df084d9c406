// The fault table (model/fault.hpp): one name per row, names that read back,
// a site for every row, and the site contract that aborts when a component
// is handed another site's fault.
#include <doctest/doctest.h>

#include <csignal>
#include <set>
#include <string>

#include "model/caching_allocator.hpp"
#include "model/device_memory.hpp"
#include "model/fault.hpp"
#include "tests/support/in_child.hpp"

using namespace capsim;

TEST_CASE("faults: every row has its own name, which reads back, and a meaning") {
  std::set<std::string_view> names;
  for (int i = 0; i < kNumFaults; ++i) {
    const auto f = static_cast<Fault>(i);
    CHECK(names.insert(fault_name(f)).second);
    CHECK(fault_from_name(fault_name(f)) == f);
    CHECK_FALSE(fault_meaning(f).empty());
    CHECK((f == Fault::kNone) == (fault_site(f) == FaultSite::kNone));
  }
  CHECK(fault_from_name("skip_copy_in") == Fault::kSkipCopyIn);
  CHECK(fault_from_name("restore_keeps_all") == Fault::kRestoreKeepsAll);
  CHECK(fault_from_name("pool_restore_keeps_all") == Fault::kPoolRestoreKeepsAll);
  CHECK_FALSE(fault_from_name("no_such_fault").has_value());
  CHECK(fault_site_name(fault_site(Fault::kSkipUpload)) == "mirror");
}

TEST_CASE("faults: fault_at keeps a fault at its own site only") {
  CHECK(fault_at(Fault::kSkipCopyIn, FaultSite::kTree) == Fault::kSkipCopyIn);
  CHECK(fault_at(Fault::kSkipCopyIn, FaultSite::kMirror) == Fault::kNone);
  CHECK(fault_at(Fault::kNone, FaultSite::kTree) == Fault::kNone);
}

TEST_CASE("faults: a component handed another site's fault aborts at file and line") {
  DeviceMemory memory;
  CachingAllocator sound(memory, AllocatorOptions{Fault::kIgnorePools});  // its own site: fine
  const auto [status, err] = capsim::testing::in_child([&memory] {
    CachingAllocator broken(memory, AllocatorOptions{Fault::kSkipCopyIn});  // a tree fault
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(err.find("capsim: internal invariant broken at") != std::string::npos);
  CHECK(err.find("caching_allocator.cpp") != std::string::npos);
  CHECK(err.find("another site's fault") != std::string::npos);
}
