// World: the run_capture_scenario action. The scenario runs on its own
// autograd devices (sim/capture_scenarios.hpp), not on the World's memory, so
// the action touches no pool, tensor or tree state: it only adds events and
// counters.
#include <fmt/format.h>

#include "sim/capture_scenarios.hpp"
#include "sim/world.hpp"

namespace capsim {

Status World::do_run_capture_scenario(const RunCaptureScenario& a) {
  const CaptureScenario* scenario = find_capture_scenario(a.name);
  if (scenario == nullptr) {
    return make_error(
        fmt::format("capture scenario '{}': unknown (see capsim capture --list)", a.name));
  }
  CaptureRunLog log;
  if (options_.on_backward) {
    log.observer = [this](const BackwardView& view) { options_.on_backward(ctx_.action, view); };
  }
  CAPSIM_TRY(scenario->run(a.mode, log));
  for (Event& e : log.events) ctx_.emit(e.kind, std::move(e.fields));
  counters_.ca_captures += log.captures;
  counters_.ca_metadata_reads += log.metadata_reads;
  counters_.ca_mismatches += log.mismatches;
  return {};
}

}  // namespace capsim
