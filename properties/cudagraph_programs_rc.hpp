// RapidCheck generators of ProgramPlans (cudagraph_programs.hpp).
//
// Header-only and included only by test code, so that capsim_properties does
// not depend on RapidCheck. Every choice shrinks towards the simpler program:
// fewer steps, calls and ops, no optimizer, no reassignment, plain inference
// functions. A plan always lowers to a valid program (see `lower`).
#pragma once

#include <rapidcheck.h>

#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "properties/cudagraph_programs.hpp"
#include "properties/swarm_rc.hpp"

namespace capsim {

// How RapidCheck shows a plan: the program it lowers to.
inline std::ostream& operator<<(std::ostream& os, const ProgramPlan& plan) {
  return os << lower(plan);
}

namespace rc_gen {

inline rc::Gen<std::optional<std::uint32_t>> maybe_param(std::uint32_t one_in) {
  return rc::gen::map(rc::gen::tuple(sometimes(one_in), small(3)),
                      [](const std::tuple<bool, std::uint32_t>& t) -> std::optional<std::uint32_t> {
                        if (!std::get<0>(t)) return std::nullopt;
                        return std::get<1>(t);
                      });
}

// The swarm of this generator (swarm_rc.hpp): a program without, say,
// mark_step or the optimizer reaches the interleavings those would mask. A
// feature that is off is never drawn; one that is on keeps its usual weight.
// Faults are features like the rest.
// X(enumerator, name)
#define CAPSIM_SWARM_FEATURES(X)                                                         \
  X(kMarkStep, "mark_step")                                                              \
  X(kEagerBackward, "eager_backward")                                                    \
  X(kBackwardGraphs, "backward_graphs")                                                  \
  X(kOptimizer, "optimizer")                                                             \
  X(kMarkGrads, "mark_grads")                                                            \
  X(kZeroGrad, "zero_grad") /* set_to_none=True is the grad-set-to-None fault */         \
  X(kSlice, "slice")                                                                     \
  X(kStaticMutation, "static_mutation")                                                  \
  X(kInputMutation, "input_mutation")                                                    \
  X(kMisalignedInputs, "misaligned_inputs")                                              \
  X(kReassign, "reassign_data")                      /* fault: p.data = ... */           \
  X(kKeepAcrossGeneration, "keep_across_generation") /* fault: may raise E1 */           \
  X(kSizeChange, "size_change")                      /* fault: a new symint */           \
  X(kUnalignedStatic, "unaligned_static")            /* fault: demoted static input */   \
  X(kDropOptimizer, "drop_optimizer")                /* fault: the finalizer runs */     \
  X(kPartitionCuts, "partition_cuts")                /* ops graph partitions cut */      \
  X(kNewerKnobs, "newer_knobs")   /* graph_partition, capture sizes, W2, skip_dynamic */ \
  X(kMovingSlice, "moving_slice") /* a decode loop: a managed input that moves (2.15) */ \
  X(kGenericOps, "generic_ops")   /* ops modelled from metadata, as real scripts have */
CAPSIM_DEFINE_SWARM_FEATURES(SwarmFeature, kSwarmFeatureNames, CAPSIM_SWARM_FEATURES);

using Swarm = FeatureSwarm<SwarmFeature>;

inline rc::Gen<Swarm> swarm() {
  return swarm_of<SwarmFeature>(kSwarmFeatureNames);
}

// Generation was a third of a generated case (docs/performance.md, the properties' rows),
// so the generators below are built once per program and captured by value
// (a Gen is a shared pointer to an immutable generator) rather than rebuilt
// at each pick, and the leaves of a program, which make most of its picks
// (up to forty calls of five args, up to fifteen ops), are maps over tuples
// rather than execs: an exec's pick costs a type-erased generator, a
// shrinkable and a recipe entry. Both draw from the Random as before; only
// a pick that an exec made conditionally now always draws, so a few seeds
// draw a different size-change fault.

inline rc::Gen<OpPlan> op(const Swarm& sw) {
  std::vector<std::pair<std::uint32_t, PlanOp>> menu = {
      {4, PlanOp::kAdd}, {3, PlanOp::kMul},   {2, PlanOp::kNeg},  {2, PlanOp::kRelu},
      {1, PlanOp::kSum}, {2, PlanOp::kClone}, {2, PlanOp::kAlias}};
  if (sw.has(SwarmFeature::kSlice)) menu.emplace_back(1, PlanOp::kSlice);
  if (sw.has(SwarmFeature::kStaticMutation)) menu.emplace_back(2, PlanOp::kAddStatic);
  if (sw.has(SwarmFeature::kInputMutation)) menu.emplace_back(1, PlanOp::kAddData);
  if (sw.has(SwarmFeature::kGenericOps)) menu.emplace_back(2, PlanOp::kGeneric);
  const auto s16 = small(16);
  return rc::gen::map(
      rc::gen::tuple(weighted<PlanOp>(std::move(menu)), s16, s16, s16, s16),
      [](const std::tuple<PlanOp, std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>& t) {
        OpPlan o;
        std::tie(o.op, o.a, o.b, o.start, o.length) = t;
        return o;
      });
}

inline rc::Gen<FunctionPlan> function(const Swarm& sw) {
  std::vector<std::pair<std::uint32_t, CompilationMode>> modes = {{3, CompilationMode::kInference},
                                                                  {2, CompilationMode::kForward}};
  if (sw.has(SwarmFeature::kBackwardGraphs)) modes.emplace_back(1, CompilationMode::kBackward);
  return rc::gen::exec(
      [sw, mode = weighted<CompilationMode>(std::move(modes)), s2 = small(2), s3 = small(3),
       s4 = small(4), s5 = small(5), half = sometimes(2), third = sometimes(3),
       ops = rc::gen::resize(5, rc::gen::container<std::vector<OpPlan>>(op(sw))),
       outputs = rc::gen::resize(3, rc::gen::container<std::vector<std::uint32_t>>(small(16)))] {
        FunctionPlan f;
        f.mode = *mode;
        f.params = *s3;
        f.marked = *s2;
        f.saved = *s2;
        f.data = *s3;
        f.ops = *ops;
        f.outputs = *outputs;
        if (sw.has(SwarmFeature::kPartitionCuts) && *half) {
          f.cut_at = *s5;
          f.cut_len = 1 + *s2;
          f.cut_reason = *s4;
        }
        if (sw.has(SwarmFeature::kNewerKnobs) && *third) f.input_facts = 1 + *s5;
        return f;
      });
}

inline rc::Gen<ArgPlan> arg(const Swarm& sw) {
  const rc::Gen<std::uint32_t> offset = sw.has(SwarmFeature::kMisalignedInputs)
                                            ? weighted<std::uint32_t>({{6, 0}, {1, 1}, {1, 4}})
                                            : weighted<std::uint32_t>({{6, 0}, {1, 4}});
  // The static offset is drawn whether or not its feature is on, and left
  // at 0 when it is off.
  return rc::gen::map(
      rc::gen::tuple(small(sw.has(SwarmFeature::kKeepAcrossGeneration) ? 4 : 3), small(8), offset,
                     weighted<std::uint32_t>({{3, 0}, {1, 1}})),
      [unaligned = sw.has(SwarmFeature::kUnalignedStatic)](
          const std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>& t) {
        ArgPlan a;
        std::tie(a.source, a.pick, a.offset, a.static_offset) = t;
        if (!unaligned) a.static_offset = 0;
        return a;
      });
}

// What an off feature would pick is drawn and left unused.
inline rc::Gen<CallPlan> call(const Swarm& sw) {
  using Picks = std::tuple<std::uint32_t, std::vector<ArgPlan>, std::uint32_t, std::uint32_t, bool,
                           std::optional<std::uint32_t>, bool, std::uint32_t>;
  return rc::gen::map(
      rc::gen::tuple(small(4), rc::gen::container<std::vector<ArgPlan>>(5, arg(sw)), small(8),
                     weighted<std::uint32_t>({{4, 0}, {2, 1}, {1, 2}, {1, 4}}), sometimes(4),
                     maybe_param(10), sometimes(4), small(3)),
      [reassign = sw.has(SwarmFeature::kReassign),
       size_change = sw.has(SwarmFeature::kSizeChange)](Picks t) {
        CallPlan c;
        std::optional<std::uint32_t> reassign_before;
        bool grows = false;
        std::uint32_t grow = 0;
        std::tie(c.function, c.args, c.keep_mask, c.hold, c.read, reassign_before, grows, grow) =
            std::move(t);
        if (reassign) c.reassign_before = reassign_before;
        if (size_change && grows) c.grow = 1 + grow;
        return c;
      });
}

inline rc::Gen<StepPlan> step(const Swarm& sw) {
  return rc::gen::exec(
      [sw, s3 = small(3), half = sometimes(2), third = sometimes(3), fifth = sometimes(5),
       sixth = sometimes(6), reassign = maybe_param(8),
       calls = rc::gen::resize(
           4, rc::gen::nonEmpty(rc::gen::container<std::vector<CallPlan>>(call(sw))))] {
        StepPlan s;
        if (sw.has(SwarmFeature::kMarkStep)) s.mark_step = *sixth;
        s.calls = *calls;
        if (sw.has(SwarmFeature::kEagerBackward)) s.running_backward = *third;
        s.optimizer_step = *half;
        if (sw.has(SwarmFeature::kMarkGrads)) s.mark_grads = *fifth;
        if (sw.has(SwarmFeature::kZeroGrad)) s.zero_grad = *s3;
        if (sw.has(SwarmFeature::kReassign)) s.reassign_after = *reassign;
        if (sw.has(SwarmFeature::kDropOptimizer)) s.drop_optimizer = *sixth;
        return s;
      });
}

// The newer releases' knobs, each set now and then.
inline rc::Gen<PlanKnobs> knobs() {
  return rc::gen::exec([] {
    PlanKnobs k;
    if (*sometimes(3)) k.graph_partition = false;
    if (*sometimes(4)) k.capture_grow = 1 + *small(3);
    if (*sometimes(2)) k.dynamic_shape_warn_limit = 1 + *small(2);
    k.skip_dynamic_graphs = *sometimes(3);
    k.generation_cloning = *sometimes(2);
    if (*sometimes(2)) k.managed_input_limit = 1 + *small(3);
    k.managed_input_skip = *sometimes(3);
    return k;
  });
}

// A program under the swarm `sw`.
inline rc::Gen<ProgramPlan> program(const Swarm& sw) {
  const auto functions = rc::gen::resize(
      3, rc::gen::nonEmpty(rc::gen::container<std::vector<FunctionPlan>>(function(sw))));
  const auto steps = rc::gen::resize(10, rc::gen::container<std::vector<StepPlan>>(step(sw)));
  return rc::gen::exec([sw, functions, steps] {
    ProgramPlan p;
    p.swarm_off = sw.off_names();
    p.torch_profile = *torch_profile();
    p.seed = *uniform<std::uint64_t>(0, 1u << 20);
    p.numel = *small(13);
    p.params = *small(3);
    p.marked_guards = *rc::gen::resize(2, rc::gen::container<std::vector<bool>>(sometimes(2)));
    p.functions = *functions;
    if (sw.has(SwarmFeature::kOptimizer)) {
      OptimizerPlan o;
      o.kind = *rc::gen::element(OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW);
      o.param_mask = 1 + *small(7);
      p.optimizer = o;
    }
    p.steps = *steps;
    if (sw.has(SwarmFeature::kNewerKnobs)) p.knobs = *knobs();
    if (sw.has(SwarmFeature::kMovingSlice)) {
      // The loop is there for 2.15's demotion: that release half the time,
      // and mostly a low limit, so that a short loop demotes and replays.
      p.moving_slice_steps = 3 + *small(6);
      if (*sometimes(2)) p.torch_profile = TorchProfile::k2_15;
      if (!*sometimes(4)) p.knobs.managed_input_limit = 1 + *small(3);
    }
    return p;
  });
}

// A program under a random swarm: the catalogue's generator. `torch`, when
// given, pins the profile every plan runs under (`capsim check --torch`).
inline rc::Gen<ProgramPlan> program(std::optional<TorchProfile> torch = std::nullopt) {
  return rc::gen::exec([torch] {
    ProgramPlan p = *program(*swarm());
    if (torch) p.torch_profile = *torch;
    return p;
  });
}

}  // namespace rc_gen
}  // namespace capsim
