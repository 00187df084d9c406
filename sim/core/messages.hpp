// The texts PyTorch shows for cudagraph-tree errors, warnings and skips.
//
// Each function renders one message of docs/cudagraph-trees.md §7 with
// capsim's own values filled in (pointers print as PyTorch prints a Python
// int: decimal). The ids (E1, W1, S1, ...) are that section's table's; events
// carry them in their `id` field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/address.hpp"
#include "sim/core/torch_profile.hpp"

namespace capsim::messages {

// E1: an access to an output freed by dealloc_current_path_weakrefs, in the
// text of `rules`' release (a grad output's own from 2.13).
std::string overwritten_output(const TorchProfileRules& rules, bool grad_output = false,
                               const std::string& stack_trace = "[Could not find stack trace]");
// W1: pending, uninvoked backwards keep warmup or recording from ending.
std::string pending_backward(const TorchProfileRules& rules);
// E3: a tensor that died during recording is alive at replay.
std::string dealloc_during_recording();

struct PointerChange {
  std::string input_name;
  Address old_ptr = 0;
  Address new_ptr = 0;
};
// E4: the text of log_data_ptr_mismatch for changed static pointers.
std::string static_pointer_changed(const std::vector<PointerChange>& changes);
// The reasons E5 names, one per counted CheckInvariantStatus.
std::string managed_pointer_changed_reason();
std::string liveness_mismatch_reason();
// E5: the re-record limit was crossed.
std::string rerecord_limit(std::uint32_t function_id, std::int64_t limit,
                           std::optional<std::uint32_t> parent_graph_id, const std::string& reason);
// E9 (capsim's id; 2.15, action "skip"): the managed-input threshold reached
// on the edge from `parent_graph_id` (None for a root) for the listed inputs.
std::string managed_input_rerecord_limit(std::uint32_t function_id, std::int64_t limit,
                                         std::optional<std::uint32_t> parent_graph_id,
                                         const std::vector<std::uint32_t>& input_idxs);
// E6 / E7: check_memory_pool found a mismatch.
// In `rules`' wording; pointers sorted (PyTorch prints a set, whose order is
// Python's, and an OrderedSet in segment order).
std::string pool_missing(const TorchProfileRules& rules, std::uint32_t pool_id,
                         const std::vector<Address>& ptrs);
std::string pool_untracked(const TorchProfileRules& rules, const std::vector<Address>& addrs);
// S1: a mutated input that is neither static nor cudagraph-managed, and
// the stack trace of the first such input's mutating use, where known
// (get_mutation_stack_trace: "<reason>. Found from : \n <trace>").
std::string mutated_inputs(std::size_t instances,
                           const std::optional<std::string>& found_from = std::nullopt);
// The compile-time skips of newer releases (docs/cudagraph-trees.md §2.5).
// Each is logged with "skipping cudagraphs due to " before a reason that, for
// the lowering checks, already starts with it: PyTorch prints it twice.
// S2: a CPU op (graph_partition off); `node` is its FX node name.
// S1 at compile time (cudagraph_support_input_mutation=False): the same
// reason, stored as disabled_cudagraphs_reason and logged by post_compile
// with the prefix again (2.5.0 to 2.15.0 alike).
std::string mutated_inputs_at_compile(std::size_t instances,
                                      const std::optional<std::string>& found_from = std::nullopt);
std::string cpu_device(const std::string& node);
// S3: the graph's nodes use more than one device (check_multiple_devices_or_
// any_cpu_nodes), each as repr(torch.device) prints it, in first-use order;
// the prefix doubled as post_compile logs it.
std::string multiple_devices(const std::vector<std::uint32_t>& cuda_devices);
// S4: CompiledFxGraph's failed cudagraph tests, as the Python list
// cudagraph_post_compile interpolates (e.g. ['non-Tensor inputs']).
std::string fail_reasons(const std::vector<std::string_view>& reasons);
// S7 (capsim's id; 2.13 on): inputs rebound by set_ (without the stack trace).
std::string input_storage_mutation(std::size_t instances);
// S5: cudagraph_skip_dynamic_graphs on a graph with symbolic-shape inputs.
std::string symbolic_shapes();
// S5: an op tagged cudagraph_unsafe (graph_partition off, or 2.9).
std::string incompatible_op(const std::string& target);
// S6 (capsim's id): the caching allocator is off (2.13 on).
std::string uncached_allocator();
// W2: a wrapper records more distinct int keys than the limit.
std::string dynamic_shape_warning(std::size_t num_cudagraphs);
// W3: cudagraph_dynamic_shape_rerecord_limit reached (2.15); `mode` is the
// graph's CompilationMode, lower case; `compile_id` is capsim's function name.
std::string dynamic_shape_rerecord_limit(const std::string& compile_id, std::string_view mode,
                                         std::int64_t limit);
// A1.
std::string after_shutdown();
// capsim's own text for PR 107853's rule (its exact wording was never shipped).
std::string zero_grad_static(const std::string& param_name);

}  // namespace capsim::messages
