// Built-in scenarios: small programs that reproduce, one each, a behaviour
// that PyTorch's own tests assert (test/inductor/test_cudagraph_trees.py and
// test_compiled_optimizers.py), plus the seed PR's four optimizer cases.
//
// Each scenario carries its configuration, its program and its expectations:
// the numbers the PyTorch test asserts (graph ids, checkpoints, copies, skips,
// live pool blocks), computed from the World after the run. `capsim scenario
// NAME` prints the events and the expectations; the scenario tests require
// every expectation to hold.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/world/world.hpp"

namespace capsim {

struct Expectation {
  std::string what;
  std::int64_t expected = 0;
  std::int64_t actual = 0;
  bool holds() const { return expected == actual; }
};

// A probe: a number read from the World right after one action (live pool
// blocks after a call, the tensor id a name refers to, ...).
struct Probe {
  std::size_t after_action = 0;
  std::function<std::int64_t(const World&)> read;
};

struct ProgramScenario {
  std::string name;
  std::string mirrors;      // the PyTorch test (file::test) it reproduces
  std::string description;  // one line
  WorldOptions options;
  Program program;
  std::vector<Probe> probes;
  // The asserted numbers, from the World after the run and the probe values
  // (in probe order).
  std::function<std::vector<Expectation>(const World&, const std::vector<std::int64_t>& probes)>
      expect;
};

// Every built-in scenario, in a fixed order.
const std::vector<ProgramScenario>& builtin_program_scenarios();
const ProgramScenario* find_program_scenario(const std::string& name);

struct ProgramScenarioRun {
  Status status;  // bad input in the scenario itself (a bug in capsim)
  std::vector<Event> events;
  std::vector<Expectation> expectations;
  bool all_hold() const;
};
ProgramScenarioRun run_program_scenario(const ProgramScenario& scenario);
// `scenario` under another release's rules (`--torch`); itself when none is
// given. Its expectations are still the ones of the profile it was written for.
ProgramScenario under_profile(const ProgramScenario& scenario, std::optional<TorchProfile> torch);

}  // namespace capsim
