// Running a captured backward: the FxGraph interpreter and its lowering.
//
// PyTorch calls the compiled graph as compiled_fn(inputs, sizes, scalars,
// hooks, packed_data). capsim does the same with a CompiledBackwardCall built
// from the current backward's Phase A (which may be a cache hit of a graph
// captured from another backward): the lifted tensors then the root grads,
// the values of the DYNAMIC size slots, and the lifted hooks and Python
// backwards. The interpreter runs each call_function on real tensors through
// the same formulas and kernels as the eager engine (BackwardOps), so P-equal
// (the grads are bitwise equal to eager) is a statement about the captured
// graph, not about two implementations of the formulas.
//
// Only functional captures run: the legacy capture is a model of what the
// pre-PR trace reads and bakes in, and its aten ops are placeholders.
//
// Lowering records every kernel the interpreter launches, with its addresses,
// into a StepProgram: what a CUDA graph capture of the compiled backward
// holds. Replaying it recomputes the grads at the same addresses.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/fault.hpp"
#include "model/fx_graph.hpp"
#include "model/step_program.hpp"
#include "sim/autograd/autograd_engine.hpp"
#include "sim/compiled_autograd/collect.hpp"

namespace capsim {

struct CompiledBackwardCall {
  std::vector<TensorId> inputs;     // lifted tensors, then the root grads
  std::vector<std::int64_t> sizes;  // the DYNAMIC slots' values, in slot order
  std::vector<LiftedHook> hooks;    // the runtime `hooks` list
  // C++ Functions by node name ("CppNode<MyFn>"): ops.CppNode<MyFn>k calls
  // the class's backward, which capsim keeps per node (by the engine's id).
  std::map<std::string, AutogradNodeId> cpp_nodes;
  // The backward graph's ids to the engine's (AutogradEngine::BackwardGraph):
  // the hooks' nodes are the graph's, their scales and functions the engine's.
  std::vector<AutogradNodeId> engine_ids;
};

// The call for `backward` over `bg` (whose slots' dynamic flags must be those
// of the graph that will run: see mark_dynamic).
CompiledBackwardCall make_call(const AutogradEngine::BackwardGraph& bg,
                               const CollectedBackward& backward,
                               std::span<const TensorId> root_grads);

struct RunOptions {
  Fault fault = Fault::kNone;  // a kRun fault (model/fault.hpp): the controls of P-equal
  // When set, every kernel launched is also appended here (the lowering).
  StepProgram* record = nullptr;
};

// Runs a functional capture on `engine`'s device: the leaves' .grad end up as
// the eager backward would leave them. `graph` is the backward being run (for
// the Python backwards' needs_input_grad). Errors name the FX node.
Status run_compiled_backward(AutogradEngine& engine, const AutogradGraph& graph, const FxGraph& fx,
                             const CompiledBackwardCall& call, const RunOptions& options = {});

// The lowering: runs the graph once while recording, and returns the program.
Result<StepProgram> lower_compiled_backward(AutogradEngine& engine, const AutogradGraph& graph,
                                            const FxGraph& fx, const CompiledBackwardCall& call);

}  // namespace capsim
