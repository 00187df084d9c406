// One training-loop case of the loop properties per iteration
// (properties/training_programs.hpp): lower a plan, run it in a World, and
// (for BM_TrainingLoop/eager_oracle) run it again all eager, as
// loop.replay-equals-eager does. The goal (docs/performance.md, "Training
// loops"): at least 300 cases per second on one core of the 2-core VM for
// every loop property, the oracle's second run included.
//
// The plan is fixed per benchmark: 3 layers of width 4, Adam, 6 steps,
// mark_step_begin and set_to_none on; the Arg picks the backward mode
// (0 eager, 1 compiled autograd, 2 AOT, 3 AOT run eagerly). One item = one
// case.
#include <benchmark/benchmark.h>

#include "properties/cudagraph_checks.hpp"
#include "properties/training_checks.hpp"
#include "properties/training_programs.hpp"

namespace capsim {
namespace {

TrainingPlan plan_for(const benchmark::State& state) {
  TrainingPlan plan;
  plan.layers = 3;
  plan.width = 4;
  plan.steps = 6;
  plan.optimizer = OptimizerKind::kAdam;
  plan.backward = static_cast<LoopBackward>(state.range(0));
  return plan;
}

void BM_TrainingLoop(benchmark::State& state, bool with_oracle) {
  const TrainingPlan plan = plan_for(state);
  WorldOptions eager;
  eager.all_eager = true;
  for (auto _ : state) {
    const TrainingProgram t = lower(plan);
    Status status;
    auto world = run_generated(t.generated, WorldOptions{}, status);
    if (!status.ok()) state.SkipWithError(status.error().message.c_str());
    if (with_oracle) {
      auto oracle = run_generated(t.generated, eager, status);
      benchmark::DoNotOptimize(check_loop_equals_eager(*world, *oracle));
    }
    benchmark::DoNotOptimize(world);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(loop_backward_name(plan.backward)));
}

// The cost of one step as a loop grows: the eager backward over the World's
// autograd graph, whose backwards see only the nodes they reach (an engine
// that copied every node it ever recorded made each step slower than the
// last). One item = one step.
void BM_TrainingLoopSteps(benchmark::State& state) {
  TrainingPlan plan;
  plan.layers = 3;
  plan.width = 4;
  plan.steps = static_cast<int>(state.range(0));
  plan.optimizer = OptimizerKind::kSgd;
  plan.backward = LoopBackward::kEager;
  const TrainingProgram t = lower(plan);
  for (auto _ : state) {
    Status status;
    auto world = run_generated(t.generated, WorldOptions{}, status);
    if (!status.ok()) state.SkipWithError(status.error().message.c_str());
    benchmark::DoNotOptimize(world);
  }
  state.SetItemsProcessed(state.iterations() * plan.steps);
}

BENCHMARK_CAPTURE(BM_TrainingLoop, case, false)->DenseRange(0, 3);
BENCHMARK(BM_TrainingLoopSteps)->Arg(6)->Arg(60)->Arg(600);
BENCHMARK_CAPTURE(BM_TrainingLoop, eager_oracle, true)->DenseRange(0, 3);

}  // namespace
}  // namespace capsim
