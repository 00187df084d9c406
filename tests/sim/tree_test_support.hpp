// Helpers for the tree-manager tests: run a small program, count events.
#pragma once

#include <doctest/doctest.h>

#include "sim/scenarios/scenario_support.hpp"

namespace capsim::testing {

using namespace capsim::scenario_support;

// Runs `program` in a fresh World; the program must be valid input.
inline std::unique_ptr<World> run_program(const Program& program, WorldOptions options = {}) {
  auto world = std::make_unique<World>(options);
  const Status s = world->run(program);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  return world;
}

inline ProgramScenarioRun run_named(const std::string& name) {
  const ProgramScenario* s = find_program_scenario(name);
  REQUIRE_MESSAGE(s != nullptr, name);
  ProgramScenarioRun run = run_program_scenario(*s);
  REQUIRE(run.status.ok());
  return run;
}

// Events of `kind` whose field `key` has `value`.
inline std::int64_t count_where(const std::vector<Event>& events, EventKind kind, FieldKey key,
                                const FieldValue& value) {
  return std::count_if(events.begin(), events.end(), [&](const Event& e) {
    const FieldValue* v = e.find(key);
    return e.kind == kind && v != nullptr && *v == value;
  });
}

inline const Expectation& expectation(const ProgramScenarioRun& run, const std::string& what) {
  for (const Expectation& e : run.expectations) {
    if (e.what == what) return e;
  }
  FAIL("no expectation named " << what);
  return run.expectations.front();
}

}  // namespace capsim::testing
