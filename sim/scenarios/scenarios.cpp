// The table of built-in scenarios (see scenarios.hpp), gathered from the scenarios_*.cpp parts
// in the order `capsim scenario --list` prints them, and the run of one with its expectations.
#include "sim/scenarios/scenarios.hpp"

#include <algorithm>

namespace capsim {

// Defined in scenarios_trees.cpp, scenarios_trees_more.cpp,
// scenarios_rerecord.cpp, scenarios_optimizer.cpp, scenarios_compiled_autograd.cpp
// and scenarios_training.cpp.
void add_tree_scenarios(std::vector<ProgramScenario>& out);
void add_more_tree_scenarios(std::vector<ProgramScenario>& out);
void add_optimizer_scenarios(std::vector<ProgramScenario>& out);
void add_rerecord_scenarios(std::vector<ProgramScenario>& out);
void add_compiled_autograd_scenarios(std::vector<ProgramScenario>& out);
void add_training_scenarios(std::vector<ProgramScenario>& out);
void add_partition_scenarios(std::vector<ProgramScenario>& out);
void add_issue_scenarios(std::vector<ProgramScenario>& out);
void add_managed_input_scenarios(std::vector<ProgramScenario>& out);
void add_compile_skip_scenarios(std::vector<ProgramScenario>& out);

const std::vector<ProgramScenario>& builtin_program_scenarios() {
  static const std::vector<ProgramScenario> all = [] {
    std::vector<ProgramScenario> s;
    add_tree_scenarios(s);
    add_more_tree_scenarios(s);
    add_rerecord_scenarios(s);
    add_optimizer_scenarios(s);
    add_compiled_autograd_scenarios(s);
    add_training_scenarios(s);
    add_partition_scenarios(s);
    add_issue_scenarios(s);
    add_managed_input_scenarios(s);
    add_compile_skip_scenarios(s);
    return s;
  }();
  return all;
}

const ProgramScenario* find_program_scenario(const std::string& name) {
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool ProgramScenarioRun::all_hold() const {
  return status.ok() && std::all_of(expectations.begin(), expectations.end(),
                                    [](const Expectation& e) { return e.holds(); });
}

ProgramScenarioRun run_program_scenario(const ProgramScenario& scenario) {
  World world(scenario.options);
  std::vector<std::int64_t> probes(scenario.probes.size(), 0);
  ProgramScenarioRun run;
  run.status = world.run(scenario.program, [&](std::size_t action) {
    for (std::size_t i = 0; i < scenario.probes.size(); ++i) {
      if (scenario.probes[i].after_action == action) probes[i] = scenario.probes[i].read(world);
    }
  });
  run.events = world.events();
  if (run.status && scenario.expect) run.expectations = scenario.expect(world, probes);
  return run;
}

ProgramScenario under_profile(const ProgramScenario& scenario, std::optional<TorchProfile> torch) {
  ProgramScenario out = scenario;
  if (torch) out.options.config.torch_profile = *torch;
  return out;
}

}  // namespace capsim
