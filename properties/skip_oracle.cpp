// The skip oracle (skip_oracle.hpp): docs/cudagraph-trees.md §2.5, steps 1
// to 4, in the doc's order, each condition as the doc words it. Deliberately
// independent of sim/world/partitions.cpp: nothing here calls the World.
#include "properties/skip_oracle.hpp"

#include <algorithm>
#include <set>

namespace capsim {

namespace {

SkipVerdict logged(Decision id, std::string why, const CudagraphConfig& config) {
  // "cudagraph_or_error (2.9 on): log_cudagraph_skip_and_bump_counter raises
  // a RuntimeError after it has logged" (§2.5); a release without the knob
  // ignores it ("Version profiles").
  const bool raises =
      config.cudagraph_or_error && profile_rules(config.torch_profile).has_cudagraph_or_error;
  return SkipVerdict{SkipVerdict::Kind::kLogged, id, raises, std::move(why)};
}

bool partitions_on(const CudagraphConfig& config) {
  // "`graph_partition`'s default: off (classic), on from 2.9" unless set.
  return config.graph_partition.value_or(
      profile_rules(config.torch_profile).graph_partition_default);
}

bool has_cut(const FunctionDef& def, PartitionCutReason reason) {
  return std::any_of(def.partition_cuts.begin(), def.partition_cuts.end(),
                     [reason](const PartitionCut& c) { return c.reason == reason; });
}

// §2.5 step 1, the lowering skips, in the doc's order.
std::optional<SkipVerdict> lowering(const FunctionDef& def, bool dynamic,
                                    const CudagraphConfig& config) {
  const TorchProfileRules& rules = profile_rules(config.torch_profile);
  // "unless partitions are on in 2.10 or later" (2.9 checks both even with them).
  const bool partition_handles = partitions_on(config) && rules.partition_bypasses_graph_skips;
  if (config.cudagraph_skip_dynamic_graphs && dynamic && !partition_handles) {
    return logged(Decision::kSkipDynamicShapes, "symint inputs with cudagraph_skip_dynamic_graphs",
                  config);
  }
  if (has_cut(def, PartitionCutReason::kCudagraphUnsafe) && !partition_handles) {
    return logged(Decision::kSkipDynamicShapes, "a cudagraph_unsafe op", config);
  }
  if (!config.caching_allocator_enabled && rules.caching_allocator_skip) {
    return logged(Decision::kSkipUncachedAllocator, "the caching allocator off (2.13 on)", config);
  }
  if (has_cut(def, PartitionCutReason::kCpu) && !partitions_on(config)) {
    return logged(Decision::kSkipCpuOp, "a cpu op without graph_partition", config);
  }
  if (def.cuda_devices.size() > 1) {
    return logged(Decision::kSkipMultipleDevices,
                  "more than one CUDA device, with or without partitions", config);
  }
  return std::nullopt;
}

// §2.5 step 4: "an example input that is not a Tensor, SymInt or Generator
// (from 2.12 an opaque object passes too)" fails "non-Tensor inputs".
bool fails_non_tensor_test(const FunctionDef& def, const CudagraphConfig& config) {
  const bool opaque_ok = profile_rules(config.torch_profile).opaque_inputs_allowed;
  for (NonTensorInput k : def.non_tensor_inputs) {
    if (k == NonTensorInput::kGenerator) continue;
    if (k == NonTensorInput::kOpaque && opaque_ok) continue;
    return true;
  }
  return false;
}

// §2.5 step 4, up to 2.12 ("Version profiles"; PR #182524 removed it in
// 2.13), as the doc words PyTorch's `complex_memory_overlap`: drop the
// expanded dims (stride 0) and the dims of size 1, sort the rest by stride
// (ties by position), and fail when a dim's stride is below the stride times
// the size of the dim before it. Conservative: it fails every argument whose
// elements share memory, and some whose elements do not.
bool fails_stride_test(const ArgLayout& a) {
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, size), by position
  for (std::size_t d = 0; d < a.sizes.size() && d < a.strides.size(); ++d) {
    if (a.strides[d] != 0 && a.sizes[d] != 1) dims.emplace_back(a.strides[d], a.sizes[d]);
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (std::size_t i = 1; i < dims.size(); ++i) {
    if (dims[i].first < dims[i - 1].first * dims[i - 1].second) return true;
  }
  return false;
}

bool fails_overlap_test(std::span<const ArgLayout> args, const CudagraphConfig& config) {
  if (config.torch_profile >= TorchProfile::k2_13) return false;
  return std::any_of(args.begin(), args.end(), fails_stride_test);
}

}  // namespace

// The inputs the body writes: an in-place op's first operand, followed
// through views back to the input it views.
std::set<std::uint32_t> written_inputs(const FunctionDef& def) {
  const auto n = static_cast<ValueIndex>(def.num_inputs());
  std::set<std::uint32_t> out;
  for (const BodyOp& op : def.ops) {
    if (!body_op_in_place(op.kind) || op.args.empty()) continue;
    ValueIndex v = op.args[0];
    while (v >= n &&
           (body_op_is_view(def.ops[v - n].kind) || body_op_in_place(def.ops[v - n].kind)))
      v = def.ops[v - n].args.at(0);
    if (v < n) out.insert(v);
  }
  return out;
}

// The compile-time static inputs (§3): the lifted params and buffers, and the
// nn.Parameters when inline_inbuilt_nn_modules is on (always from 2.12).
bool static_input(const FunctionDef& def, std::uint32_t i, const CudagraphConfig& config) {
  const auto in = [i](const std::vector<std::uint32_t>& s) {
    return std::find(s.begin(), s.end(), i) != s.end();
  };
  const bool inline_on =
      profile_rules(config.torch_profile).inline_always_on || config.inline_inbuilt_nn_modules;
  return in(def.static_input_idxs) || (inline_on && in(def.param_input_idxs));
}

SkipVerdict documented_skip(const FunctionDef& def, bool dynamic, const CudagraphConfig& config,
                            std::span<const ArgLayout> args) {
  // A graph Inductor does not cudagraph at all (triton.cudagraphs off) logs
  // no skip.
  if (!config.cudagraphs) return {};
  if (std::optional<SkipVerdict> v = lowering(def, dynamic, config)) return *v;
  // Step 2: S7, 2.13 on; "logged on the partition path too and wins over S1".
  if (!def.input_storage_mutations.empty() &&
      profile_rules(config.torch_profile).input_storage_mutation_skip) {
    return logged(Decision::kSkipInputStorageReplaced, "a set_ on a graph input (2.13 on)", config);
  }
  // Step 3: S1 with cudagraph_support_input_mutation=False, for a mutated
  // input that is not static.
  if (!config.cudagraph_support_input_mutation) {
    for (std::uint32_t i : written_inputs(def)) {
      if (!static_input(def, i, config)) {
        return logged(Decision::kSkipMutatedInputs,
                      "a mutated non-static input, input mutation support off", config);
      }
    }
  }
  // Step 4: S4, logged without partitions, silent with them: "complex
  // memory overlap" (up to 2.12), then "non-Tensor inputs".
  const bool overlap = fails_overlap_test(args, config);
  if (overlap || fails_non_tensor_test(def, config)) {
    const std::string what = overlap
                                 ? "an input that fails the memory-overlap stride test (up to 2.12)"
                                 : "a non-Tensor input";
    if (partitions_on(config)) {
      return SkipVerdict{SkipVerdict::Kind::kSilent, Decision::kSkipFailedCompileTest, false,
                         what + " with graph partitions: dropped silently"};
    }
    return logged(Decision::kSkipFailedCompileTest, what + " without graph partitions", config);
  }
  return {};
}

}  // namespace capsim
