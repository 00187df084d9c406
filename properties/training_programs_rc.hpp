// RapidCheck generator of TrainingPlans (training_programs.hpp). Header-only,
// like cudagraph_programs_rc.hpp; every feature shrinks towards the simple
// case (one layer, SGD, the eager backward, features on, two steps).
#pragma once

#include <rapidcheck.h>

#include "properties/training_programs.hpp"

namespace capsim::rc_gen {

inline rc::Gen<TrainingPlan> training_plan() {
  return rc::gen::build<TrainingPlan>(
      rc::gen::set(&TrainingPlan::seed, rc::gen::inRange<std::uint64_t>(0, 1u << 20)),
      rc::gen::set(&TrainingPlan::layers, rc::gen::inRange(1, 4)),
      rc::gen::set(&TrainingPlan::width, rc::gen::inRange(2, 6)),
      rc::gen::set(&TrainingPlan::backward, rc::gen::cast<LoopBackward>(rc::gen::inRange(
                                                0, static_cast<int>(LoopBackward::kCount)))),
      rc::gen::set(
          &TrainingPlan::optimizer,
          rc::gen::element(OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW)),
      rc::gen::set(&TrainingPlan::set_to_none, rc::gen::element(true, false)),
      rc::gen::set(&TrainingPlan::mark_step, rc::gen::element(true, false)),
      rc::gen::set(&TrainingPlan::steps, rc::gen::inRange(2, 7)));
}

}  // namespace capsim::rc_gen
