// The trace of a built-in scenario (see scenario_trace.hpp): its header, and its program run in
// a fresh World, alone or beside a reference mirror.
#include "traces/simulation/scenario_trace.hpp"

#include <fmt/format.h>

#include "sim/world/world.hpp"

namespace capsim {

TraceHeader scenario_header(const ProgramScenario& scenario) {
  TraceHeader h;
  h.producer = std::string(kModelProducer);
  h.name = scenario.name;
  h.seed = scenario.options.seed;
  h.config = scenario.options.config;
  return h;
}

namespace {
Result<std::vector<std::string>> record(const ProgramScenario& scenario, ReplayMirror* mirror) {
  if (scenario.options.fault != Fault::kNone) {
    return make_error(
        fmt::format("scenario '{}': a negative-control fault is not recordable", scenario.name));
  }
  WorldOptions options = scenario.options;
  options.verify_replays = false;  // its verdicts are diagnostics, not observations
  options.mirror = mirror;
  options.device_evidence = mirror != nullptr;
  TraceHeader header = scenario_header(scenario);
  if (mirror != nullptr) {
    header.producer = std::string(kCudaProducer);
    header.extensions.push_back({"x_device", mirror->describe()});
  }
  World world(options);
  Status s = world.run(scenario.program);
  if (!s) return with_context(fmt::format("scenario '{}'", scenario.name), s.error());
  if (mirror != nullptr && mirror->disagreement()) {
    return make_error(fmt::format("scenario '{}': the {} backend disagrees with the model: {}",
                                  scenario.name, mirror->name(), *mirror->disagreement()));
  }
  return trace_lines(header, scenario.program, world.events());
}
}  // namespace

Result<std::vector<std::string>> trace_scenario(const ProgramScenario& scenario) {
  return record(scenario, nullptr);
}

Result<std::vector<std::string>> trace_scenario_on(const ProgramScenario& scenario,
                                                   ReplayMirror& mirror) {
  return record(scenario, &mirror);
}

}  // namespace capsim
