// The built-in compiled-autograd scenarios: in the functional mode each makes
// the number of captures its PyTorch test asserts and reads no proxy metadata;
// in the legacy mode each reads some (or is rejected, for the non-traceable
// CppNode), which is what the functional refactor removed.
#include <doctest/doctest.h>

#include <set>

#include "sim/scenarios/autograd_scenarios.hpp"

namespace capsim {
namespace {

TEST_CASE("capture scenarios: functional captures match PyTorch's counts and read nothing") {
  CHECK(builtin_autograd_scenarios().size() >= 10);
  std::set<std::string> names;
  for (const AutogradScenario& s : builtin_autograd_scenarios()) {
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
  for (const AutogradScenario& s : builtin_autograd_scenarios()) {
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
  for (const AutogradScenario& s : builtin_autograd_scenarios()) {
    CaptureRunLog a, b;
    (void)s.run(CaptureMode::kFunctional, a);
    (void)s.run(CaptureMode::kFunctional, b);
    CHECK(a.lines == b.lines);
  }
}

// The kinds of a log's events, in order.
std::vector<EventKind> kinds(const CaptureRunLog& log) {
  std::vector<EventKind> out;
  for (const Event& e : log.events) out.push_back(e.kind);
  return out;
}

TEST_CASE("capture scenarios: the events say what the lines say, as data") {
  using K = EventKind;
  CaptureRunLog log;
  REQUIRE(find_autograd_scenario("basic")->run(CaptureMode::kFunctional, log).ok());
  // Three backwards of the same graph: a miss with its capture, then hits;
  // each runs its graph.
  CHECK(kinds(log) == std::vector<EventKind>{K::kCaCacheMiss, K::kCaCapture, K::kCaRun,
                                             K::kCaCacheHit, K::kCaRun, K::kCaCacheHit, K::kCaRun});
  const Event& miss = log.events[0];
  CHECK(miss.text(F::reason) == "new_autograd_node");
  CHECK(miss.text(F::autograd_node) == "GraphRoot");
  CHECK(miss.get<std::int64_t>(F::backward) == 0);
  CHECK(log.events[3].get<std::int64_t>(F::backward) == 1);
  CHECK(log.events[1].text(F::mode) == "functional");
  // The same grads every time, bitwise equal to eager (a verdict the log
  // counts; it is not an observation, so no event carries it).
  CHECK(log.events[2].get<Digest>(F::digest) == log.events[4].get<Digest>(F::digest));
  CHECK(log.mismatches == 0);

  CaptureRunLog shapes;
  REQUIRE(find_autograd_scenario("dynamic_shapes")->run(CaptureMode::kFunctional, shapes).ok());
  std::vector<std::string> reasons;
  for (const Event& e : shapes.events) {
    if (e.kind == K::kCaCacheMiss) reasons.emplace_back(*e.text(F::reason));
  }
  CHECK(reasons == std::vector<std::string>{"new_autograd_node", "changed_shapes"});

  CaptureRunLog legacy;
  REQUIRE(find_autograd_scenario("basic")->run(CaptureMode::kLegacy, legacy).ok());
  CHECK(count_events(legacy.events, K::kMetadataRead) == legacy.metadata_reads);
  CHECK(count_events(legacy.events, K::kCaRun) == 0);  // legacy graphs are not run
  for (const Event& e : legacy.events) {
    if (e.kind == K::kMetadataRead) CHECK(e.text(F::mode) == "legacy");
  }
}

}  // namespace
}  // namespace capsim
