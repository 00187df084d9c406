// walk_trace, the loop behind replay, the Chrome export and the drawings (see
// trace_simulation.hpp), and TraceVisitor's default hooks.
#include "traces/simulation/trace_simulation.hpp"

#include <memory>

#include "sim/scenarios/autograd_scenarios.hpp"
#include "traces/simulation/program_file.hpp"

namespace capsim {

Status TraceVisitor::before_action(const TraceItem&, const World&) {
  return {};
}
Status TraceVisitor::on_event(const TraceItem&) {
  return {};
}
Status TraceVisitor::on_unsimulated_action(const TraceItem&) {
  return {};
}
Status TraceVisitor::on_end(const World&) {
  return {};
}

Status walk_trace(TraceReader& reader, WorldOptions options, TraceVisitor& visitor,
                  std::optional<TorchProfile> torch_profile) {
  options.config = reader.header().config;
  if (torch_profile) options.config.torch_profile = *torch_profile;
  options.seed = reader.header().seed;
  options.device_evidence = reader.header().has_device_evidence();
  // A trace written with values off is re-simulated so: it may hold tensors
  // values on refuses, and its reads carry no digest to compare. Its default
  // device is the values-off one (nothing stands behind it on the host).
  if (!reader.header().values) {
    if (options.mirror != nullptr) {
      return make_error("a trace written with values off cannot run beside a reference backend");
    }
    options.values = false;
    options.verify_replays = false;  // no values to compare with eager
  }
  if (options.memory_budget_bytes == 0) {
    options.memory_budget_bytes = options.values ? kDefaultMemoryBudget : kValuesOffMemoryBudget;
  }
  // A trace's run_capture_scenario actions name built-in scenarios.
  if (!options.autograd_scenarios) options.autograd_scenarios = find_autograd_scenario;
  World world(std::move(options));
  Program program;  // its functions only; World::begin keeps a pointer to it
  bool begun = false;
  bool simulating = true;
  for (;;) {
    CAPSIM_TRY_ASSIGN(TraceItem* const item, reader.advance());
    if (!item) return visitor.on_end(world);
    switch (item->type) {
      case TraceLineType::kHeader: break;  // the reader refuses a second header
      case TraceLineType::kFunction: program.functions.push_back(std::move(item->function)); break;
      case TraceLineType::kEvent: CAPSIM_TRY(visitor.on_event(*item)); break;
      case TraceLineType::kAction: {
        if (!simulating) {
          CAPSIM_TRY(visitor.on_unsimulated_action(*item));
          break;
        }
        CAPSIM_TRY(visitor.before_action(*item, world));
        // The reader refuses a function line after the first action, so the
        // functions begin() sees are all there will be (and never move).
        Status ran = begun ? Status{} : world.begin(program);
        begun = true;
        if (ran) ran = world.run_action(item->action_index, item->action);
        CAPSIM_TRY_ASSIGN(simulating, visitor.after_action(*item, world, ran));
        break;
      }
    }
  }
}

}  // namespace capsim
