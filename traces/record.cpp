#include "traces/record.hpp"

#include <fmt/format.h>

#include "sim/world.hpp"

namespace capsim {

TraceHeader scenario_header(const Scenario& scenario) {
  TraceHeader h;
  h.producer = "capsim";
  h.name = scenario.name;
  h.seed = scenario.options.seed;
  h.config = scenario.options.config;
  return h;
}

Result<std::vector<std::string>> record_scenario(const Scenario& scenario) {
  if (scenario.options.fault != TreeFault::kNone) {
    return make_error(
        fmt::format("scenario '{}': a negative-control fault is not recordable", scenario.name));
  }
  WorldOptions options = scenario.options;
  options.verify_replays = false;  // its verdicts are diagnostics, not observations
  World world(options);
  Status s = world.run(scenario.program);
  if (!s) return make_error(fmt::format("scenario '{}': {}", scenario.name, s.error().message));
  return trace_lines(scenario_header(scenario), scenario.program, world.events());
}

}  // namespace capsim
