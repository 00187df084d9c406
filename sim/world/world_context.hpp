// WorldContext: what the World's parts work on, and the calls they ask of it.
//
// The World is cut as the tree manager is: state in parts, each working on
// one narrow context instead of the whole World. The parts are the compiled
// optimizers (compiled_optimizers.hpp), the plain CUDA-graph API
// (plain_graphs.hpp) and autograd over the World's tensors
// (world_autograd.hpp). Each gets this struct: the shared simulated state
// (SimContext), the tensor store, the object table, the RNG, the eager oracle
// and the options, all owned by the World, plus WorldCalls, the few things
// only the World can do because they need Dynamo's cache, the tree manager or
// another part. The helpers below are the steps every part repeats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "model/tensor.hpp"
#include "sim/core/function_def.hpp"
#include "sim/core/sim_context.hpp"
#include "sim/world/object_table.hpp"
#include "sim/world/world_options.hpp"

namespace capsim {

class EagerOracle;  // sim/core/eager_oracle.hpp
class Rng;          // model/rng.hpp

// What a part asks of the World (which implements it): calls through
// Dynamo's cache and the tree manager, the death of compiled functions, and
// the one step that needs two parts at once.
class WorldCalls {
 public:
  // A call's outputs, each held once and handed over; none when the call
  // raised (its error event is out).
  using Outputs = std::optional<std::vector<TensorId>>;

  // A call through the tree manager or the plain API, as the config says: a
  // Dynamo entry point of the World's own (an optimizer step).
  virtual Result<Outputs> call_unbound(const FunctionDef& def,
                                       const std::vector<std::uint64_t>& args) = 0;
  // A call through Dynamo's cache and the tree manager, never the plain API
  // (compiled autograd's compiled_fn); `consume` names let go of theirs.
  virtual Result<Outputs> run_compiled(const FunctionDef& def,
                                       const std::vector<std::uint64_t>& args,
                                       const std::vector<std::int64_t>& int_key,
                                       bool new_invocation,
                                       const std::vector<std::string>& consume) = 0;
  // `def`'s compiled entries die with their owner (a dropped optimizer's
  // step): Dynamo's cache forgets them, and the TreeManagerContainer's count
  // of live cudagraphified functions goes down by as many.
  virtual void forget_compiled(const FunctionDef& def) = 0;
  // `o.data = o.clone()`: the same object and values in a new storage (an
  // autograd leaf follows its tensor).
  virtual Status move_to_fresh_copy(std::uint64_t object) = 0;

 protected:
  WorldCalls() = default;
  WorldCalls(const WorldCalls&) = default;
  WorldCalls& operator=(const WorldCalls&) = default;
  ~WorldCalls() = default;
};

struct WorldContext {
  SimContext& sim;  // memory, allocator, refs, backend, config, events, counters
  TensorStore& store;
  ObjectTable& objects;
  Rng& rng;
  EagerOracle& oracle;  // P-replay's eager runs (verify_replays)
  const WorldOptions& options;
  WorldCalls& calls;

  // A new tensor of `sizes`, held once, `offset` elements into a storage of
  // its own, filled with `fill` or else the RNG's next values.
  // Of `dtype`, with each value stored as that dtype stores it (NewTensor).
  // With `strides`, the storage spans every element they reach, all filled.
  Result<TensorId> fresh_tensor(const Dims& sizes, std::optional<float> fill, std::int64_t offset,
                                DType dtype = DType::kFloat32,
                                const std::optional<Dims>& strides = std::nullopt);
  // E1 on the tensors of `used`: true, with the error event out, when one was
  // freed by a new generation.
  bool raise_if_poisoned(const std::vector<std::uint64_t>& used);
  // Each output with a name becomes a new object bound to it (an `output`
  // event); the others are dropped. The outputs of `compiled`, a FORWARD
  // function, outside its user_visible_outputs are its saved tensors.
  Status bind_outputs(const std::vector<TensorId>& outputs, const std::vector<std::string>& names,
                      const FunctionDef* compiled = nullptr);
  // How many of `tensors` still have their storage alive.
  std::size_t live_storages_of(const std::vector<TensorId>& tensors) const;
};

}  // namespace capsim
