// The World's private parts that two of its files share: a compiled optimizer and the autograd
// state. Internal to sim/; include only from world*.cpp.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/fx_graph.hpp"
#include "sim/autograd/autograd_engine.hpp"
#include "sim/autograd/compiled_autograd_collect.hpp"
#include "sim/world/world.hpp"

namespace capsim {

// Which `opt.step()` graph Dynamo traced: per param, whether it had a grad
// (Dynamo guards each `p.grad is None`; _init_group skips a param without one)
// and whether its state existed (Dynamo guards that the state is non-empty:
// SGD makes its momentum buffers inside the first step's graph).
struct OptimizerStepKey {
  std::vector<bool> with_grad;
  std::vector<bool> with_state;
  friend auto operator<=>(const OptimizerStepKey&, const OptimizerStepKey&) = default;
};

// A compiled optimizer: its params, its state, the traced step function and
// the graph-module attributes that keep static tensors alive until the
// finalizer runs.
struct World::Optimizer {
  std::string name;
  OptimizerKind kind = OptimizerKind::kAdam;
  SgdHyper sgd;
  AdamHyper adam;
  std::vector<std::uint64_t> params;  // objects, referenced
  // Per param, referenced; empty until the state exists (SGD without
  // momentum never has any).
  std::vector<std::vector<std::uint64_t>> state;
  std::vector<std::uint64_t> graph_attributes;  // referenced until dropped
  std::map<OptimizerStepKey, std::unique_ptr<FunctionDef>> steps;
  bool traced = false;
  std::uint64_t steps_taken = 0;
};

// A compiled-autograd capture lowered to a tree-manager function.
struct World::LoweredBackward {
  std::unique_ptr<FunctionDef> def;
  std::vector<std::uint32_t> grad_of;  // per output: the call input it is the grad of
};

// Autograd over the World's own tensors (world_autograd.cpp). The engine
// works on the World's device and default pool, but owns nothing between
// actions: what it makes is handed to the TensorRefs at once, and the graph's
// own references (the tensors its nodes save) are holds there too, so that
// one reference count decides every lifetime, as in PyTorch.
struct World::Autograd {
  explicit Autograd(AutogradDevice device) : engine(device) {}
  AutogradEngine engine;
  // Per node: the tensors it saved, held until a backward without
  // retain_graph frees them.
  std::map<AutogradNodeId, std::vector<TensorId>> saved_holds;
  // Leaves that require grad, by tensor: the object whose .grad they fill.
  std::map<TensorId, std::uint64_t> leaf_objects;
  // Compiled autograd: the cache over every compiled backward, and per cache
  // entry its latest capture and, where it lowers, its tree-manager function.
  CompiledAutogradCache cache;
  // The legacy capture's own cache (a negative control's model, never
  // lowered), so that its entries never meet the functional ones.
  CompiledAutogradCache legacy_cache;
  std::uint64_t backwards = 0;
  struct Entry {
    FxGraph captured;
    std::string name;  // CompiledAutograd<n>, after the capture
    // Per set of call sizes (the DYNAMIC slots' values), the capture lowered
    // and specialized to them: the tree manager keys its recordings by them.
    std::map<std::vector<std::int64_t>, LoweredBackward> functions;
    std::string why_not;  // the lowering's error: the capture does not lower
  };
  std::map<std::uint64_t, Entry> entries;
};

}  // namespace capsim
