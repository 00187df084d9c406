// The table of rules `capsim explain` cites (see explain_rules.hpp), one entry per event kind
// and id or reason.
#include "traces/explain_rules.hpp"

namespace capsim {

namespace {

// Functions are torch/_inductor/cudagraph_trees.py's unless another file is
// named; docs/cudagraph-trees.md has the releases and the details.
const std::vector<ExplainRule> kRules = {
    {"record:no_child", "recorded a CUDA graph",
     "The first call of a function at a point of the tree runs as a warmup; the next call there "
     "records a CUDA graph (CUDAGraphTreeManager.record_function, a new CUDAGraphNode). Static "
     "inputs (parameters, buffers, tensors marked with mark_static_address) are baked in by "
     "address; every other input gets a placeholder that each replay copies into.",
     ""},
    {"record:static_input_idx_mismatch", "re-recorded: a static input moved",
     "A static input's address is baked into the recorded graph. Before replaying, "
     "CUDAGraphNode.check_invariants compares it with the call's "
     "(CheckInvariantStatus.StaticInputIdxMismatch); when it moved, the manager records another "
     "graph for the same function, up to cudagraph_unexpected_rerecord_limit.",
     "Keep the tensor at one address: update it in place (p.data.copy_(new), an in-place "
     "optimizer) instead of rebinding p.data or passing a new tensor. If it really changes every "
     "step, do not mark it static, so that it is copied instead."},
    {"record:cudagraph_managed_idx_mismatch", "re-recorded: an input from an earlier graph moved",
     "An input that was an output of an earlier graph on the same path is read in place, not "
     "copied (cudagraph_managed_idxs). check_invariants found it at another address "
     "(CheckInvariantStatus.CudagraphManagedIdxMismatch), so the manager recorded again.",
     "Pass the earlier graph's output itself (not a view at another offset or a copy), or mark "
     "the step boundary with torch.compiler.cudagraph_mark_step_begin() so that the call starts "
     "a new generation."},
    {"record:expected_dead_indices_before_graph_mismatch",
     "re-recorded: an output expected dead is alive",
     "A recording assumes which earlier outputs of the path are dead when it runs "
     "(expected_dead_indices_before_graph). One of them is still referenced, so replaying would "
     "overwrite it; check_invariants reports ExpectedDeadIndicesBeforeGraphMismatch and the "
     "manager records again.",
     "Drop the references to earlier outputs before the next call (del, or keep a .clone()), in "
     "the same pattern every iteration."},
    {"copy_in", "copied inputs into the graph",
     "Every replay copies each non-static input into the placeholder the graph reads "
     "(CUDAGraphNode.run, copy_inputs_and_remove_from_src): the price of an input that is "
     "neither static nor an output of an earlier graph on the path.",
     "If the tensor keeps its address from call to call (a persistent buffer, grads kept by "
     "zero_grad(set_to_none=False)), mark it with torch._dynamo.mark_static_address(t) and it is "
     "baked in instead; if an earlier compiled graph can produce it, its output is read in place."},
    {"demote", "a moving managed input became a copy",
     "2.15: an input from an earlier graph whose address changed "
     "cudagraph_managed_input_rerecord_limit times on one edge is demoted "
     "(CUDAGraphTreeManager._update_cudagraph_managed_input_rerecord): later recordings copy it "
     "in and stop checking its address.",
     "Nothing is wrong; to avoid the copies, pass the same tensor every time (a preallocated "
     "buffer you write into)."},
    {"skip:S1", "cudagraphs skipped: mutated inputs",
     "A graph that mutates an input that is neither static nor an output of an earlier graph "
     "cannot be replayed safely, so Inductor does not cudagraph it "
     "(check_for_mutation_ignore_cuda_graph_managed_tensor in cudagraph_utils.py); it runs "
     "eagerly.",
     "Mutate only static tensors (mark the buffer with mark_static_address) or move the in-place "
     "update out of the compiled region; with cudagraph_support_input_mutation the managed "
     "inputs are allowed."},
    {"skip:S2", "cudagraphs skipped: a CPU op",
     "A graph with a CPU tensor or op cannot be captured (check_multiple_devices_or_any_cpu_nodes "
     "in cudagraph_utils.py); without graph partitions the whole graph runs eagerly.",
     "Keep the graph on the GPU, or turn on graph partitions (torch._inductor.config."
     "graph_partition) so that only the CPU part runs outside the graph."},
    {"skip:S3", "cudagraphs skipped: more than one device",
     "A graph that uses two CUDA devices is not cudagraphed (check_multiple_devices_or_any_cpu_"
     "nodes).",
     "Compile one function per device."},
    {"skip:S4", "cudagraphs skipped: a failed compile-time test",
     "CompiledFxGraph's cudagraph checks failed (for example a non-Tensor input); the graph runs "
     "eagerly (output_code.py, cudagraph_post_compile).",
     "Pass tensors (or make the value a constant) instead of Python scalars and objects."},
    {"skip:S5", "cudagraphs skipped: dynamic shapes or an unsafe op",
     "With cudagraph_skip_dynamic_graphs a graph with symbolic-shape inputs is not cudagraphed; "
     "an op tagged cudagraph_unsafe is not either (get_placeholder_info / "
     "check_lowering_disable_cudagraph).",
     "Mark the sizes static (torch._dynamo.mark_static, or dynamic=False) or use "
     "cudagraph_capture_sizes; keep unsafe ops outside the compiled region or use graph "
     "partitions."},
    {"skip:S6", "cudagraphs skipped: the caching allocator is off",
     "2.13 on: with PYTORCH_NO_CUDA_MEMORY_CACHING set there is no private pool to record into, "
     "so no graph is cudagraphed.",
     "Unset PYTORCH_NO_CUDA_MEMORY_CACHING."},
    {"skip:S7", "cudagraphs skipped: an input's storage is replaced",
     "2.13 on: a graph that calls set_ on an input (an input storage mutation) is not "
     "cudagraphed (get_input_storage_mutation_info).",
     "Copy into the input (copy_) instead of replacing its storage with set_."},
    {"skip:E5", "cudagraphs given up: the re-record limit",
     "The function re-recorded cudagraph_unexpected_rerecord_limit times "
     "(CUDAGraphTreeManager.exceed_rerecord_limit); from now on it runs eagerly on this path, "
     "and the message names the last reason.",
     "Fix what makes it re-record (the reason above: a moving static input, a moving managed "
     "input, an output kept alive); raising the limit only delays this."},
    {"skip:E9", "cudagraphs given up: a managed input keeps moving",
     "2.15 with cudagraph_managed_input_rerecord_action=\"skip\": an input from an earlier graph "
     "moved cudagraph_managed_input_rerecord_limit times on one edge, so the edge runs eagerly.",
     "Use the default action \"copy\" (demote the input to a copy), or pass the same tensor "
     "every time."},
    {"eager:mutated_inputs", "ran eagerly: mutated inputs",
     "The mutation gate found a mutated input that is not static "
     "(CUDAGraphTreeManager.run_eager via the mutation check); this call runs eagerly.",
     "As for S1: mutate static tensors only, or move the in-place update out of the graph."},
    {"eager:rerecord_limit", "ran eagerly: past the re-record limit",
     "After E5 the function runs eagerly on this path (fall back to eager after too many "
     "re-records).",
     "Fix the cause of the re-records (see E5)."},
    {"eager:compile_time_skip", "ran eagerly: cudagraphs skipped at compile time",
     "Inductor decided at compile time not to cudagraph this graph (the skip above says why); "
     "every call runs the compiled code without a CUDA graph.",
     "See the skip's fix."},
    {"eager:silent_skip", "ran eagerly: cudagraphs dropped without a log",
     "With graph partitions on, a failed compile-time test drops cudagraphs without a message "
     "(cudagraph_partition_post_compile).",
     "Pass tensors instead of Python values, or turn graph partitions off to see the skip."},
    {"eager:managed_input_rerecord_limit", "ran eagerly: the managed-input limit (E9)",
     "2.15, action \"skip\": this edge reached cudagraph_managed_input_rerecord_limit.", "See E9."},
    {"eager:no_partitions", "ran eagerly: no partition to cudagraph",
     "Graph partitions left nothing to cudagraph (every op is on the CPU or unsafe).",
     "Move the work to the GPU or out of the unsafe ops."},
    {"eager:capture_size", "ran directly: not a capture size",
     "With cudagraph_capture_sizes set, only those sizes are cudagraphed; this int key is not "
     "one of them.",
     "Add the size to cudagraph_capture_sizes, or pad to one."},
    {"eager:dynamic_shape_rerecord_limit", "ran eagerly: too many sizes",
     "2.15: a new int key past cudagraph_dynamic_shape_rerecord_limit runs eagerly.",
     "Bucket the sizes (pad), or use cudagraph_capture_sizes."},
    {"eager:not_lowerable", "ran in the FX interpreter",
     "capsim cannot lower a node of this compiled-autograd capture to a tree function, so its "
     "interpreter ran the graph (capsim's limit, not PyTorch's).",
     ""},
    {"error:E1", "error: an output was overwritten",
     "A tensor returned by a cudagraphed function lives in the tree's pool; a later replay or a "
     "new generation reuses that memory (dealloc_current_path_weakrefs), and touching the old "
     "output raises.",
     "Clone what you keep across calls (out = f(x).clone()) before the next compiled call; "
     "cudagraph_mark_step_begin() only marks where a generation starts and does not keep an "
     "output alive (pytorch/pytorch#170604, although the message suggests it). From 2.14, "
     "cudagraph_trees_generation_cloning='user_visible' clones live outputs for you."},
    {"error:E3", "error: an output that died during recording is alive",
     "The recording assumed an output was dead; at replay it is alive (check_invariants), which "
     "the manager refuses.",
     "Keep the same references alive on every iteration as during the recording."},
    {"error:E4", "error: a static input moved (error mode)",
     "With cudagraph_unexpected_rerecord_limit reached in error mode (or "
     "triton.cudagraph_trees_error_on_static_pointer_change), a changed static pointer raises "
     "instead of re-recording.",
     "Keep the static tensor at one address (update it in place)."},
    {"error:E6", "error: the pool check found missing blocks",
     "check_memory_pool: a storage the manager tracks as live is not in the pool.", ""},
    {"error:E7", "error: untracked tensors in the pool",
     "check_memory_pool: live storages in the cudagraph pool that no output accounts for.", ""},
    {"error:E8", "error: a skip under cudagraph_or_error",
     "With cudagraph_or_error every cudagraph skip raises a RuntimeError with the skip's text.",
     "Fix the skip, or turn cudagraph_or_error off."},
    {"error:Z1", "error: zero_grad of a static grad (PR 107853's rule)",
     "capsim's model of PR 107853's proposed rule (never shipped): zero_grad(set_to_none=True) "
     "would free a grad marked static.",
     "Use zero_grad(set_to_none=False) for grads marked static."},
    {"error:A1", "error: the tree manager was used after shutdown", "", ""},
    {"error:G1", "error: backward of a tensor that needs no grad",
     "torch.autograd.backward on a tensor with no grad_fn that does not require grad.", ""},
    {"error:G2", "error: an implicit grad for a non-scalar",
     "backward() without a gradient works only for a scalar root.",
     "Pass gradient=, or reduce to a scalar."},
    {"error:G3", "error: backward through freed nodes",
     "A second backward through nodes whose saved tensors an earlier backward freed.",
     "backward(retain_graph=True) on the first backward."},
    {"error:G4", "error: a grad of another shape than the root", "", ""},
    {"warning:W1", "warning: pending backwards",
     "A forward's backward was never called before a new generation started; the manager warns "
     "and its memory stays reserved (check_warn_on_unable_to_start_executing).",
     "Call the backward, or torch.compiler.cudagraph_mark_step_begin() if the forward is "
     "inference-only (or run it under torch.no_grad()). When the previous output is the next "
     "input (a recurrent call), both make the next call touch a freed output (E1): clone the "
     "output before feeding it back instead (pytorch/pytorch#138949)."},
    {"warning:W2", "warning: many distinct sizes",
     "More distinct int keys than cudagraph_dynamic_shape_warn_limit: each size records its own "
     "graph.",
     "Bucket the sizes or use cudagraph_capture_sizes."},
    {"warning:W3", "warning: the dynamic-shape re-record limit",
     "2.15: cudagraph_dynamic_shape_rerecord_limit reached; new sizes run eagerly.",
     "Bucket the sizes."},
    {"compile:guard_failure", "recompiled: a guard failed",
     "A tensor marked with mark_static_address(guard=True) (or an optimizer's param or state) "
     "moved, so Dynamo's ID_MATCH guard failed and it recompiled: a new FunctionId that warms up "
     "and records again.",
     "Update the tensor in place instead of rebinding it."},
    {"compile:grad_none_guard", "recompiled: another set of grads",
     "The compiled optimizer guards on each p.grad is None "
     "(OptimizerVariable.map_sources_and_install_guards in torch/_dynamo/variables/"
     "optimizer.py); a step with another set of grads is traced again.",
     "Give every param a grad each step (zero_grad(set_to_none=False)), or accept one trace per "
     "set."},
    {"compile:optimizer_state_guard", "recompiled: the optimizer's state was made",
     "SGD with momentum makes its momentum buffers inside the first step's graph; Dynamo's "
     "guard on the state's length fails at the second step, which is traced again with the "
     "buffers as static inputs (torch/optim/sgd.py _init_group).",
     "Nothing to fix: it happens once per optimizer."},
    {"compile:grads_not_static", "compiled the optimizer step; its grads are not static",
     "When Dynamo traces a step, the compiled optimizer marks every param and state tensor with "
     "mark_static_address, but not the grads, which come from the backward "
     "(OptimizerVariable.map_sources_and_install_guards and wrap_tensor in "
     "torch/_dynamo/variables/optimizer.py; it logs the same as a perf hint). Inductor passes "
     "only the marked inputs on as static_input_idxs, so cudagraph trees copy each grad into its "
     "placeholder before every replay.",
     "If the grads keep their storage from step to step (zero_grad(set_to_none=False)), mark "
     "each one after the first backward with torch._dynamo.mark_static_address(p.grad); on the "
     "CPU nothing is copied and nothing needs fixing."},
    {"ca_cache_miss:new_autograd_node", "compiled autograd: a new graph",
     "Compiled autograd keys its cache on each node's class and fields "
     "(torch/csrc/dynamo/python_compiled_autograd.cpp, CacheNode::lookup); a node it has not "
     "seen at this position means a new capture.",
     "If the node is a torch.autograd.Function whose class is made anew each step (defined "
     "inside the loop; or, in pytorch/pytorch#155105, re-created by Dynamo around a compiled "
     "call, fixed by #185487 and #195504), make one class for the whole run; otherwise keep the "
     "model's structure the same every step."},
    {"ca_cache_miss:changed_shapes", "compiled autograd: changed sizes",
     "A size compiled autograd held static changed; the size becomes dynamic and the graph is "
     "captured again (the 2.7+ message lists the sizes).",
     "Expected once per size that varies; with dynamic=False every new size recaptures."},
    {"ca_graph:captured", "compiled autograd captured a graph",
     "A backward whose nodes and keys the cache had not seen: compiled autograd traced it "
     "again (torch/_dynamo/compiled_autograd.py, AutogradCompilerInstance.begin_capture).",
     "The message says what differed; see the cache-miss fixes."},
};

}  // namespace

const std::vector<ExplainRule>& explain_rules() {
  return kRules;
}

const ExplainRule* find_explain_rule(std::string_view key) {
  for (const ExplainRule& r : kRules) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

}  // namespace capsim
