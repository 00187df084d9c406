// The World's private parts that two of its files share: a plain-API graph and
// a compiled optimizer. Internal to sim/; include only from world*.cpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/world/world.hpp"

namespace capsim {

// One torch.cuda.graph / make_graphed_callables capture (§3.4 of the spec).
struct World::PlainGraph {
  // The static input surface: the sample args, pinned; params are not pinned
  // (the graph holds the Parameter object, whose storage may change).
  std::vector<std::optional<TensorId>> surface;
  std::vector<TensorArg> surface_args;  // as captured
  std::vector<bool> is_param;
  GraphHandle graph;
  std::vector<TensorId> outputs;  // static outputs, pinned, overwritten by every replay
};

// A compiled optimizer: its params, its state, the traced step function and
// the graph-module attributes that keep static tensors alive until the
// finalizer runs.
struct World::Optimizer {
  std::string name;
  OptimizerKind kind = OptimizerKind::kAdam;
  SgdHyper sgd;
  AdamHyper adam;
  std::vector<std::uint64_t> params;              // objects, referenced
  std::vector<std::vector<std::uint64_t>> state;  // per param, referenced
  std::vector<std::uint64_t> graph_attributes;    // referenced until dropped
  std::unique_ptr<FunctionDef> step;              // built when first traced
  std::uint64_t steps_taken = 0;
};

}  // namespace capsim
