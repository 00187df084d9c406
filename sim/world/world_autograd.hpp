// WorldAutograd: autograd over the World's own tensors, compiled autograd,
// and the graphs of recorded PyTorch runs; the World's part for every
// action that records or runs a backward (world_autograd.cpp says how).
//
// world_autograd.cpp: leaves that require grad, eager calls that record the
// graph, accumulate_grad and the eager `backward`. world_compiled_autograd.cpp:
// a backward through compiled autograd, its capture lowered and called
// through the tree manager (WorldCalls::run_compiled).
// world_capture.cpp: run_capture_scenario, autograd_graph and
// compiled_backward. Their shared state is world_autograd_state.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/autograd_graph.hpp"
#include "sim/program/program.hpp"
#include "sim/world/world_context.hpp"

namespace capsim {

struct Variable;              // sim/autograd/autograd_engine.hpp
struct CompiledBackwardCall;  // sim/compiled_autograd/compiled_backward.hpp
class FxGraph;                // model/fx_graph.hpp
struct AutogradScenario;      // sim/compiled_autograd/runner.hpp
class ImportedAutograd;       // sim/compiled_autograd/imported_autograd.hpp

class WorldAutograd {
 public:
  explicit WorldAutograd(WorldContext& world);
  ~WorldAutograd();
  WorldAutograd(const WorldAutograd&) = delete;
  WorldAutograd& operator=(const WorldAutograd&) = delete;

  // A new tensor that requires grad: a leaf whose .grad is `object`'s.
  Status adopt_leaf(TensorId tensor, std::uint64_t object);
  // Whether one of `inputs` requires grad (an eager call then records).
  bool requires_grad(const std::vector<TensorId>& inputs) const;
  // An eager call that records its autograd graph; outputs bound as named.
  Status eager_call(const FunctionDef& def, const std::vector<TensorId>& inputs,
                    const std::vector<std::string>& outputs);
  // `.data =` moved a leaf's object from tensor `old` to `now`.
  Status retarget_leaf(TensorId old, TensorId now);

  // The actions.
  Status accumulate_grad(const AccumulateGrad& a);
  Status backward(const Backward& a);
  Status run_capture_scenario(const RunCaptureScenario& a);
  Status define_autograd_graph(const DefineAutogradGraph& a);
  Status compiled_backward(const CompiledBackward& a);

 private:
  struct State;
  struct LoweredBackward;

  State& ensure();
  std::vector<TensorId> take_engine_made();
  void hold_saved_tensors(std::size_t first_node);
  Status drop_released_saved_tensors();
  bool lend_grads_to_engine();
  void take_grads_from_engine();
  // How many of `nodes` are AccumulateGrads: the leaves a backward wrote.
  std::int64_t accumulate_grads_among(std::span<const AutogradNodeId> nodes) const;
  // AccumulateGrad outside a graph: .grad takes `grad` (stolen) if None,
  // else adds it in place.
  Status accumulate_into(std::uint64_t param, std::uint64_t grad);
  // `a` on the objects it names, its capture in `mode`.
  Status backward_of(const Backward& a, std::uint64_t root_object,
                     std::optional<std::uint64_t> grad_object, CaptureMode mode);

  // world_compiled_autograd.cpp
  Status compiled_autograd_backward(const Backward& a, const Variable& root,
                                    const std::optional<Variable>& grad, CaptureMode mode);
  void replace_capture(std::uint64_t entry, FxGraph captured);
  Result<const LoweredBackward*> lowered_function(std::uint64_t entry,
                                                  const CompiledBackwardCall& call);
  Result<std::size_t> call_lowered_backward(const LoweredBackward& function,
                                            const CompiledBackwardCall& call);
  Result<std::size_t> interpret_backward(const AutogradGraph& graph,
                                         std::span<const AutogradNodeId> ran, std::uint64_t entry,
                                         const CompiledBackwardCall& call);

  // world_capture.cpp: a run_capture_scenario action's backward `i`; false
  // when it raised (its error event is out).
  Result<bool> scenario_backward(const AutogradScenario& s, int i, CaptureMode mode);
  Status check_scenario_grads(const AutogradScenario& s, int i,
                              const std::vector<std::uint64_t>& leaves);

  // What of the context this part touches.
  WorldContext& world_;
  SimContext& ctx_;
  ObjectTable& objects_;
  TensorStore& store_;
  WorldCalls& calls_;
  const WorldOptions& options_;

  // Autograd over the World's own tensors; made when a tensor first
  // requires grad.
  std::unique_ptr<State> state_;
  // The autograd graphs of a recorded PyTorch run and compiled autograd's
  // cache over them; made on the first autograd_graph action.
  std::unique_ptr<ImportedAutograd> recorded_;
  // Functions lowered from replaced captures: a live manager may still name
  // them.
  std::vector<std::unique_ptr<FunctionDef>> retired_defs_;
};

}  // namespace capsim
