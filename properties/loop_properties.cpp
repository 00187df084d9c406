// The loop properties (`loop.*`) of the catalogue (catalogue.hpp): the two
// seeds in one generated training loop (training_programs.hpp), each check
// of training_checks.hpp bound to the loop generator and to the broken model
// its control runs.
#include <fmt/format.h>

#include "properties/catalogue.hpp"
#include "properties/cudagraph_checks.hpp"
#include "properties/probes.hpp"
#include "properties/property.hpp"
#include "properties/regressions.hpp"
#include "properties/trace_checks.hpp"
#include "properties/training_checks.hpp"
#include "properties/training_programs_rc.hpp"

namespace capsim {

namespace {

constexpr std::string_view kLoops =
    "random training loops of a small MLP: forward eager or compiled; backward eager, through "
    "compiled autograd or the compiled forward's AOT backward; compiled SGD, Adam or AdamW; "
    "zero_grad(set_to_none) either way; mark_step_begin or not; gradient accumulation and a "
    "reassigned param as faults; all under a swarm";

// The World of one case: the tree part of `fault`, and the legacy capture
// for compiled backwards when the fault is kLegacyCapture.
WorldOptions loop_world(Fault fault) {
  WorldOptions o;
  o.fault = fault_at(fault, FaultSite::kTree);
  if (fault == Fault::kLegacyCapture) o.compiled_autograd_capture = CaptureMode::kLegacy;
  return o;
}

using LoopCheck = std::function<CheckResult(const World&, const TrainingProgram&)>;

CaseFunction loop_property(Fault own, CaseSetting setting, LoopCheck check) {
  const Fault injected = setting.injected;
  return make_probed_case<TrainingPlan>(
      rc_gen::training_plan(setting.torch),
      [own, injected, check = std::move(check)](const TrainingPlan& plan, bool control,
                                                ProbeSet* probes) -> CheckResult {
        const Fault fault = control ? own : injected;
        const TrainingProgram t = lower(plan);
        Status status;
        const std::unique_ptr<World> world = run_generated(t.generated, loop_world(fault), status);
        if (!status) return "bad input: " + status.error().message;
        if (probes != nullptr) *probes = loop_probes(*world, plan);
        return check(*world, t);
      },
      [](const TrainingPlan& plan) { return describe(plan); },
      [own, injected](const TrainingPlan& plan, bool control) {
        return generated_trace_lines(lower(plan).generated, loop_world(control ? own : injected),
                                     "capsim-check counterexample");
      });
}

// A saved loop counterexample (properties/regressions/), run on the sound
// model with its config; its grads' origin is read off its program.
RegressionCheck loop_regression(LoopCheck check) {
  return [check = std::move(check)](const Regression& r) -> CheckResult {
    TrainingProgram t;
    t.generated.program = r.program;
    t.generated.seed = r.seed;
    t.generated.torch_profile = r.config.torch_profile;
    read_loop_grads(r.program, t);
    WorldOptions o = loop_world(Fault::kNone);
    o.config = r.config;
    Status status;
    const std::unique_ptr<World> world = run_generated(t.generated, o, status);
    if (!status) return "bad input: " + status.error().message;
    return check(*world, t);
  };
}

}  // namespace

void add_loop_properties(std::vector<Property>& c, const CaseSetting& setting) {
  auto entry = [&c, setting](Property p, LoopCheck check) {
    p.run = loop_property(p.fault, setting, check);
    p.regression = loop_regression(std::move(check));
    c.push_back(std::move(p));
  };
  entry({"loop.replay-equals-eager",
         "every value a training loop reads equals, bitwise, the same loop run all eager",
         "compiled-autograd.md \"In a program\"; cudagraph-trees.md §10.6", kLoops,
         "tree fault skip_copy_in: replays copy no inputs", Fault::kSkipCopyIn},
        [](const World& w, const TrainingProgram& t) -> CheckResult {
          WorldOptions all_eager;
          all_eager.all_eager = true;
          Status status;
          const std::unique_ptr<World> eager = run_generated(t.generated, all_eager, status);
          if (!status) return "bad input in the all-eager run: " + status.error().message;
          return check_loop_equals_eager(w, *eager);
        });
  entry({"loop.grads-not-copied-when-backward-cudagraphed",
         "an optimizer step copies 0 grad bytes when the backward that made its grads was "
         "recorded on its tree path, and exactly the grads' bytes when that backward was eager",
         "PR 107504's two cases; compiled-autograd.md \"In a program\"", kLoops,
         "tree fault clone_compiled_grads: AccumulateGrad clones grads out of the pool",
         Fault::kCloneCompiledGrads},
        [](const World& w, const TrainingProgram& t) { return check_loop_grad_copies(w, t); });
  entry({"loop.static-state-never-reallocated",
         "across the whole loop, every recording of the optimizer step bakes in the same "
         "address for each state buffer",
         "cudagraph-trees.md §6; PR 107504", kLoops,
         "fault move_optimizer_state: the state moves to new storage before the third step",
         Fault::kMoveOptimizerState},
        [](const World& w, const TrainingProgram&) { return check_optimizer_state_static(w); });
  entry({"loop.no-proxy-metadata-read",
         "no compiled backward of the loop reads proxy metadata in its initial capture",
         "compiled-autograd.md §1.3, §3; PR 144707", kLoops,
         "the legacy capture (before PR 144707) for the loop's compiled backwards",
         Fault::kLegacyCapture},
        [](const World& w, const TrainingProgram&) { return check_loop_no_metadata_read(w); });
  entry({"loop.pool-accounting",
         "after every step of the loop, every pool check finds the pool's live blocks equal to "
         "the live tracked outputs",
         "cudagraph-trees.md §5.6, §5.7, §10.5", kLoops,
         "tree fault dealloc_frees_nothing: a new generation frees none of the path's blocks",
         Fault::kDeallocFreesNothing},
        [](const World& w, const TrainingProgram&) { return check_pool(w); });
}

}  // namespace capsim
