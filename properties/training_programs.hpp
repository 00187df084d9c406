// Training loops for the loop properties (catalogue.cpp, `loop.*`): the two
// seeds in one generated program.
//
// A TrainingPlan is the MLP's shape, how the forward and backward run, the
// compiled optimizer, zero_grad's set_to_none, cudagraph_mark_step_begin() or
// not, the number of steps and two user faults: gradient accumulation (grads
// kept across steps) and a param's `.data` reassigned. Its generator
// (training_programs_rc.hpp) draws these under a swarm (docs/properties.md).
// `lower` writes the program a user would: per step, an eager or a compiled
// forward, the backward, the optimizer step, a read of every param and, but
// while grads accumulate, zero_grad.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "properties/cudagraph_programs.hpp"
#include "sim/scenarios/training_models.hpp"

namespace capsim {

// X(enumerator, name): how the backward of a step runs.
#define CAPSIM_LOOP_BACKWARDS(X)                                                     \
  X(kEager, "eager")                        /* eager forward, loss.backward() */     \
  X(kCompiledAutograd, "compiled_autograd") /* eager forward, compiled autograd */   \
  X(kAot, "aot")                            /* compiled forward, its AOT backward */ \
  X(kAotEager, "aot_eager")                 /* compiled forward, backward run eagerly */
enum class LoopBackward : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_LOOP_BACKWARDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
      kCount
};
std::string_view loop_backward_name(LoopBackward b);

struct TrainingPlan {
  std::uint64_t seed = 0;
  int layers = 1;  // 1..3
  int width = 2;   // 2..5: every layer's width; the batch is 2
  LoopBackward backward = LoopBackward::kEager;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  bool set_to_none = true;
  bool mark_step = true;
  int steps = 2;  // 2..6
  // zero_grad runs after every `accumulate`-th step only, so grads from the
  // steps between are kept and summed into (a fault: a kept .grad that a
  // recorded backward left in the pool is freed by the next generation).
  int accumulate = 1;  // 1..3
  // `params[reassign_param].data = <new>` before step `reassign_before`.
  std::optional<int> reassign_before;
  int reassign_param = 0;
  std::vector<std::string> swarm_off;  // shown in counterexamples only
  TorchProfile torch_profile = TorchProfile::kClassic;
};

struct TrainingProgram {
  // The loop and its seed, as every generator hands a program over (it runs
  // with run_generated, cudagraph_checks.hpp).
  GeneratedProgram generated;
  MlpShape shape;
  // The bytes of every param's grad together: what an optimizer step copies
  // when none of its grads is in the pool.
  std::int64_t grad_bytes = 0;
  // The backward that produced the grads was recorded in the same tree path
  // as the optimizer step (a cudagraphed backward under mark_step_begin).
  bool grads_from_recorded_backward = false;
  bool grads_eager = false;  // the backward ran eagerly: grads in the default pool
};

TrainingProgram lower(const TrainingPlan& plan);
// What the grad-copy check needs of a loop, read off its program (lower's, or
// a saved counterexample's, properties/regressions/): `program` must be a
// loop as `lower` writes them. The backward is cudagraphed when it is a
// compiled `backward` or a call of a BACKWARD function; its grads come from
// a recorded backward when, besides, every optimizer step follows a
// mark_step_begin and is followed by zero_grad(set_to_none=True).
void read_loop_grads(const Program& program, TrainingProgram& out);
// One line of features, then the program as Python-like lines.
std::string describe(const TrainingPlan& plan);

}  // namespace capsim
