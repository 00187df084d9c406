// RapidCheck generators of SkipPlans (skip_programs.hpp), one per skip.
//
// Header-only and included only where RapidCheck is, as
// cudagraph_programs_rc.hpp. A plan for skip `focus` always has that skip's
// condition on its first function (a cpu cut and graph_partition off for
// S2, two devices for S3, ...), and every other condition now and then, so
// that the focused skip decides most compiles and another one masks it in
// some: the focused skip's control (a World that ignores it) is caught
// within a few cases, and the property checks every skip in every case.
#pragma once

#include <rapidcheck.h>

#include <optional>
#include <vector>

#include "properties/skip_programs.hpp"
#include "properties/swarm_rc.hpp"

namespace capsim::rc_gen {

// The skips a generator can focus on, S1 to S7.
inline constexpr std::uint32_t kSkipFoci = 7;

inline rc::Gen<NonTensorInput> non_tensor_input() {
  return weighted<NonTensorInput>({{2, NonTensorInput::kFloat},
                                   {1, NonTensorInput::kInt},
                                   {1, NonTensorInput::kBool},
                                   {1, NonTensorInput::kNone},
                                   {2, NonTensorInput::kGenerator},
                                   {2, NonTensorInput::kOpaque}});
}

inline rc::Gen<SkipFunctionPlan> skip_function() {
  return rc::gen::exec([] {
    SkipFunctionPlan f;
    f.mutate = *weighted<std::uint32_t>({{4, 0}, {2, 1}, {1, 2}});
    if (*sometimes(5)) f.layout = 1 + *small(kSkipLayouts - 1);
    if (*sometimes(3)) {
      f.cut_reason = *small(4);
      f.cut_at = *small(3);
    }
    if (*sometimes(4)) {
      f.non_tensor =
          *rc::gen::resize(2, rc::gen::container<std::vector<NonTensorInput>>(non_tensor_input()));
    }
    if (*sometimes(5)) f.devices = 1 + *small(3);
    f.set_input = *sometimes(6);
    return f;
  });
}

// Skip `focus` (0: S1 ... 6: S7) switched on in `plan`'s first function.
inline void force_skip(std::uint32_t focus, SkipPlan& plan) {
  SkipFunctionPlan& f = plan.functions.front();
  plan.calls.front().function = 0;
  switch (focus) {
    case 0:
      plan.support_input_mutation = false;
      f.mutate = 1;
      f.layout = 0;
      break;
    case 1:
      plan.graph_partition = false;
      f.cut_reason = static_cast<std::uint32_t>(PartitionCutReason::kCpu);
      break;
    case 2: f.devices = 2 + *small(2); break;
    case 3:
      // An x whose strides fail the overlap test (S4 up to 2.12 only, so
      // under every profile it both skips and does not), or a non-Tensor
      // input with any x.
      if (*sometimes(3)) {
        f.layout = kSkipLayouts - 3 + *small(3);
      } else {
        f.non_tensor.insert(f.non_tensor.begin(), *non_tensor_input());
        if (*sometimes(2)) f.layout = *small(kSkipLayouts);
      }
      break;
    case 4:
      if (*sometimes(2)) {
        f.cut_reason = static_cast<std::uint32_t>(PartitionCutReason::kCudagraphUnsafe);
      } else {
        plan.skip_dynamic_graphs = true;
        plan.calls.front().key = 1 + *small(2);
      }
      if (*sometimes(2)) plan.graph_partition = false;
      break;
    case 5: plan.caching_allocator = false; break;
    case 6: f.set_input = true; break;
    default: break;
  }
}

// A plan for skip `focus`; `torch` pins the profile (`capsim check --torch`).
// S6 and S7 exist from 2.13, so their plans draw from 2.13 on unless pinned.
inline rc::Gen<SkipPlan> skip_plan(std::uint32_t focus, std::optional<TorchProfile> torch) {
  return rc::gen::exec([focus, torch] {
    SkipPlan p;
    p.seed = *uniform<std::uint64_t>(0, 1u << 20);
    p.torch_profile = *torch_profile();
    if (focus >= 5 && p.torch_profile < TorchProfile::k2_13) {
      p.torch_profile = static_cast<TorchProfile>(static_cast<int>(TorchProfile::k2_13) +
                                                  static_cast<int>(p.torch_profile) % 3);
    }
    if (torch) p.torch_profile = *torch;
    if (*sometimes(3)) p.graph_partition = *sometimes(2);
    p.skip_dynamic_graphs = *sometimes(4);
    p.support_input_mutation = !*sometimes(4);
    p.caching_allocator = !*sometimes(6);
    p.or_error = *sometimes(5);
    p.functions = *rc::gen::resize(
        2, rc::gen::nonEmpty(rc::gen::container<std::vector<SkipFunctionPlan>>(skip_function())));
    p.calls = *rc::gen::resize(
        5, rc::gen::nonEmpty(rc::gen::container<std::vector<SkipCallPlan>>(rc::gen::exec([] {
          return SkipCallPlan{*small(2), *weighted<std::uint32_t>({{3, 0}, {1, 1}, {1, 2}})};
        }))));
    force_skip(focus, p);
    return p;
  });
}

}  // namespace capsim::rc_gen
