// AutogradGraph: the backward graph that autograd builds during a forward.
//
// Nodes are PyTorch's autograd Node kinds, reduced to the eight that matter for
// compiled autograd (docs/compiled-autograd.md, "Phase B"): GraphRoot, generic
// codegen'd functional nodes (MulBackward0, SumBackward0, ...), AccumulateGrad,
// CopyBackwards, CopySlices (wrapping an inner functional node), CppNode,
// PyNode and the AOT backward (CompiledFunctionBackward). ValidateOutputs and
// InputBuffer fan-in are not nodes: every non-AOT node validates its outputs,
// and fan-in is two edges into one input. Hooks hang off nodes.
//
// Each node has numbered outputs (its `next_edges`, at most one edge each, in
// output order) and numbered inputs (the grads it receives, each with the
// InputMetadata that validate_outputs checks). Node ids are dense, stable and
// assigned in insertion order. The graph lives in a Boost.Graph
// adjacency_list (bidirectional, for in_edges) behind a pointer, so that only
// autograd_graph.cpp pays Boost's compile time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/fx_graph.hpp"
#include "model/result.hpp"
#include "model/tensor.hpp"

namespace capsim {

// X(enumerator, name)
#define CAPSIM_AUTOGRAD_NODE_KINDS(X)                                    \
  X(kGraphRoot, "GraphRoot")                                             \
  X(kFunctional, "functional") /* a codegen'd node: MulBackward0, ... */ \
  X(kAccumulateGrad, "AccumulateGrad")                                   \
  X(kCopyBackwards, "CopyBackwards")                                     \
  X(kCopySlices, "CopySlices")                                           \
  X(kCppNode, "CppNode") /* a user torch::autograd::Function */          \
  X(kPyNode, "PyNode")   /* a Python autograd.Function, lifted */        \
  X(kAotBackward, "CompiledFunctionBackward")

enum class AutogradNodeKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_AUTOGRAD_NODE_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view autograd_node_kind_name(AutogradNodeKind kind);

// X(enumerator, name)
#define CAPSIM_AUTOGRAD_HOOK_KINDS(X) \
  X(kTensorPre, "tensor_pre_hook")    \
  X(kPre, "pre_hook")                 \
  X(kPost, "post_hook")               \
  X(kPostAccGrad, "post_acc_grad_hook")

enum class AutogradHookKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_AUTOGRAD_HOOK_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view autograd_hook_kind_name(AutogradHookKind kind);

// What validate_outputs checks of the grad arriving at one input: options
// (dtype, device, layout), shape and whether the forward tensor was a subclass.
struct InputMetadata {
  TensorMeta meta;
  friend bool operator==(const InputMetadata&, const InputMetadata&) = default;
};

// A view's or a base's geometry, as CopySlices saves it.
struct TensorGeometry {
  Dims sizes;
  Dims strides;
  std::int64_t storage_offset = 0;
  friend bool operator==(const TensorGeometry&, const TensorGeometry&) = default;
};

using AutogradNodeId = std::uint32_t;

// One field of a node as its `compiled_args` collects it. PyTorch collects a
// codegen'd node's fields in the order its C++ struct declares them
// (torch/csrc/autograd/generated/Functions.h) and the captured call passes them
// in that order, after the grads and needs_input_grad. A recorder writes the
// list (`saved_values`, docs/trace-format.md §5.1); capsim's own nodes have
// none and lay their fields out as saved tensors, then sizes.
struct CollectedField {
  enum class Kind : std::uint8_t {
    kTensor,      // a SavedVariable: lifted into `inputs`
    kNone,        // a SavedVariable that holds nothing (None in the call)
    kTensorList,  // a std::vector<SavedVariable>; `tensors` may hold nones
    kSymInt,      // one size, lifted into `sizes` (`sizes` holds it)
    kSymInts,     // a list of sizes, lifted into `sizes`
    // A list of size lists (a TensorList argument's sizes, one list per
    // tensor: CatBackward0's tensors_args_sizes_symint): `sizes` holds them
    // flat, `list_lengths` how many each list has.
    kSymIntLists,
    kConstant,  // a constant of the call, `text` in the node-line form
    kUnknown,   // a field the recorder could not read; `text` names it
  };
  Kind kind = Kind::kNone;
  // kTensor saved under saved_tensors_hooks: lifted into `packed_data` (not
  // `inputs`, and not among the node's saved_tensors), its unpack hook into
  // `hooks`.
  bool packed = false;
  std::vector<std::optional<TensorId>> tensors;
  std::vector<std::int64_t> sizes;
  std::vector<std::uint32_t> list_lengths;  // kSymIntLists
  std::string text;
};

// The backward graph of a compiled region (an AOT backward), as a recorder
// took it from the region's `bw_module`: compiled autograd copies it into its
// own graph between the prologue and the epilogue. Node references number
// the graph's placeholders 0..placeholders-1, then its nodes in order.
struct AotBackwardBody {
  std::uint32_t placeholders = 0;
  std::uint32_t symints = 0;  // leading placeholders replaced by capsim's sizes
  std::vector<FxNode> nodes;  // call_function nodes; names unused
  std::vector<FxArg> outputs;
  // Per grad of the node: -1 for a subclass rebuilt by make_subclass over
  // every output, else the output it is. Absent: the outputs are the grads.
  std::optional<std::vector<std::int64_t>> epilogue;
};

struct AutogradNode {
  AutogradNodeKind kind = AutogradNodeKind::kFunctional;
  std::string name;  // "MulBackward0", "CopySlices", "CppNode<MyFn>", ...
  // One entry per input (grad received); its size is the number of inputs.
  std::vector<InputMetadata> inputs;
  std::uint32_t num_outputs = 0;  // next_edges slots
  std::vector<TensorId> saved_tensors;
  std::vector<std::int64_t> saved_sizes;  // saved SymInt lists: size inputs
  // Next edges per forward argument (ImportedNode): needs_input_grad has one
  // entry per range; empty: one per edge.
  std::vector<std::uint32_t> input_ranges;
  std::vector<AutogradHookKind> hooks;  // in registration order
  // Per hook: the input a tensor pre-hook reads (its tensor's output_nr); 0
  // for the other kinds. Empty means all 0.
  std::vector<std::uint32_t> hook_inputs;
  // kCopySlices: the wrapped functional node's name, the saved geometries and
  // whether the view was made by a view_fn (which compiled autograd rejects).
  std::string inner_name;
  TensorGeometry base;
  TensorGeometry view;
  bool has_view_fn = false;
  // kCppNode: whether the user's backward may be traced.
  bool traceable = true;
  // kAotBackward: outputs that are tensor subclasses (TwoTensor-like), rebuilt
  // by make_subclass from two inner tensors each.
  std::uint32_t subclass_outputs = 0;
  // kAccumulateGrad: the leaf whose .grad it accumulates into, and whether
  // that .grad is defined when the backward starts (compiled autograd's key
  // holds it: a defined grad is another specialization than None).
  std::optional<TensorId> variable;
  bool variable_grad_defined = false;
  // Saved Scalars: a custom function's constants (CppNode saved_data), lifted
  // as scalar inputs.
  std::vector<double> saved_scalars;
  // The fields compiled_args collects, in PyTorch's order, when a recorder
  // wrote them; their tensors are `saved_tensors` and their sizes
  // `saved_sizes`, in the same order.
  std::optional<std::vector<CollectedField>> collected_fields;
  // kPyNode, kAotBackward: which Function class (an ordinal a recorder
  // assigns in order of first appearance), when a recorder wrote it.
  std::optional<std::uint32_t> function_class;
  // kAotBackward: the region's backward graph, when a recorder wrote it.
  std::optional<AotBackwardBody> aot_body;
};

// The edge leaving output `output_nr` of a node, into input `input_nr` of
// `target`.
struct NextEdge {
  AutogradNodeId target = 0;
  std::uint32_t input_nr = 0;
  friend bool operator==(const NextEdge&, const NextEdge&) = default;
};

// An edge arriving at a node: from output `output_nr` of `source`.
struct InEdge {
  AutogradNodeId source = 0;
  std::uint32_t output_nr = 0;
  std::uint32_t input_nr = 0;
  friend bool operator==(const InEdge&, const InEdge&) = default;
};

// The limit on nodes in one graph.
inline constexpr std::size_t kMaxAutogradNodes = std::size_t{1} << 24;

class AutogradGraph {
 public:
  AutogradGraph();
  ~AutogradGraph();
  AutogradGraph(AutogradGraph&&) noexcept;
  AutogradGraph& operator=(AutogradGraph&&) noexcept;

  Result<AutogradNodeId> add_node(AutogradNode node);
  // Errors name both ends: a missing node, an output or input_nr out of range,
  // or an output slot that already has its edge.
  Status add_edge(AutogradNodeId from, std::uint32_t output_nr, AutogradNodeId to,
                  std::uint32_t input_nr);

  std::size_t num_nodes() const;
  const AutogradNode& node(AutogradNodeId id) const;
  // One slot per output, in output order; an empty slot is an invalid edge.
  std::vector<std::optional<NextEdge>> next_edges(AutogradNodeId id) const;
  // Edges into `id`, in the order they were added.
  std::vector<InEdge> in_edges(AutogradNodeId id) const;

  // A backward graph must be a DAG: the error names an edge of a cycle.
  Status check_acyclic() const;
  // Every node once, each after all nodes with an edge into it; ties broken
  // by node id, so the order is deterministic. Fails on a cycle.
  Result<std::vector<AutogradNodeId>> topological_order() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "node 3 (MulBackward0)": how errors and printers name a node.
std::string describe_node(const AutogradGraph& graph, AutogradNodeId id);

}  // namespace capsim
