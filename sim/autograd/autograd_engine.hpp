// AutogradEngine: eager autograd on the simulated device, the ground truth
// for compiled autograd (docs/compiled-autograd.md, "The pieces" and the node
// kinds of "Phase B").
//
// The forward API computes float32 values with the shared kernels and records
// the backward graph as PyTorch's autograd would: a leaf that requires grad
// gets an AccumulateGrad node, every differentiable op a functional node
// ("MulBackward0", ...) with its saved tensors and sizes, the InputMetadata of
// the grad it receives and one next edge per forward input (an empty slot for
// an input that needs no grad). An in-place op on a view rebases the base onto
// a CopySlices node wrapping the op's node; copy_ records CopyBackwards.
// Custom functions record PyNode or CppNode; compiled_mul records an AOT
// region's CompiledFunctionBackward (autograd_aot.cpp).
//
// backward(root, grad) runs the reachable nodes in the graph's deterministic
// topological order, sums fan-in grads in execution order (InputBuffer's
// torch.add, earlier producer first), runs validate_outputs after every node
// but the AOT backward (sum_to for a broadcast grad, the error texts of eager
// validate_outputs, engine.cpp, otherwise) and accumulates into the leaves'
// .grad (steal when None and nobody else holds the grad, add otherwise).
//
// Hooks and custom functions' backward bodies are user code: the engine keeps
// them in side tables keyed by node id, and records their kinds on the nodes.
// The graph itself is kept as mutable node records (hooks are added after a
// node exists) and built into an AutogradGraph on demand, with the same ids.
//
// autograd_backward(root, options) is loss.backward(gradient, retain_graph)
// with PyTorch's defaults: no gradient means ones, for a scalar root only, and
// without retain_graph each node that saved state gives it up as it runs, so a
// second backward through it fails with ERR_BACKWARD_TWICE's text.
//
// Differences from PyTorch, on purpose: backward(root, grad) always retains
// the graph, and a released node's saved tensors stay allocated (the engine
// owns every tensor it made until it is destroyed; only their use is
// refused); after an in-place op on a view, the
// view's new grad_fn (AsStridedBackward0) is made at once, not lazily; other
// views of the same base keep their old grad_fn; there are no version counters.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/autograd_graph.hpp"
#include "model/caching_allocator.hpp"
#include "model/cpu_backend.hpp"
#include "model/device_memory.hpp"
#include "model/step_program.hpp"
#include "model/tensor_store.hpp"

namespace capsim {

// The device state the engine works on; the caller owns it.
struct AutogradDevice {
  DeviceMemory& memory;
  TensorStore& store;
  CpuBackend& backend;
  PoolId pool = kDefaultPool;
};

// A device owned in one piece, for standalone use (tests, oracles).
struct OwnedAutogradDevice {
  DeviceMemory memory;
  CachingAllocator allocator{memory};
  TensorStore store{allocator};
  CpuBackend backend{memory};
  AutogradDevice device() { return AutogradDevice{memory, store, backend}; }
};

// The edge a tensor's grad flows into: output `output_nr` of node `node`.
struct GradFn {
  AutogradNodeId node = 0;
  std::uint32_t output_nr = 0;
  friend bool operator==(const GradFn&, const GradFn&) = default;
};

// A tensor with its autograd metadata, as a snapshot: an in-place op on a
// view changes the base's grad_fn, so ask `variable(tensor)` for the current
// one. Leaves and tensors that need no grad have no grad_fn.
struct Variable {
  TensorId tensor;
  std::optional<GradFn> grad_fn;
  bool requires_grad = false;
};

// X(enumerator, name)
#define CAPSIM_CUSTOM_FUNCTION_KINDS(X)                \
  X(kPython, "python") /* autograd.Function: PyNode */ \
  X(kCpp, "cpp")       /* torch::autograd::Function: CppNode */

enum class CustomFunctionKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_CUSTOM_FUNCTION_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

// A user autograd.Function with a fixed formula: forward returns
// factor * (x0 + x1 + ...) (all inputs of one shape), backward returns
// grad * factor for every input. `bad_grad_sizes` models a buggy backward
// (PyTorch's test_invalid_gradients): it returns tensors of these sizes,
// filled with `factor`, which validate_outputs then reduces or rejects.
struct CustomFunction {
  std::string name;  // "MyFn": the node is "MyFnBackward" or "CppNode<MyFn>"
  CustomFunctionKind kind = CustomFunctionKind::kPython;
  bool traceable = true;  // CppNode only
  float factor = 2.0f;
  std::optional<Dims> bad_grad_sizes;
};

// What backward() leaves behind besides the leaves' .grad.
struct BackwardResult {
  std::vector<AutogradNodeId> executed;  // the engine's nodes run, in order
  std::size_t node_calls = 0;            // nodes run, the backward's own GraphRoot too
};

class AutogradEngine {
 public:
  explicit AutogradEngine(AutogradDevice device) : device_(device) {}
  ~AutogradEngine();
  AutogradEngine(const AutogradEngine&) = delete;
  AutogradEngine& operator=(const AutogradEngine&) = delete;

  // --- Tensors ---------------------------------------------------------------
  // A fresh contiguous tensor holding `values` (row-major, numel(sizes) of them).
  // A leaf that requires grad gets its AccumulateGrad node now.
  Result<Variable> leaf(const Dims& sizes, std::span<const float> values,
                        bool requires_grad = true);
  Result<Variable> constant(const Dims& sizes, std::span<const float> values) {
    return leaf(sizes, values, /*requires_grad=*/false);
  }
  // The current autograd metadata of a tensor the engine made.
  Result<Variable> variable(TensorId tensor) const;
  // The values of a tensor, row-major over its sizes (strides honoured).
  Result<std::vector<float>> read(TensorId tensor) const;
  // A leaf's .grad, or nullopt while it is None.
  std::optional<TensorId> grad(const Variable& leaf) const { return grad_of(leaf.tensor); }
  std::optional<TensorId> grad_of(TensorId leaf) const;
  // The leaves whose .grad is set, in tensor id order.
  std::vector<TensorId> leaves_with_grad() const;

  // --- Tensors the caller owns (autograd_adopt.cpp) ---------------------------
  // A World keeps its tensors alive by reference counts (sim/core/tensor_refs.hpp),
  // not by the engine's release in bulk. These calls lend its tensors to the
  // engine and hand the engine's results over to it.
  //
  // Makes `tensor`, a live tensor of the store that the engine did not make,
  // known to the engine; a leaf that requires grad gets its AccumulateGrad
  // now. For a tensor already known: its variable, unchanged (asking for
  // requires_grad on a known tensor that has none is an error).
  Result<Variable> adopt(TensorId tensor, bool requires_grad);
  // The engine stops owning `tensor` (one it made): the caller releases it.
  void disown(TensorId tensor);
  const TensorStore& store() const { return device_.store; }
  // Every tensor the engine owns now, oldest first.
  std::span<const TensorId> owned() const { return owned_; }
  // Sets a leaf's .grad before a backward (none: None). The engine does not
  // own a grad set this way.
  void set_grad(TensorId leaf, std::optional<TensorId> grad);
  // `leaf.data = other`: the same Variable over a new tensor, so the leaf's
  // AccumulateGrad (and its .grad) now belong to `now`.
  Status replace_leaf(TensorId old, TensorId now);
  // release_variables() on `nodes`, as a backward without retain_graph does
  // after it ran them (compiled autograd does it after the compiled call).
  void release_saved_state(std::span<const AutogradNodeId> nodes);

  // --- Differentiable ops (broadcasting where PyTorch broadcasts) -------------
  Result<Variable> mul(const Variable& a, const Variable& b);
  Result<Variable> add(const Variable& a, const Variable& b);
  Result<Variable> sum(const Variable& a);  // over all dims, to a 0-d tensor
  Result<Variable> mm(const Variable& a, const Variable& b);
  Result<Variable> relu(const Variable& a);
  Result<Variable> clone(const Variable& a);
  Result<Variable> expand(const Variable& a, const Dims& sizes);                    // a view
  Result<Variable> slice(const Variable& a, std::int64_t start, std::int64_t end);  // dim 0 view
  // Tensor.to(dtype): a copy with the new dtype (values stay float32), whose
  // grad_fn is ToCopyBackward0, as in PyTorch.
  Result<Variable> to(const Variable& a, DType dtype);
  // A fresh tensor that needs no grad (torch.empty(sizes, dtype=...)), zeroed.
  Result<Variable> zeros(const Dims& sizes, DType dtype = DType::kFloat32);

  // --- In-place ops: return `self` with its new grad_fn ------------------------
  // self.copy_(src): CopyBackwards, wrapped in CopySlices when self is a view.
  Result<Variable> copy_(const Variable& self, const Variable& src);
  // self.mul_(other): MulBackward0, wrapped in CopySlices when self is a view.
  Result<Variable> mul_(const Variable& self, const Variable& other);

  // --- Custom functions --------------------------------------------------------
  Result<Variable> apply(const CustomFunction& fn, std::span<const Variable> inputs);

  // --- An AOT-compiled region ------------------------------------------------
  // A torch.compile'd out = a * b (one shape) whose grad_fn is
  // CompiledFunctionBackward: the copied AOT graph is mul's backward, and no
  // validate_outputs follows it. With `subclass_output` the output is a
  // TwoTensor-like subclass (meta.is_subclass, two inner tensors of equal
  // values; ops downstream read the first) and the node counts it in
  // subclass_outputs, for the make_subclass epilogue.
  Result<Variable> compiled_mul(const Variable& a, const Variable& b, bool subclass_output);
  // The two inner tensors of a subclass output.
  Result<std::pair<TensorId, TensorId>> inner_tensors(TensorId subclass) const;

  // --- Hooks (each multiplies what it sees by `scale`) -----------------------
  // tensor.register_hook: on the node the tensor's grad flows into.
  Status register_tensor_hook(const Variable& tensor, float scale);
  // grad_fn.register_prehook / register_hook: on all of a node's inputs or outputs.
  Status register_prehook(AutogradNodeId node, float scale);
  Status register_posthook(AutogradNodeId node, float scale);
  // leaf.register_post_accumulate_grad_hook: scales the leaf's .grad in place.
  Status register_post_accumulate_grad_hook(const Variable& leaf, float scale);

  // --- Backward ----------------------------------------------------------------
  // root.backward(grad_output, retain_graph=True); grad_output is required,
  // as for a non-scalar.
  Result<BackwardResult> backward(const Variable& root, const Variable& grad_output);
  // torch.autograd.backward(root, grad_tensors, retain_graph), defaults and
  // errors as PyTorch's (torch/autograd/__init__.py: _make_grads; the
  // engine's SavedVariable::unpack for a graph already freed).
  struct BackwardOptions {
    std::optional<Variable> grad_output;  // None: ones, for a scalar root only
    bool retain_graph = false;
  };
  Result<BackwardResult> autograd_backward(const Variable& root, const BackwardOptions& options);
  // Whether a backward without retain_graph has freed node `id`'s saved state.
  bool released(AutogradNodeId id) const { return released_.count(id) != 0; }

  // --- The recorded graph ------------------------------------------------------
  std::size_t num_nodes() const { return records_.size(); }
  const AutogradNode& node(AutogradNodeId id) const;
  // The recorded graph, ids unchanged.
  Result<AutogradGraph> graph() const;
  // The graph a backward from `root` runs: the recorded nodes it reaches,
  // in recording order, plus a GraphRoot (the last id) with one edge to the
  // root's gradient edge. Its ids are its own, so that a program's hundredth
  // backward costs what its first did: `engine_ids` maps each one but the
  // GraphRoot's to the engine's (hooks, custom functions and released state
  // are the engine's, by its ids).
  struct BackwardGraph {
    AutogradGraph graph;
    AutogradNodeId root = 0;
    std::vector<AutogradNodeId> engine_ids;  // per graph id below `root`
    AutogradNodeId engine_id(AutogradNodeId id) const {
      CAPSIM_CHECK(id < engine_ids.size(), "the GraphRoot is the backward's own");
      return engine_ids[id];
    }
  };
  Result<BackwardGraph> backward_graph(const Variable& root) const;
  // The edge a tensor's grad flows into: its grad_fn, or its AccumulateGrad.
  std::optional<GradFn> gradient_edge(TensorId tensor) const;
  // The custom function whose backward node `id` is, or null; and the scale
  // of the `index`-th hook registered on node `id`, if it has one. What a
  // captured graph's lifted hooks and custom-function calls resolve to
  // (sim/compiled_autograd/compiled_backward.cpp), by the engine's node ids.
  const CustomFunction* custom_function(AutogradNodeId id) const;
  std::optional<float> hook_scale(AutogradNodeId id, std::size_t index) const;
  // From now on every kernel the engine launches is also appended to
  // `program` (null: to none), the lowering of a captured graph to a
  // StepProgram; returns the program it appended to before.
  StepProgram* record_launches_into(StepProgram* program) {
    return std::exchange(recording_, program);
  }

 private:
  struct Record {
    AutogradNode node;
    std::vector<std::optional<NextEdge>> next;  // one slot per output
  };
  struct Meta {  // autograd metadata of one tensor
    std::optional<GradFn> grad_fn;
    bool requires_grad = false;
    std::optional<AutogradNodeId> accumulate;  // leaves that require grad
    std::optional<TensorId> view_base;         // differentiable views
    bool expanded = false;                     // written elements may alias
  };
  struct Hook {
    AutogradHookKind kind;
    std::uint32_t input_nr = 0;  // kTensorPre only
    float scale = 1.0f;
  };
  // The engine's own backward (autograd_backward.cpp) and the formulas and
  // kernels it shares with the interpreter of captured graphs.
  friend class BackwardOps;
  friend class BackwardRun;

  // Tensors and kernels.
  Result<TensorId> fresh(const Dims& sizes, DType dtype = DType::kFloat32);
  Result<TensorId> view_of(TensorId base, const TensorMeta& meta);
  Result<Tensor> tensor(TensorId id) const;
  Status launch(Result<KernelLaunch> launch);
  Status fill(TensorId out, float value);
  Status copy_into(TensorId out, TensorId in);                       // in broadcast to out
  Result<TensorId> binary(KernelKind kind, TensorId a, TensorId b);  // broadcasting
  Result<TensorId> sum_to(TensorId in, const Dims& sizes);
  Result<TensorId> transposed(TensorId t);
  Result<TensorId> matmul(TensorId a, TensorId b);
  Result<TensorId> scaled(TensorId in, float factor);

  // Graph recording.
  // A leaf that requires grad: its AccumulateGrad node, in its metadata.
  Status add_accumulate_grad(TensorId leaf);
  Result<AutogradNodeId> add_record(AutogradNode node, std::span<const std::optional<GradFn>> next);
  // One next edge per input: where each input's grad flows (none if it needs none).
  std::vector<std::optional<GradFn>> gradient_edges(std::span<const Variable> inputs) const;
  Result<Variable> finish(TensorId out, AutogradNode node, std::span<const Variable> inputs);
  Result<Variable> rebase(const Variable& self, AutogradNode node,
                          std::span<const Variable> inputs);
  InputMetadata metadata_of(TensorId tensor) const;
  // The graph of the recorded nodes `ids` (sorted, closed under their edges),
  // renumbered 0.. in that order, plus a GraphRoot to `root_edge` if given.
  Result<AutogradGraph> build(std::span<const AutogradNodeId> ids,
                              std::optional<GradFn> root_edge) const;

  AutogradDevice device_;
  std::vector<Record> records_;
  std::map<TensorId, Meta> meta_;
  std::map<TensorId, TensorId> grads_;  // leaf -> .grad
  std::map<AutogradNodeId, std::vector<Hook>> hooks_;
  std::map<AutogradNodeId, CustomFunction> functions_;
  std::map<TensorId, std::pair<TensorId, TensorId>> subclass_inner_;
  std::vector<TensorId> owned_;        // released by the destructor, in order
  std::set<AutogradNodeId> released_;  // saved state freed (no retain_graph)
  StepProgram* recording_ = nullptr;   // the lowering: launches are also appended here
};

}  // namespace capsim
