// The newer releases' parts of a plan (cudagraph_programs_newer.hpp).
#include "properties/cudagraph_programs_newer.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/core/function_builder.hpp"

namespace capsim {

namespace {

// The declarations of FunctionPlan::input_facts; a set_ (2.13 on) and a
// warmup marked incomplete (2.14 on) only where the profile has them.
void declare_input_facts(std::uint32_t facts, TorchProfile profile, FunctionDef& def) {
  switch (facts % 6) {
    case 1: def.non_tensor_inputs = {NonTensorInput::kFloat}; break;
    case 2: def.non_tensor_inputs = {NonTensorInput::kOpaque}; break;
    case 3: def.cuda_devices = {0, 1}; break;
    case 4:
      if (profile_rules(profile).input_storage_mutation_skip) def.input_storage_mutations = {0};
      break;
    case 5:
      if (profile_rules(profile).has_mark_warmup_incomplete) def.warmups_marked_incomplete = 1;
      break;
    default: break;
  }
}

}  // namespace

void declare_newer_facts(const FunctionPlan& p, TorchProfile profile, FunctionDef& def) {
  if (p.cut_len > 0 && !def.ops.empty()) {
    constexpr PartitionCutReason kCutReasons[] = {
        PartitionCutReason::kCpu, PartitionCutReason::kCudagraphUnsafe,
        PartitionCutReason::kCustomShouldPartition, PartitionCutReason::kDynamicShape};
    const auto ops = static_cast<std::uint32_t>(def.ops.size());
    const std::uint32_t begin = p.cut_at % ops;
    def.partition_cuts = {{begin, std::min(ops, begin + p.cut_len), kCutReasons[p.cut_reason % 4]}};
  }
  declare_input_facts(p.input_facts, profile, def);
}

void apply_knobs(const PlanKnobs& knobs, std::int64_t numel, CudagraphConfig& config) {
  if (knobs.graph_partition) config.graph_partition = *knobs.graph_partition;
  if (knobs.capture_grow) {
    config.cudagraph_capture_sizes =
        std::vector<std::vector<std::int64_t>>{{numel + *knobs.capture_grow}};
  }
  if (knobs.dynamic_shape_warn_limit) {
    config.cudagraph_dynamic_shape_warn_limit = *knobs.dynamic_shape_warn_limit;
  }
  if (knobs.skip_dynamic_graphs) config.cudagraph_skip_dynamic_graphs = true;
  if (knobs.generation_cloning && profile_rules(config.torch_profile).has_generation_cloning) {
    config.cudagraph_trees_generation_cloning = true;
  }
  if (profile_rules(config.torch_profile).has_managed_input_demotion) {
    if (knobs.managed_input_limit) {
      config.cudagraph_managed_input_rerecord_limit = *knobs.managed_input_limit;
    }
    if (knobs.managed_input_skip) {
      config.cudagraph_managed_input_rerecord_action = ManagedInputAction::kSkip;
    }
  }
}

std::vector<PlannedAction> moving_slice_program(std::uint32_t steps, TorchProfile profile,
                                                std::int64_t numel,
                                                std::vector<FunctionDef>& functions) {
  steps = std::min<std::uint32_t>(steps, 16);
  // Under an older release the loop only re-records every step, which the
  // rest of the plan covers at less cost.
  if (steps == 0 || !profile_rules(profile).has_managed_input_demotion) return {};
  // Rows start 16 bytes apart, so that each row is aligned and reaches
  // `sink` as a managed input, not as a clone.
  const std::int64_t stride = (numel + 3) / 4 * 4;
  const std::int64_t big = stride * steps;
  {
    FunctionBuilder f("src", CompilationMode::kInference, {"arg0_1"});
    functions.push_back(f.returns({f.add(f.input(0), f.input(0))}));
  }
  {
    FunctionBuilder f("sink", CompilationMode::kInference, {"arg0_1"});
    functions.push_back(f.returns({f.mul(f.input(0), f.input(0))}));
  }
  for (std::uint32_t k = 0; k < steps; ++k) {
    FunctionBuilder row(fmt::format("row{}", k), CompilationMode::kInference, {"y"});
    functions.push_back(row.returns({row.slice(row.input(0), k * stride, k * stride + numel)}));
  }
  std::vector<PlannedAction> out;
  NewTensor t;
  t.name = "big";
  t.sizes = {big};
  out.push_back({t, {}, big});
  for (std::uint32_t k = 0; k < steps; ++k) {
    Call src;
    src.function = "src";
    src.args = {"big"};
    src.outputs = {"y"};
    out.push_back({src, {ArgKnowledge::kNonStatic}, big});
    out.push_back({EagerCall{fmt::format("row{}", k), {"y"}, {"v"}}, {}, kDefaultNumel});
    Call sink;
    sink.function = "sink";
    sink.args = {"v"};
    sink.outputs = {"z"};
    sink.new_invocation = false;
    out.push_back({sink, {ArgKnowledge::kUnknown}, kDefaultNumel});
    out.push_back({Read{"z"}, {}, kDefaultNumel});
  }
  return out;
}

}  // namespace capsim
