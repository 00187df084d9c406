// WorldOptions: how a World runs (its config, seed, checks, fault and limits).
//
// Apart from world.hpp so that the World's parts (compiled_optimizers.hpp,
// plain_graphs.hpp, world_autograd.hpp), which read the options through their
// WorldContext, need not see the World itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "model/fault.hpp"
#include "sim/core/cudagraph_config.hpp"
#include "sim/core/events.hpp"
#include "sim/program/program.hpp"

namespace capsim {

struct BackwardView;      // sim/compiled_autograd/runner.hpp
struct AutogradScenario;  // sim/compiled_autograd/runner.hpp
class ReplayMirror;       // model/replay_mirror.hpp

// 1 GiB: every scenario, corpus trace and generated case takes under 64 MiB.
inline constexpr std::uint64_t kDefaultMemoryBudget = std::uint64_t{1} << 30;
inline constexpr std::uint64_t kMaxMemoryBudget = std::uint64_t{1} << 40;

struct WorldOptions {
  CudagraphConfig config;
  std::uint64_t seed = 0;
  // Compare every replay with eager execution (P-replay); costs a scratch run.
  bool verify_replays = false;
  Fault fault = Fault::kNone;  // a kTree fault (model/fault.hpp): controls and --inject only
  // Shown every backward of a run_capture_scenario action (render/ draws
  // its graphs); optional, and it observes only.
  std::function<void(std::size_t action, const BackwardView&)> on_backward;
  // Where run_capture_scenario actions find their scenario by name (a
  // CaptureScenarioLookup): the built-in ones are content of sim/scenarios/,
  // which the world wing does not include, so whoever builds the World hands
  // them in (find_autograd_scenario; trace replay and run_program_scenario do). Empty:
  // every such action names an unknown scenario.
  std::function<const AutogradScenario*(const std::string& name)> autograd_scenarios;
  // A second backend that runs every graph too and compares it with the
  // model (model/replay_mirror.hpp): the CUDA reference backend. Not owned;
  // it must outlive the World. It observes only: the events are the same.
  ReplayMirror* mirror = nullptr;
  // A `device` event after each record and replay, with the evidence of the
  // replay: the mirror's when there is one, else the model's (traces whose
  // producer is the CUDA backend carry them; docs/trace-format.md).
  bool device_evidence = false;
  // The simulated device memory all segments together may take. A trace is
  // input from outside: a program that asks for more is refused at the action
  // that asks (an out-of-memory error naming it), before its bytes are
  // touched, instead of filling host memory first. `--memory-budget` raises
  // it (docs/trace-format.md §8).
  std::uint64_t memory_budget_bytes = kDefaultMemoryBudget;
  // Values off: tensors get addresses, sizes and dtypes but no bytes; no
  // kernel runs, reads say no values, and nothing checks them (so neither
  // verify_replays nor a mirror). Decisions do not depend on values, so they
  // are the same (docs/trace-format.md §8, "Values off").
  bool values = true;
  // torch.compile(backend="eager") with compiled autograd off: every compiled
  // call runs its body eagerly in the default pool (no tree manager, no
  // events of its own) and every backward runs in the eager engine. The
  // oracle of the loop properties: the same program, all eager.
  bool all_eager = false;
  // The capture a compiled `backward` action runs. Legacy (the capture before
  // PR 144707) is the loop properties' negative control: its graph does not
  // run, so the grads then come from the eager engine.
  CaptureMode compiled_autograd_capture = CaptureMode::kFunctional;
  // The events the World may hold at once (sim/core/events.hpp): an action
  // after which it holds more is refused. At most kMaxEvents; tests lower it.
  std::size_t max_held_events = kMaxEvents;
};

}  // namespace capsim
