// RapidCheck generators of ProgramPlans (cudagraph_programs.hpp).
//
// Header-only and included only by test code, so that capsim_properties does
// not depend on RapidCheck. Every choice shrinks towards the simpler program:
// fewer steps, calls and ops, no optimizer, no reassignment, plain inference
// functions. A plan always lowers to a valid program (see `lower`).
#pragma once

#include <rapidcheck.h>

#include <ostream>

#include "properties/cudagraph_programs.hpp"

namespace capsim {

// How RapidCheck shows a plan: the program it lowers to.
inline std::ostream& operator<<(std::ostream& os, const ProgramPlan& plan) {
  return os << lower(plan);
}

namespace rc_gen {

// Uniform in [lo, hi) whatever the size (rc::gen::inRange scales the range
// with the size, and the containers below are resized to a few elements).
template <typename T>
rc::Gen<T> uniform(T lo, T hi) {
  return rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(lo, hi));
}

// One of `pairs` with probability proportional to its weight, shrinking
// towards the first (rc::gen::weightedElement does not shrink).
template <typename T>
rc::Gen<T> weighted(std::vector<std::pair<std::uint32_t, T>> pairs) {
  std::uint32_t total = 0;
  for (const auto& p : pairs) total += p.first;
  return rc::gen::map(uniform<std::uint32_t>(0, total), [pairs](std::uint32_t r) {
    for (const auto& p : pairs) {
      if (r < p.first) return p.second;
      r -= p.first;
    }
    return pairs.back().second;
  });
}

// A flag that is true with probability 1 / `one_in`, shrinking to false.
inline rc::Gen<bool> sometimes(std::uint32_t one_in) {
  return rc::gen::map(uniform<std::uint32_t>(0, one_in),
                      [one_in](std::uint32_t r) { return r + 1 == one_in; });
}

inline rc::Gen<std::uint32_t> small(std::uint32_t below) {
  return uniform<std::uint32_t>(0, below);
}

inline rc::Gen<std::optional<std::uint32_t>> maybe_param(std::uint32_t one_in) {
  return rc::gen::exec([one_in]() -> std::optional<std::uint32_t> {
    if (!*sometimes(one_in)) return std::nullopt;
    return *small(3);
  });
}

inline rc::Gen<OpPlan> op() {
  return rc::gen::exec([] {
    OpPlan o;
    o.op = *weighted<PlanOp>({{4, PlanOp::kAdd},
                              {3, PlanOp::kMul},
                              {2, PlanOp::kNeg},
                              {2, PlanOp::kRelu},
                              {1, PlanOp::kSum},
                              {2, PlanOp::kClone},
                              {2, PlanOp::kAlias},
                              {1, PlanOp::kSlice},
                              {2, PlanOp::kAddStatic},
                              {1, PlanOp::kAddData}});
    o.a = *small(16);
    o.b = *small(16);
    o.start = *small(16);
    o.length = *small(16);
    return o;
  });
}

inline rc::Gen<FunctionPlan> function() {
  return rc::gen::exec([] {
    FunctionPlan f;
    f.mode = *weighted<CompilationMode>({{3, CompilationMode::kInference},
                                         {2, CompilationMode::kForward},
                                         {1, CompilationMode::kBackward}});
    f.params = *small(3);
    f.marked = *small(2);
    f.saved = *small(2);
    f.data = *small(3);
    f.ops = *rc::gen::resize(5, rc::gen::container<std::vector<OpPlan>>(op()));
    f.outputs = *rc::gen::resize(3, rc::gen::container<std::vector<std::uint32_t>>(small(16)));
    return f;
  });
}

inline rc::Gen<ArgPlan> arg() {
  return rc::gen::exec([] {
    ArgPlan a;
    a.source = *small(3);
    a.pick = *small(8);
    a.offset = *weighted<std::uint32_t>({{6, 0}, {1, 1}, {1, 4}});
    return a;
  });
}

inline rc::Gen<CallPlan> call() {
  return rc::gen::exec([] {
    CallPlan c;
    c.function = *small(4);
    c.args = *rc::gen::container<std::vector<ArgPlan>>(5, arg());
    c.keep_mask = *small(8);
    c.hold = *weighted<std::uint32_t>({{4, 0}, {2, 1}, {1, 2}, {1, 4}});
    c.read = *sometimes(4);
    c.reassign_before = *maybe_param(10);
    return c;
  });
}

inline rc::Gen<StepPlan> step() {
  return rc::gen::exec([] {
    StepPlan s;
    s.mark_step = *sometimes(6);
    s.calls =
        *rc::gen::resize(4, rc::gen::nonEmpty(rc::gen::container<std::vector<CallPlan>>(call())));
    s.running_backward = *sometimes(3);
    s.optimizer_step = *sometimes(2);
    s.mark_grads = *sometimes(5);
    s.zero_grad = *small(3);
    s.reassign_after = *maybe_param(8);
    return s;
  });
}

inline rc::Gen<ProgramPlan> program() {
  return rc::gen::exec([] {
    ProgramPlan p;
    p.seed = *uniform<std::uint64_t>(0, 1u << 20);
    p.numel = *small(13);
    p.params = *small(3);
    p.marked_guards = *rc::gen::resize(2, rc::gen::container<std::vector<bool>>(sometimes(2)));
    p.functions = *rc::gen::resize(
        3, rc::gen::nonEmpty(rc::gen::container<std::vector<FunctionPlan>>(function())));
    if (*sometimes(3)) {
      OptimizerPlan o;
      o.kind = *rc::gen::element(OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW);
      o.param_mask = 1 + *small(7);
      p.optimizer = o;
    }
    p.steps = *rc::gen::resize(10, rc::gen::container<std::vector<StepPlan>>(step()));
    return p;
  });
}

}  // namespace rc_gen
}  // namespace capsim
