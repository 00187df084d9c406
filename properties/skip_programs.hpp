// Small programs that reach the compile-time skips (S1 to S7 of
// docs/cudagraph-trees.md §2.5), for the `cudagraphs.skips-as-documented.*`
// properties: one or two graphs of x (a fresh eager tensor of sizes (2, 4),
// maybe strided) and p (a Parameter), each with what the skips read (a
// mutated input, a partition cut, non-Tensor inputs, devices, a set_ on an
// input, an x whose elements may share memory), called a few times
// with or without a symint key, under a profile and the knobs those skips
// read (graph_partition, cudagraph_skip_dynamic_graphs,
// cudagraph_support_input_mutation, the caching allocator,
// cudagraph_or_error). Plain data that RapidCheck shrinks
// (skip_programs_rc.hpp); `lower_skips` makes a valid program of any plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "properties/cudagraph_programs.hpp"
#include "sim/core/cudagraph_config.hpp"

namespace capsim {

// The strides of x (sizes (2, 4)), by index: 0 contiguous (4, 1); 1 a
// transpose's (1, 2); 2 holes (8, 1); 3 expanded (0, 1); 4 (1, 1) and 5
// (2, 1), whose elements share memory; 6 (3, 2), whose elements do not
// share memory although a stride is below the span of the dim before it.
inline constexpr std::uint32_t kSkipLayouts = 7;
Dims skip_layout_strides(std::uint32_t layout);

struct SkipFunctionPlan {
  std::uint32_t mutate = 0;                 // 0: none; 1: x.add_ (plain input); 2: p.add_ (static)
  std::uint32_t layout = 0;                 // x's strides (modulo kSkipLayouts); x.add_ only if 0
  std::optional<std::uint32_t> cut_reason;  // a cut of op cut_at, PartitionCutReason order
  std::uint32_t cut_at = 0;                 // taken modulo the ops
  std::vector<NonTensorInput> non_tensor;   // example inputs that are not tensors
  std::uint32_t devices = 0;                // CUDA devices named (0: none said, one device)
  bool set_input = false;                   // x.set_(...): lowered only where 2.13 on
};

struct SkipCallPlan {
  std::uint32_t function = 0;  // taken modulo the functions
  std::uint32_t key = 0;       // 0: no symint; 1, 2: int keys {numel}, {numel + 1}
};

struct SkipPlan {
  std::uint64_t seed = 0;
  TorchProfile torch_profile = TorchProfile::kClassic;
  std::optional<bool> graph_partition;
  bool skip_dynamic_graphs = false;
  bool support_input_mutation = true;
  bool caching_allocator = true;            // off only where the profile models it (2.13 on)
  bool or_error = false;                    // only where the profile has it (2.9 on)
  std::vector<SkipFunctionPlan> functions;  // at least one after lowering
  std::vector<SkipCallPlan> calls;          // at least one after lowering
};

// The program and the config a plan runs under.
struct SkipProgram {
  GeneratedProgram generated;
  CudagraphConfig config;
};
SkipProgram lower_skips(const SkipPlan& plan);

// The config line and the program, for a counterexample.
std::string describe(const SkipProgram& program);

}  // namespace capsim
