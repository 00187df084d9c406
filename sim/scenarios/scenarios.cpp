#include "sim/scenarios/scenarios.hpp"

#include <algorithm>

namespace capsim {

// Defined in scenarios_trees.cpp, scenarios_trees_more.cpp,
// scenarios_rerecord.cpp and scenarios_optimizer.cpp.
void add_tree_scenarios(std::vector<Scenario>& out);
void add_more_tree_scenarios(std::vector<Scenario>& out);
void add_optimizer_scenarios(std::vector<Scenario>& out);
void add_rerecord_scenarios(std::vector<Scenario>& out);
void add_compiled_autograd_scenarios(std::vector<Scenario>& out);

const std::vector<Scenario>& builtin_scenarios() {
  static const std::vector<Scenario> all = [] {
    std::vector<Scenario> s;
    add_tree_scenarios(s);
    add_more_tree_scenarios(s);
    add_rerecord_scenarios(s);
    add_optimizer_scenarios(s);
    add_compiled_autograd_scenarios(s);
    return s;
  }();
  return all;
}

const Scenario* find_scenario(const std::string& name) {
  for (const Scenario& s : builtin_scenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool ScenarioRun::all_hold() const {
  return status.ok() && std::all_of(expectations.begin(), expectations.end(),
                                    [](const Expectation& e) { return e.holds(); });
}

ScenarioRun run_scenario(const Scenario& scenario) {
  World world(scenario.options);
  std::vector<std::int64_t> probes(scenario.probes.size(), 0);
  ScenarioRun run;
  run.status = world.run(scenario.program, [&](std::size_t action) {
    for (std::size_t i = 0; i < scenario.probes.size(); ++i) {
      if (scenario.probes[i].after_action == action) probes[i] = scenario.probes[i].read(world);
    }
  });
  run.events = world.events();
  if (run.status && scenario.expect) run.expectations = scenario.expect(world, probes);
  return run;
}

}  // namespace capsim
