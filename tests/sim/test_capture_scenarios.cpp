// The built-in compiled-autograd scenarios: in the functional mode each makes
// the number of captures its PyTorch test asserts and reads no proxy metadata;
// in the legacy mode each reads some (or is rejected, for the non-traceable
// CppNode), which is what the functional refactor removed.
#include <doctest/doctest.h>

#include <set>

#include "sim/capture_scenarios.hpp"

namespace capsim {
namespace {

TEST_CASE("capture scenarios: functional captures match PyTorch's counts and read nothing") {
  CHECK(builtin_capture_scenarios().size() >= 10);
  std::set<std::string> names;
  for (const CaptureScenario& s : builtin_capture_scenarios()) {
    CAPTURE(s.name);
    CHECK(names.insert(s.name).second);
    CaptureRunLog log;
    REQUIRE(s.run(CaptureMode::kFunctional, log).ok());
    CHECK(log.captures == s.expected_captures);
    CHECK(log.metadata_reads == 0);
    // Every backward ran through its graph, with the eager grads (P-equal).
    CHECK(log.executed == log.captures + log.hits);
    CHECK(log.mismatches == 0);
  }
}

TEST_CASE("capture scenarios: the legacy capture reads proxy metadata or rejects the graph") {
  for (const CaptureScenario& s : builtin_capture_scenarios()) {
    CAPTURE(s.name);
    CaptureRunLog log;
    const Status status = s.run(CaptureMode::kLegacy, log);
    if (s.name == "autograd_cpp_node_non_traceable") {
      REQUIRE_FALSE(status.ok());
      CHECK(status.error().message.find("compiled_args not implemented for non-traceable node") !=
            std::string::npos);
      continue;
    }
    REQUIRE(status.ok());
    CHECK(log.metadata_reads > 0);
  }
}

TEST_CASE("capture scenarios: the same scenario prints the same lines twice") {
  for (const CaptureScenario& s : builtin_capture_scenarios()) {
    CaptureRunLog a, b;
    (void)s.run(CaptureMode::kFunctional, a);
    (void)s.run(CaptureMode::kFunctional, b);
    CHECK(a.lines == b.lines);
  }
}

}  // namespace
}  // namespace capsim
