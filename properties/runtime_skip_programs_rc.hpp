// RapidCheck generators of RuntimePlans (runtime_skip_programs.hpp), one per
// run-time skip.
//
// Header-only and included only where RapidCheck is, as
// skip_programs_rc.hpp. A plan for skip `focus` always has that skip's
// condition (a plain input written in a step without src for the run-time
// S1; every step calling src, a low re-record limit and, up to 2.11,
// inlining mostly off for E5; 2.15, action "skip" and a low managed-input
// limit for E9), and the rest drawn, so that the focused skip decides most
// cases, misses in some, and another masks it in some.
#pragma once

#include <rapidcheck.h>

#include <optional>
#include <vector>

#include "properties/runtime_skip_programs.hpp"
#include "properties/swarm_rc.hpp"

namespace capsim::rc_gen {

// The run-time skips a generator can focus on: S1 (the mutation gate), E5,
// E9.
inline constexpr std::uint32_t kRuntimeSkipFoci = 3;

inline rc::Gen<RuntimeStepPlan> runtime_step(bool src_always) {
  return rc::gen::exec([src_always] {
    RuntimeStepPlan s;
    s.src = src_always || !*sometimes(2);
    // Mostly the first rows, so that recordings match again; a fresh a now
    // and then.
    s.arg = *weighted<std::uint32_t>({{3, 0}, {2, 1}, {2, 2}, {1, 3}, {1, 4}, {2, kRuntimeRows}});
    s.param = *sometimes(4) ? 1 : 0;
    return s;
  });
}

// The focused skip's condition, on a drawn plan.
inline void force_runtime_skip(std::uint32_t focus, RuntimePlan& p) {
  switch (focus) {
    case 0: {
      p.mutate = 1;
      p.support_input_mutation = !*sometimes(6);
      p.steps[*small(static_cast<std::uint32_t>(p.steps.size()))].src = false;
      break;
    }
    case 1:
      p.rerecord_limit = *small(3);
      p.inline_modules = *sometimes(4);
      break;
    case 2:
      p.managed_skip = true;
      p.managed_limit = 1 + *small(3);
      // Half the plans move a's row every step, as a decode loop does: past
      // PyTorch's default limit of 5 within the steps.
      if (*sometimes(2)) {
        for (std::size_t k = 0; k < p.steps.size(); ++k) {
          p.steps[k].arg = static_cast<std::uint32_t>(k % kRuntimeRows);
        }
      }
      break;
    default: break;
  }
}

// A plan for run-time skip `focus` (0: S1, 1: E5, 2: E9); `torch` pins the
// profile (`capsim check --torch`).
inline rc::Gen<RuntimePlan> runtime_plan(std::uint32_t focus, std::optional<TorchProfile> torch) {
  return rc::gen::exec([focus, torch] {
    RuntimePlan p;
    p.seed = *uniform<std::uint64_t>(0, 1u << 20);
    p.torch_profile = *torch_profile();
    // E9 exists in 2.15 only: its plans draw 2.15 but now and then another
    // release, whose edge never skips for its managed input.
    if (focus == 2 && !*sometimes(4)) p.torch_profile = TorchProfile::k2_15;
    if (torch) p.torch_profile = *torch;
    p.mutate = *weighted<std::uint32_t>({{4, 0}, {1, 1}, {1, 2}});
    p.inline_modules = !*sometimes(3);
    p.support_input_mutation = !*sometimes(8);
    p.or_error = *sometimes(4);
    if (*sometimes(3)) p.managed_limit = 1 + *small(4);
    // Enough steps past src's warmup and recording for the limits to bind.
    const bool src_always = focus != 0;
    const std::uint32_t steps = focus == 0 ? 2 + *small(7) : 3 + *small(focus == 2 ? 10 : 7);
    p.steps = *rc::gen::container<std::vector<RuntimeStepPlan>>(steps, runtime_step(src_always));
    force_runtime_skip(focus, p);
    return p;
  });
}

}  // namespace capsim::rc_gen
