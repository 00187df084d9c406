// Every built-in scenario runs and every number it asserts holds. The
// scenarios mirror PyTorch tests (see docs/cudagraph-trees.md); a failing
// expectation names the scenario and the number.
#include <doctest/doctest.h>

#include <set>

#include "sim/scenarios/scenarios.hpp"

namespace capsim {

TEST_CASE("scenario: every built-in scenario holds its expectations") {
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    CAPTURE(s.name);
    const ProgramScenarioRun run = run_program_scenario(s);
    REQUIRE_MESSAGE(run.status.ok(), run.status.error().message);
    CHECK_FALSE(run.expectations.empty());
    for (const Expectation& e : run.expectations) {
      CAPTURE(e.what);
      CHECK(e.actual == e.expected);
    }
  }
}

TEST_CASE("scenario: names are unique and each names the PyTorch test it mirrors") {
  std::set<std::string> names;
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    CHECK(names.insert(s.name).second);
    CHECK_FALSE(s.mirrors.empty());
    CHECK_FALSE(s.description.empty());
  }
  CHECK(names.size() >= 19);
}

TEST_CASE("scenario: the same scenario gives the same events twice") {
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    CAPTURE(s.name);
    CHECK(run_program_scenario(s).events == run_program_scenario(s).events);
  }
}

}  // namespace capsim
