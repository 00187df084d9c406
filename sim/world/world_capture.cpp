// World: the compiled-autograd actions. run_capture_scenario runs a scenario
// found through WorldOptions::autograd_scenarios on its own autograd devices
// (sim/autograd/compiled_autograd_runner.hpp; the built-in scenarios are
// content, sim/scenarios/, which this wing never includes); autograd_graph
// and compiled_backward work on graphs a recorder of real PyTorch walked
// (sim/autograd/imported_autograd.hpp). None of them touches the World's
// memory, pools, tensors or trees: they only add events and counters.
#include <fmt/format.h>

#include "sim/autograd/compiled_autograd_runner.hpp"
#include "sim/autograd/imported_autograd.hpp"
#include "sim/world/world.hpp"

namespace capsim {

Status World::do_run_capture_scenario(const RunCaptureScenario& a) {
  const AutogradScenario* scenario =
      options_.autograd_scenarios ? options_.autograd_scenarios(a.name) : nullptr;
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

Status World::do_define_autograd_graph(const DefineAutogradGraph& a) {
  if (!recorded_autograd_) recorded_autograd_ = std::make_unique<ImportedAutograd>();
  return recorded_autograd_->define(a);
}

Status World::do_compiled_backward(const CompiledBackward& a) {
  if (!recorded_autograd_) {
    return make_error(
        fmt::format("autograd graph '{}': no autograd_graph action defined it", a.graph));
  }
  const std::uint64_t before = recorded_autograd_->captures();
  std::function<void(const BackwardView&)> observer;
  if (options_.on_backward) {
    observer = [this](const BackwardView& view) { options_.on_backward(ctx_.action, view); };
  }
  CAPSIM_TRY_ASSIGN(std::vector<Event> events, recorded_autograd_->compiled_backward(a, observer));
  for (Event& e : events) ctx_.emit(e.kind, std::move(e.fields));
  counters_.ca_captures += recorded_autograd_->captures() - before;
  return {};
}

}  // namespace capsim
