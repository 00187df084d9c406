// The parts of a cudagraph program plan that reach the newer releases'
// decisions (docs/properties.md, "Swarm"): a function's partition cut and
// input facts (the compile-time skips S2 to S7), and the decode loop of the
// moving_slice feature (2.15's managed-input demotion). Internal to
// cudagraph_programs.cpp, which lowers the rest of a plan.
#pragma once

#include <cstdint>
#include <vector>

#include "properties/cudagraph_programs.hpp"

namespace capsim {

// FunctionPlan's cut (ops taken modulo the body) and input facts onto `def`;
// what `profile` has (a set_ from 2.13, a warmup marked incomplete from 2.14).
void declare_newer_facts(const FunctionPlan& plan, TorchProfile profile, FunctionDef& def);

// One action the lowering appends, with the generator's knowledge of its
// inputs and the element count of its tensors.
struct PlannedAction {
  Action action;
  std::vector<ArgKnowledge> knowledge;
  std::int64_t numel = kDefaultNumel;
};

// The decode loop of `steps` steps (at most 16) for tensors of `numel`
// elements, under a profile with managed-input demotion (none otherwise):
// its functions go to `functions`, its actions are returned; each step is a
// new invocation of `src` over one big tensor, an eager view of row k of its
// output, `sink` of that row in the same invocation, and a read.
std::vector<PlannedAction> moving_slice_program(std::uint32_t steps, TorchProfile profile,
                                                std::int64_t numel,
                                                std::vector<FunctionDef>& functions);

}  // namespace capsim
