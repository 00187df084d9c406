// The cudagraph-tree error, warning and skip texts (see messages.hpp), in the profile's wording
// where releases differ.
#include "sim/core/messages.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace capsim::messages {

std::string overwritten_output(const TorchProfileRules& rules, bool grad_output,
                               const std::string& stack_trace) {
  if (grad_output && rules.e1_grad_output_text) {
    return fmt::format(
        "Error: accessing gradient tensor output of CUDAGraphs that has been overwritten by a "
        "subsequent run. Stack trace: {}. This can happen with "
        "torch.compile(mode='reduce-overhead') and gradient accumulation when a .grad tensor is "
        "allocated during CUDAGraph capture. If you need gradient accumulation, allocate stable "
        ".grad buffers outside CUDAGraph capture before the compiled backward runs, for example "
        "by running an eager warmup iteration or by preallocating zeroed .grad tensors. If you "
        "do not need gradient accumulation, set .grad to None before each backward.",
        stack_trace);
  }
  if (rules.e1_generation_cloning_text) {
    return fmt::format(
        "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent "
        "run. Stack trace: {}. To prevent overwriting, call "
        "torch.compiler.cudagraph_mark_step_begin() before each model invocation. If a tensor "
        "is a user-visible output that must remain live across generations, manually clone the "
        "tensor outside torch.compile(), or set "
        "torch._inductor.config.triton.cudagraph_trees_generation_cloning = 'user_visible' to "
        "clone all user-visible tensors that persist across generations.",
        stack_trace);
  }
  return fmt::format(
      "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent "
      "run. Stack trace: {}. To prevent overwriting, clone the tensor outside of torch.compile() "
      "or call torch.compiler.cudagraph_mark_step_begin() before each model invocation.",
      stack_trace);
}

std::string pending_backward(const TorchProfileRules& rules) {
  if (rules.w1_requires_backward_text) {
    return "Unable to hit fast path of CUDAGraphs because outputs from a previous step still "
           "require backward. Ensure backward() is invoked or detach outputs. You may also call "
           "torch.compiler.cudagraph_mark_step_begin() before each model invocation.";
  }
  return "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards. "
         "Consider running with torch.no_grad() or using "
         "torch.compiler.cudagraph_mark_step_begin() before each model invocation";
}

std::string dealloc_during_recording() {
  return "TODO: graph recording observed an input tensor deallocate during graph  recording that "
         "did not occur during replay. Please file an issue.";
}

std::string static_pointer_changed(const std::vector<PointerChange>& changes) {
  std::string text = "static input data pointer changed.\n";
  for (const PointerChange& c : changes) {
    text +=
        fmt::format("input name: {}. data pointer changed from {} to {}. input stack trace: None\n",
                    c.input_name, c.old_ptr, c.new_ptr);
  }
  return text;
}

std::string managed_pointer_changed_reason() {
  return "cudagraph managed tensor data pointer changed.";
}
std::string liveness_mismatch_reason() {
  return "expected dead indices before graph are live";
}

std::string rerecord_limit(std::uint32_t function_id, std::int64_t limit,
                           std::optional<std::uint32_t> parent_graph_id,
                           const std::string& reason) {
  return fmt::format(
      "skipping cudagraph due to function {} exceeding max re-recording limit (={}) on cudagraph "
      "node {} due to {}.",
      function_id, limit, parent_graph_id ? std::to_string(*parent_graph_id) : "None", reason);
}

std::string managed_input_rerecord_limit(std::uint32_t function_id, std::int64_t limit,
                                         std::optional<std::uint32_t> parent_graph_id,
                                         const std::vector<std::uint32_t>& input_idxs) {
  // The indices as Python prints a list of ints.
  return fmt::format(
      "skipping cudagraph due to function {} reaching the cudagraph-managed input re-recording "
      "threshold (={}) on cudagraph node {} for input indices [{}].",
      function_id, limit, parent_graph_id ? std::to_string(*parent_graph_id) : "None",
      fmt::join(input_idxs, ", "));
}

namespace {
std::string address_list(const std::vector<Address>& ptrs) {
  std::string out = "[";
  for (std::size_t i = 0; i < ptrs.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(ptrs[i]);
  }
  return out + "]";
}
}  // namespace

// A Python set of ints as repr prints it: {1, 2}.
std::string python_set(const std::vector<Address>& ptrs) {
  std::string list = address_list(ptrs);
  return "{" + list.substr(1, list.size() - 2) + "}";
}

std::string pool_missing(const TorchProfileRules& rules, std::uint32_t pool_id,
                         const std::vector<Address>& ptrs) {
  if (!rules.pool_texts_2_11) {
    return fmt::format("These storage data ptrs are not allocated in pool {} but should be {}",
                       pool_id, python_set(ptrs));
  }
  return fmt::format(
      "These storage data ptrs are not allocated in pool {} but should be: {}. This could be a "
      "bug in inductor aliasing tracking or in a custom op's meta function. Please file an issue.",
      pool_id, python_set(ptrs));
}

std::string pool_untracked(const TorchProfileRules& rules, const std::vector<Address>& addrs) {
  // One "Data Pointer: P, history: \n<trace>" per block; the trace is empty
  // unless cudagraph_trees_history_recording, which capsim does not model.
  std::string allocations;
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    allocations += fmt::format("{}Data Pointer: {}, history: \n", i == 0 ? "" : "\n", addrs[i]);
  }
  if (!rules.pool_texts_2_11) {
    return "These live storage data ptrs are in the cudagraph pool but not accounted for as an "
           "output of cudagraph trees: \n\n" +
           allocations;
  }
  return fmt::format(
      "Detected {} tensor(s) in the cudagraph pool not tracked as outputs. All live allocations "
      "must be tracked for correctness.\nDebugging:\n- Set "
      "torch._inductor.config.triton.cudagraph_trees_history_recording = True for allocation "
      "origins\n- Objgraph backrefs disabled; set "
      "torch._inductor.config.triton.cudagraph_trees_objgraph = True "
      "(refs_live_tensor_{{index}}.svg)\n- Search gc.get_objects() for tensors with data_ptr() in "
      "OrderedSet({})\n- Use refcycle to find what is preventing cleanup\nAllocations:\n{}",
      addrs.size(), address_list(addrs), allocations);
}

std::string mutated_inputs(std::size_t instances, const std::optional<std::string>& found_from) {
  std::string text =
      fmt::format("skipping cudagraphs due to mutated inputs ({} instances)", instances);
  if (found_from) text += ". Found from : \n " + *found_from;
  return text;
}

std::string mutated_inputs_at_compile(std::size_t instances,
                                      const std::optional<std::string>& found_from) {
  return "skipping cudagraphs due to " + mutated_inputs(instances, found_from);
}

std::string cpu_device(const std::string& node) {
  return fmt::format("skipping cudagraphs due to skipping cudagraphs due to cpu device ({})", node);
}

// PyTorch ends this reason with a newline (or " Found from <stack>\n");
// capsim has no stack traces and drops the newline.
std::string symbolic_shapes() {
  return "skipping cudagraphs due to graph with symbolic shapes inputs and "
         "config.triton.cudagraph_skip_dynamic_graphs=True.";
}

std::string incompatible_op(const std::string& target) {
  return fmt::format("skipping cudagraphs due to disabling cudagraphs due to incompatible op {}",
                     target);
}

std::string multiple_devices(const std::vector<std::uint32_t>& cuda_devices) {
  std::string devices;
  for (std::uint32_t d : cuda_devices) {
    devices += fmt::format("{}device(type='cuda', index={})", devices.empty() ? "" : ", ", d);
  }
  return "skipping cudagraphs due to skipping cudagraphs due to multiple devices: " + devices;
}

std::string fail_reasons(const std::vector<std::string_view>& reasons) {
  // A Python list of str, as repr prints it.
  std::string list;
  for (std::string_view r : reasons) list += fmt::format("{}'{}'", list.empty() ? "" : ", ", r);
  return "skipping cudagraphs due to [" + list + "]";
}

std::string input_storage_mutation(std::size_t instances) {
  return fmt::format("skipping cudagraphs due to input storage mutation ({} instances)", instances);
}

std::string uncached_allocator() {
  return "skipping cudagraphs due to skipping cudagraphs due to cudagraph capture requires the "
         "caching allocator; current allocator is uncached";
}

std::string dynamic_shape_warning(std::size_t num_cudagraphs) {
  return fmt::format(
      "CUDAGraph supports dynamic shapes by recording a new graph for each distinct input size. "
      "Recording too many CUDAGraphs may lead to extra overhead. We have observed {} distinct "
      "sizes. Please consider the following options for better performance: a) padding inputs "
      "to a few fixed number of shapes; or b) set "
      "torch._inductor.config.triton.cudagraph_skip_dynamic_graphs=True. Set "
      "torch._inductor.config.triton.cudagraph_dynamic_shape_warn_limit=None to silence this "
      "warning.",
      num_cudagraphs);
}

std::string dynamic_shape_rerecord_limit(const std::string& compile_id, std::string_view mode,
                                         std::int64_t limit) {
  return fmt::format(
      "[{}] {} graph hit cudagraph_dynamic_shape_rerecord_limit={}; already-recorded shapes "
      "still replay, new shapes run eager.",
      compile_id, mode, limit);
}

std::string after_shutdown() {
  return "Running CUDAGraph after shutdown";
}

std::string zero_grad_static(const std::string& param_name) {
  return fmt::format(
      "zero_grad(set_to_none=True) would free the grad of '{}', which is marked as a static "
      "address; its pointer must stay the same across optimizer steps (capsim models PR 107853's "
      "proposed rule)",
      param_name);
}

}  // namespace capsim::messages
