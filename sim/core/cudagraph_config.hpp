// CudagraphConfig: the PyTorch settings that steer the cudagraph tree manager.
//
// One plain struct, recorded in every trace's header so that a replay runs
// under the settings the trace was recorded with. The defaults are
// PyTorch's in OSS builds (torch/_inductor/config.py class `triton`, and
// torch/_dynamo/config.py for `inline_inbuilt_nn_modules`); see
// docs/cudagraph-trees.md for what each one changes in capsim.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/torch_profile.hpp"

namespace capsim {

// What 2.15 does once a cudagraph-managed input's pointer has changed
// cudagraph_managed_input_rerecord_limit times on one (parent node,
// function) edge. X(enumerator, name)
#define CAPSIM_MANAGED_INPUT_ACTIONS(X)                     \
  X(kCopy, "copy") /* later recordings copy the input in */ \
  X(kSkip, "skip") /* the edge runs eagerly from then on (E9) */
enum class ManagedInputAction : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_MANAGED_INPUT_ACTIONS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view managed_input_action_name(ManagedInputAction action);
std::optional<ManagedInputAction> managed_input_action_from_name(std::string_view name);

struct CudagraphConfig {
  // Dynamo marks every nn.Parameter static and disables the re-record limit.
  bool inline_inbuilt_nn_modules = true;
  // Mutation of cudagraph-managed inputs is allowed; with
  // inline_inbuilt_nn_modules it also selects re-record mode (not error mode).
  bool cudagraph_support_input_mutation = true;
  std::int64_t cudagraph_unexpected_rerecord_limit = 128;
  bool skip_cudagraph_warmup = false;
  bool force_cudagraphs_warmup = false;
  // check_memory_pool around every warmup, recording and checkpoint.
  bool slow_path_cudagraph_asserts = true;
  // PR 107853's rule, never shipped: zero_grad(set_to_none=True) on a grad
  // marked static raises. Off, as in every released PyTorch.
  bool zero_grad_static_error = false;
  // torch.cuda.graph / make_graphed_callables instead of trees
  // (docs/cudagraph-trees.md §3.4): no invariant checks; copy an input only
  // when its pointer differs.
  bool plain_api = false;
  // Fill freed device memory with NaNs, so stale reads show.
  bool poison_freed = false;
  // The release whose manager decides (torch_profile.hpp). Classic here, so
  // that a trace or scenario that names none keeps the rules it was made
  // under; --torch picks another, and generated cases draw one each.
  TorchProfile torch_profile = TorchProfile::kClassic;

  // --- Compile-time knobs of newer releases (docs/cudagraph-trees.md, §2.5) --
  // torch._inductor.config.triton.cudagraphs, which mode="reduce-overhead"
  // turns on. Off: Inductor compiles each graph (the compile event keeps its
  // static_input_idxs) and runs it without a tree, as on a CPU, where
  // cudagraphify skips every graph; the PyTorch recorder's record() writes it
  // off for its CPU runs.
  bool cudagraphs = true;
  // torch._inductor.config.graph_partition; unset: the profile's default.
  std::optional<bool> graph_partition;
  // Partitions with fewer kernels than this run eagerly (2.12 on; 0: off).
  std::int64_t cudagraph_min_partition_size = 0;
  // The int keys that get a tree function; every other key runs the model
  // directly. Unset: every key (PyTorch's None). A key of one symint is a
  // one-element list here, where PyTorch writes a bare int.
  std::optional<std::vector<std::vector<std::int64_t>>> cudagraph_capture_sizes;
  // Skip cudagraphs for a graph with symbolic-shape inputs.
  bool cudagraph_skip_dynamic_graphs = false;
  // W2 once a wrapper holds more distinct int keys than this; unset: the
  // profile's default; 0 silences it, as PyTorch's None does.
  std::optional<std::int64_t> cudagraph_dynamic_shape_warn_limit;
  // New int keys past this many run eagerly (2.15); unset: no limit.
  std::optional<std::int64_t> cudagraph_dynamic_shape_rerecord_limit;
  // Every cudagraph skip is a RuntimeError instead (2.9 on).
  bool cudagraph_or_error = false;
  // cudagraph_trees_generation_cloning = "user_visible" (2.14 on): live
  // user-visible outputs move out of the pool before a new generation.
  bool cudagraph_trees_generation_cloning = false;
  // torch.cuda.caching_allocator_enable (or PYTORCH_NO_CUDA_MEMORY_CACHING).
  bool caching_allocator_enabled = true;
  // 2.15's cudagraph_managed_input_rerecord_limit and _action (PyTorch's
  // defaults): the count of one managed input's pointer changes on one edge
  // at which the action applies.
  std::int64_t cudagraph_managed_input_rerecord_limit = 5;
  ManagedInputAction cudagraph_managed_input_rerecord_action = ManagedInputAction::kCopy;

  friend bool operator==(const CudagraphConfig&, const CudagraphConfig&) = default;
};

// torch._dynamo.config.inline_inbuilt_nn_modules as the release reads it:
// from 2.12 the flag is deprecated and always True, whatever it is set to.
inline bool inline_inbuilt_nn_modules(const CudagraphConfig& c) {
  return profile_rules(c.torch_profile).inline_always_on || c.inline_inbuilt_nn_modules;
}

// The limit on cudagraph_capture_sizes' keys.
inline constexpr std::size_t kMaxCaptureSizes = 1024;

// A knob set that the profile's release does not have (PyTorch would refuse
// the attribute), or a value out of range: the key and why.
struct ConfigProblem {
  std::string_view key;
  std::string message;
};
std::optional<ConfigProblem> config_problem(const CudagraphConfig& c);

inline bool graph_partition(const CudagraphConfig& c) {
  return c.graph_partition.value_or(profile_rules(c.torch_profile).graph_partition_default);
}

// The knobs of newer releases as the profile's release reads them: a knob
// the release does not have is off (a trace header refuses it; `--torch`
// may still pair them).
inline bool cudagraph_or_error(const CudagraphConfig& c) {
  return c.cudagraph_or_error && profile_rules(c.torch_profile).has_cudagraph_or_error;
}
inline bool generation_cloning(const CudagraphConfig& c) {
  return c.cudagraph_trees_generation_cloning &&
         profile_rules(c.torch_profile).has_generation_cloning;
}
inline std::int64_t min_partition_size(const CudagraphConfig& c) {
  return profile_rules(c.torch_profile).has_min_partition_size ? c.cudagraph_min_partition_size : 0;
}
inline std::optional<std::int64_t> dynamic_shape_rerecord_limit(const CudagraphConfig& c) {
  if (!profile_rules(c.torch_profile).has_dynamic_shape_rerecord_limit) return std::nullopt;
  return c.cudagraph_dynamic_shape_rerecord_limit;
}

// 2.15's managed-input accounting: the limit in force, or none in a release
// without it (a managed input then only counts toward the re-record limit).
inline std::optional<std::int64_t> managed_input_rerecord_limit(const CudagraphConfig& c) {
  if (!profile_rules(c.torch_profile).has_managed_input_demotion) return std::nullopt;
  return c.cudagraph_managed_input_rerecord_limit;
}

// The W2 limit in force; 0: no warning.
inline std::int64_t dynamic_shape_warn_limit(const CudagraphConfig& c) {
  return c.cudagraph_dynamic_shape_warn_limit.value_or(
      profile_rules(c.torch_profile).dynamic_shape_warn_limit);
}

// True when a changed static pointer re-records rather than raising (E4):
// PyTorch's `rerecord_if_static_inputs_change`.
inline bool rerecord_if_static_inputs_change(const CudagraphConfig& c) {
  return profile_rules(c.torch_profile).always_rerecord_static || inline_inbuilt_nn_modules(c) ||
         c.cudagraph_support_input_mutation;
}

}  // namespace capsim
