// A captured backward as a cudagraph-tree function: where the two seeds meet.
//
// With compiled autograd and mode="reduce-overhead", the whole backward is one
// graph that inductor compiles and cudagraph trees record as a BACKWARD
// function: its inputs are compiled autograd's `inputs` (saved activations,
// params, the root grads) and the grads it produces are outputs that live in
// the private pool. The compiled optimizer that runs next then finds its grads
// there and needs no copies (PR 107504's first case).
//
// `to_function_def` turns a functional capture into such a FunctionDef (the
// body language of sim/core/function_def.hpp), one BodyOp per kernel, for the node
// kinds whose formulas that language has: MulBackward0, AddBackward0,
// CloneBackward0, SumBackward0, validate_outputs that neither reduces nor
// casts, fan-in adds and AccumulateGrad. Each accumulate_grad_ becomes an
// output, paired with the param it is for; the caller assigns it to .grad
// (AccumulateGrad outside the graph, as the tree-manager scenarios do). Any
// other target is an error naming it: hooks, custom functions, CopySlices and
// the AOT region need body ops capsim does not have yet.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/fx_graph.hpp"
#include "sim/autograd/autograd_engine.hpp"
#include "sim/compiled_autograd/compiled_backward.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

struct CompiledBackwardFunction {
  FunctionDef def;                     // LowerOptions::mode; one input per call input
  std::vector<std::uint32_t> grad_of;  // per output: the input (a param) it is the grad of
};

struct LowerOptions {
  // Negative control for the lowering's property: torch.add lowers to its
  // first operand, dropping every fan-in contribution but the first.
  bool drop_fan_in_add = false;
  // The call's `sizes` (the DYNAMIC slots' values, CompiledBackwardCall::
  // sizes): a getitem of the sizes placeholder lowers to its value here, so
  // the function is specialized to them, as cudagraph trees record one graph
  // per set of symint inputs (the caller passes them as the int_key). Empty:
  // a capture that reads sizes does not lower.
  std::vector<std::int64_t> sizes;
  // The graph AOTAutograd hands cudagraph trees. A World's compiled backward
  // passes kInference: compiled autograd's graph is traced by Dynamo while
  // the backward runs with grad mode off, so AOTAutograd compiles it as an
  // inference graph (docs/compiled-autograd.md, "The compiled backward in
  // the tree"). The built-in scenarios wrote it as a BACKWARD function.
  CompilationMode mode = CompilationMode::kBackward;
};

// `input_sizes` and `input_names` describe the call's inputs (the lifted
// tensors, then the root grads); `param_input_idxs` are the params among them,
// which become the function's static inputs.
Result<CompiledBackwardFunction> to_function_def(const FxGraph& fx, std::string name,
                                                 std::span<const Dims> input_sizes,
                                                 std::vector<std::string> input_names,
                                                 std::vector<std::uint32_t> param_input_idxs,
                                                 const LowerOptions& options = {});

// The call's inputs as to_function_def takes them: their sizes, the names
// inputs_0, inputs_1, ..., and as params the leaves that require grad (the
// AccumulateGrad variables).
struct FunctionInputs {
  std::vector<Dims> sizes;
  std::vector<std::string> names;
  std::vector<std::uint32_t> params;
};
Result<FunctionInputs> function_inputs(const AutogradEngine& engine, const TensorStore& store,
                                       const CompiledBackwardCall& call);

}  // namespace capsim
