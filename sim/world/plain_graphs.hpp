// PlainGraphs: the plain CUDA-graph API (torch.cuda.graph and
// make_graphed_callables; docs/cudagraph-trees.md §3.4), the World's part
// that serves every compiled call when the config's plain_api is on.
//
// The first call of a function captures it over its own arguments (they
// become the static input surface); every later call copies an argument into
// its surface slot only when the pointers differ, never looks at parameters,
// and replays. The outputs are the same tensors every time, overwritten by
// each replay. Nothing is checked, so a parameter whose `.data` was
// reassigned is read at its old address.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "sim/world/world_context.hpp"

namespace capsim {

class PlainGraphs {
 public:
  explicit PlainGraphs(WorldContext& world);
  ~PlainGraphs();
  PlainGraphs(const PlainGraphs&) = delete;
  PlainGraphs& operator=(const PlainGraphs&) = delete;

  // One call of `def` on the objects `args`: its outputs handed back
  // unbound, each held once.
  Result<std::vector<TensorId>> call(const FunctionDef& def,
                                     const std::vector<std::uint64_t>& args);
  // The private pool every capture allocates in, made by the first.
  std::optional<PoolId> pool() const { return pool_; }

 private:
  struct PlainGraph;

  Result<std::vector<TensorId>> capture(const FunctionDef& def,
                                        const std::vector<std::uint64_t>& args,
                                        const std::vector<TensorId>& inputs);
  Result<std::vector<TensorId>> replay(const FunctionDef& def, PlainGraph& graph,
                                       const std::vector<TensorId>& inputs);
  Status copy_into_surface(const FunctionDef& def, const PlainGraph& graph,
                           const std::vector<TensorId>& inputs);

  // What of the context this part touches.
  SimContext& ctx_;
  const ObjectTable& objects_;
  TensorStore& store_;
  EagerOracle& oracle_;
  const bool verify_replays_;

  std::map<const FunctionDef*, std::unique_ptr<PlainGraph>> graphs_;
  std::optional<PoolId> pool_;
};

}  // namespace capsim
