// A built-in scenario run twice: the model alone, and the model beside a
// reference mirror, both with `device` events. Shared by the host tests of
// the mirror and the device tests of the CUDA backend.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "model/replay_mirror.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "sim/world/world.hpp"

namespace capsim::testing {

struct MirroredRun {
  Status model_status;
  Status mirrored_status;
  std::vector<Event> model_events;
  std::vector<Event> mirrored_events;   // "x_" fields removed
  std::size_t device_events = 0;        // in the mirrored run
  std::vector<std::string> buffer_ids;  // each device event's x_buffer_ids
};

inline MirroredRun run_mirrored(const ProgramScenario& scenario, ReplayMirror& mirror) {
  MirroredRun out;
  WorldOptions options = scenario.options;
  options.verify_replays = false;
  options.device_evidence = true;
  {
    World model(options);
    out.model_status = model.run(scenario.program);
    out.model_events = model.events();
  }
  options.mirror = &mirror;
  World mirrored(options);
  out.mirrored_status = mirrored.run(scenario.program);
  out.mirrored_events = mirrored.events();
  for (Event& e : out.mirrored_events) {
    if (e.kind != EventKind::kDevice) continue;
    ++out.device_events;
    if (auto ids = e.printed(F::x_buffer_ids)) out.buffer_ids.push_back(*ids);
    std::erase_if(e.fields, [](const EventField& f) { return field_spec(f.key).extension(); });
  }
  return out;
}

}  // namespace capsim::testing
