// RecordedGraph: an autograd graph as a recorder of real PyTorch walked it.
//
// recorder/ runs a real program, walks `grad_fn` / `next_functions` from
// the loss and writes what it saw: every node's class name and kind, the
// InputMetadata of its inputs (`_input_metadata`), its next edges, the tensors
// and sizes it saved (`_saved_*`), its hooks, and for AccumulateGrad the leaf.
// These structs are that walk as data, the payload of the `autograd_graph`
// action (docs/trace-format.md §5). A World rebuilds an AutogradGraph from it
// (sim/compiled_autograd/imported_autograd.hpp), so compiled autograd's Phase A, cache and
// capture run on the graph PyTorch itself built, and `compiled_backward` can
// predict what PyTorch's compiled autograd captured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/autograd_graph.hpp"

namespace capsim {

// A tensor a node saves or an AccumulateGrad accumulates into. Only its
// metadata matters to a capture: values are never read.
struct ImportedTensor {
  std::string name;
  Dims sizes;
  DType dtype = DType::kFloat32;
  bool requires_grad = false;
  // A leaf's .grad is defined when the backward starts (AccumulateGrad's
  // specialization key holds it).
  bool grad_defined = false;
  bool subclass = false;  // a tensor subclass (TwoTensor), written by its outer metadata
};

// The InputMetadata of one node input: the shape and dtype of the grad it
// expects.
struct ImportedInput {
  Dims sizes;
  DType dtype = DType::kFloat32;
  bool subclass = false;  // InputMetadata::is_tensor_subclass
  friend bool operator==(const ImportedInput&, const ImportedInput&) = default;
};

// One entry of a node's `saved_values`: a CollectedField whose tensors are
// named as in the graph's `tensors` table.
struct ImportedField {
  CollectedField::Kind kind = CollectedField::Kind::kNone;
  bool packed = false;
  std::vector<std::optional<std::string>> tensors;
  std::vector<std::int64_t> sizes;
  std::vector<std::uint32_t> list_lengths;  // kSymIntLists
  std::string text;
};

struct ImportedNode {
  std::string name;  // type(grad_fn).__name__: "MulBackward0", "AccumulateGrad", ...
  AutogradNodeKind kind = AutogradNodeKind::kFunctional;
  std::vector<ImportedInput> inputs;
  std::vector<std::optional<NextEdge>> next;  // one slot per output; none: no grad flows
  // Next edges per forward argument, where a TensorList argument spans
  // several (CatBackward0: one range of all its edges); empty: one each.
  std::vector<std::uint32_t> input_ranges;
  std::vector<std::string> saved;  // tensor names
  std::vector<std::int64_t> saved_sizes;
  std::vector<float> saved_scalars;
  std::vector<AutogradHookKind> hooks;  // in registration order
  std::string inner;                    // kCopySlices: the wrapped node's name
  // kCopySlices: the base and view geometries, when the program stated them.
  std::optional<TensorGeometry> base;
  std::optional<TensorGeometry> view;
  std::string variable;  // kAccumulateGrad: the leaf's tensor name
  // kPyNode, kAotBackward: the Function class's ordinal in the recording.
  std::optional<std::uint32_t> function;
  // compiled_args' fields in order (codegen'd nodes and CopyBackwards); absent
  // in traces recorded before they were written.
  std::optional<std::vector<ImportedField>> saved_values;
  // kAotBackward: the region's backward graph (its references checked).
  std::optional<AotBackwardBody> aot_backward;
};

// `autograd_graph`: one walked graph, named so that `compiled_backward` can
// refer to it. `root` is the node the loss's grad flows into (loss.grad_fn,
// input 0); the World adds the GraphRoot itself, as autograd does.
struct DefineAutogradGraph {
  std::string name;
  std::vector<ImportedTensor> tensors;
  std::vector<ImportedNode> nodes;
  std::uint32_t root = 0;
};

// `compiled_backward`: loss.backward() under compiled autograd
// (torch._dynamo.compiled_autograd._enable(compiler_fn, dynamic=...)) over a
// graph an `autograd_graph` action defined.
struct CompiledBackward {
  std::string graph;
  bool dynamic = true;  // PyTorch's default for _enable
};

// Limits on one recorded graph.
inline constexpr std::size_t kMaxRecordedNodes = 4096;
inline constexpr std::size_t kMaxRecordedTensors = 4096;

}  // namespace capsim
