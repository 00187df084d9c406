// RapidCheck generator of TrainingPlans (training_programs.hpp). Header-only,
// like cudagraph_programs_rc.hpp, and drawn under a swarm of its own
// (swarm_rc.hpp): each case switches some of the loop's features off.
// Everything shrinks towards the simple case: one layer, two steps, SGD, the
// eager backward, no mark_step_begin, zero_grad(set_to_none=True) after every
// step, no fault.
#pragma once

#include <rapidcheck.h>

#include <ostream>

#include "properties/swarm_rc.hpp"
#include "properties/training_programs.hpp"

namespace capsim {

// How RapidCheck shows a plan: its features and the program it lowers to.
inline std::ostream& operator<<(std::ostream& os, const TrainingPlan& plan) {
  return os << describe(plan);
}

namespace rc_gen {

// X(enumerator, name). A backward mode is drawn from those whose features
// are on (the eager backward when none is).
#define CAPSIM_LOOP_SWARM_FEATURES(X)                                                    \
  X(kEagerBackward, "eager_backward")       /* loss.backward(); aot_eager with AOT */    \
  X(kCompiledAutograd, "compiled_autograd") /* the backward through compiled autograd */ \
  X(kCompiledForward, "compiled_forward")   /* the forward compiled: its AOT backward */ \
  X(kAdam, "adam")                          /* Adam and AdamW beside SGD */              \
  X(kMarkStep, "mark_step")                 /* cudagraph_mark_step_begin() per step */   \
  X(kZeroGradInPlace, "zero_grad_in_place") /* zero_grad(set_to_none=False) */           \
  X(kAccumulateGrads, "accumulate_grads")   /* fault: grads kept; may raise E1 */        \
  X(kReassign, "reassign_data")             /* fault: w.data = ... before a step */
CAPSIM_DEFINE_SWARM_FEATURES(LoopFeature, kLoopFeatureNames, CAPSIM_LOOP_SWARM_FEATURES);
using LoopSwarm = FeatureSwarm<LoopFeature>;

inline rc::Gen<LoopSwarm> loop_swarm() {
  return swarm_of<LoopFeature>(kLoopFeatureNames);
}

inline rc::Gen<LoopBackward> loop_backward(const LoopSwarm& sw) {
  std::vector<LoopBackward> menu;
  if (sw.has(LoopFeature::kEagerBackward)) menu.push_back(LoopBackward::kEager);
  if (sw.has(LoopFeature::kCompiledAutograd)) menu.push_back(LoopBackward::kCompiledAutograd);
  if (sw.has(LoopFeature::kCompiledForward)) {
    menu.push_back(LoopBackward::kAot);
    if (sw.has(LoopFeature::kEagerBackward)) menu.push_back(LoopBackward::kAotEager);
  }
  if (menu.empty()) menu.push_back(LoopBackward::kEager);
  return rc::gen::elementOf(menu);
}

// A loop under the swarm `sw`.
inline rc::Gen<TrainingPlan> training_plan(const LoopSwarm& sw) {
  return rc::gen::exec([sw] {
    TrainingPlan p;
    p.swarm_off = sw.off_names();
    p.torch_profile = *torch_profile();
    p.seed = *uniform<std::uint64_t>(0, 1u << 20);
    p.layers = 1 + static_cast<int>(*small(3));
    p.width = 2 + static_cast<int>(*small(4));
    p.backward = *loop_backward(sw);
    if (sw.has(LoopFeature::kAdam)) {
      p.optimizer =
          *rc::gen::element(OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW);
    }
    if (sw.has(LoopFeature::kZeroGradInPlace)) p.set_to_none = !*sometimes(2);
    p.mark_step = sw.has(LoopFeature::kMarkStep) && !*sometimes(4);
    p.steps = 2 + static_cast<int>(*small(5));
    if (sw.has(LoopFeature::kAccumulateGrads)) p.accumulate = 1 + static_cast<int>(*small(3));
    if (sw.has(LoopFeature::kReassign) && *sometimes(2)) {
      p.reassign_before = static_cast<int>(*small(static_cast<std::uint32_t>(p.steps)));
      p.reassign_param = static_cast<int>(*small(static_cast<std::uint32_t>(p.layers)));
    }
    return p;
  });
}

// A loop under a random swarm: the catalogue's generator; `torch` pins the
// profile, as for program().
inline rc::Gen<TrainingPlan> training_plan(std::optional<TorchProfile> torch = std::nullopt) {
  return rc::gen::exec([torch] {
    TrainingPlan p = *training_plan(*loop_swarm());
    if (torch) p.torch_profile = *torch;
    return p;
  });
}

}  // namespace rc_gen
}  // namespace capsim
