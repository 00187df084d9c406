// World: all simulated state, and the runner of a Program.
//
// A World owns the device memory, the caching allocator, the tensors, the CPU
// backend, the one seeded RNG, the objects and their names (ObjectTable), the
// tree manager (created on the first compiled call, dropped when its functions
// die), Dynamo's cache, the counters and the event log. Nothing else holds
// state: a failure is a seed and a program, and running them again replays it
// exactly.
//
// The World keeps the dispatch, the objects and names, and the compiled call
// (Dynamo's cache, compile, the tree manager); three parts own the rest, each
// with its own state and a WorldContext (world_context.hpp) as its only view
// of the World: CompiledOptimizers (the compiled optimizer), PlainGraphs (the
// plain CUDA-graph API) and WorldAutograd (autograd and compiled autograd).
// What a part needs of the compiled call it asks through WorldCalls, which
// the World implements.
//
// `run` returns an Error only for bad input (an unknown name or function, a
// shape mismatch, a double free): the message names the action. Everything
// PyTorch itself would raise is an error event, and the program goes on.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/hashing.hpp"
#include "model/rng.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/eager_oracle.hpp"
#include "sim/core/sim_context.hpp"
#include "sim/trees/tree_manager.hpp"
#include "sim/world/compiled_optimizers.hpp"
#include "sim/world/dynamo.hpp"
#include "sim/world/object_table.hpp"
#include "sim/world/plain_graphs.hpp"
#include "sim/program/program.hpp"
#include "sim/world/world_autograd.hpp"
#include "sim/world/world_context.hpp"
#include "sim/world/world_options.hpp"

namespace capsim {

// The cudagraph pool's bytes at a moment: in allocated blocks, and in the
// segments mapped for it (which only grow: a re-record storm shows there).
struct PoolBytes {
  std::uint64_t live = 0;
  std::uint64_t reserved = 0;
};

class World : private WorldCalls {
 public:
  explicit World(WorldOptions options);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Runs every action of `program`; stops at the first bad input. `after`
  // (optional) is called after each action with its index, for probes.
  Status run(const Program& program, const std::function<void(std::size_t)>& after = nullptr);
  // The same, one action at a time, for streaming replay: `begin` checks the
  // functions and keeps a pointer to `program` (which must outlive the World;
  // only its functions are read), then each action runs with its index.
  Status begin(const Program& program);
  Status run_action(std::size_t index, const Action& action);

  const std::vector<Event>& events() const { return events_; }
  // Hands over the events emitted so far and forgets them, so that a long
  // streaming replay holds only the events of the action it is checking.
  // Every event read through events() afterwards is a later one.
  std::vector<Event> take_events() { return std::exchange(events_, {}); }
  const Counters& counters() const { return counters_; }
  const CudagraphConfig& config() const { return options_.config; }
  // The current tree manager; null before the first compiled call and after
  // it was shut down.
  const TreeManager* manager() const { return manager_.get(); }
  std::uint64_t managers_created() const { return managers_created_; }
  const GenerationState& generations() const { return generations_; }

  // --- Queries by name ------------------------------------------------------
  bool has(const std::string& name) const;
  // The tensor object a name refers to now (PyTorch's `id(t)`).
  Result<TensorId> tensor_id(const std::string& name) const;
  Result<Address> data_ptr(const std::string& name) const;
  // Its elements, row-major, as floats (another dtype converted: a read).
  Result<std::vector<float>> values(const std::string& name) const;
  // Live blocks of the cudagraph pool (the tests' all_live_block_count()).
  std::size_t pool_live_blocks() const;
  // Bytes in those blocks (rounded sizes, as the allocator's stats count)
  // and in the pool's segments.
  PoolBytes pool_bytes() const;
  // Storages a dropped optimizer's params still have alive.
  std::size_t live_storages_of(const std::vector<TensorId>& tensors) const;
  const TensorStore& store() const { return store_; }
  // Every bound name and the tensor it refers to now, in name order (the pool
  // drawing names each block's owner with them).
  std::vector<std::pair<std::string, TensorId>> bound_names() const;
  const CachingAllocator& allocator() const { return allocator_; }
  // The graph partition the tree function `fid` named `name` is (as a
  // record event names it), or null for a whole graph.
  const Segment* partition_piece(FunctionId fid, std::string_view name) const;

 private:
  Status step(const Action& action);
  Status do_new_tensor(const NewTensor& a);
  Status do_mark_static(const MarkStatic& a);
  Status do_call(const Call& a);
  Status do_eager_call(const EagerCall& a);
  Status do_read(const Read& a);
  Status do_reassign(const ReassignData& a);
  Status move_to_fresh_copy(std::uint64_t object) override;
  Status do_drop_optimizer(const DropOptimizer& a);
  Status do_reset();

  // The compiled call of a Call action: through the plain API or Dynamo.
  Status call_compiled(const FunctionDef& def, const std::vector<std::uint64_t>& args,
                       const std::vector<std::string>& outputs,
                       const std::vector<std::int64_t>& int_key, bool new_invocation,
                       const std::vector<std::string>& consume);
  // The same call, its outputs handed back unbound (each held once), or none
  // when the call raised (its error event is out). Not under the plain API.
  Result<Outputs> run_compiled(const FunctionDef& def, const std::vector<std::uint64_t>& args,
                               const std::vector<std::int64_t>& int_key, bool new_invocation,
                               const std::vector<std::string>& consume) override;
  // A call through the tree manager or the plain API, as the config says,
  // with its outputs handed back unbound (each held once), or none when it
  // raised: a Dynamo entry point of the World's own (an optimizer step).
  Result<Outputs> call_unbound(const FunctionDef& def,
                               const std::vector<std::uint64_t>& args) override;
  void forget_compiled(const FunctionDef& def) override;
  // What Dynamo sees of each argument (dynamo.hpp).
  Result<std::vector<DynamoArg>> dynamo_args(const std::vector<std::uint64_t>& args) const;
  // world_compile.cpp: a first compile of a function and key fills `entry`
  // (its tree functions, or the skip or bypass that runs it eagerly).
  // `another_size`: a dynamic graph Inductor already compiled, called with
  // new sizes (cudagraphify makes a function per key; Inductor compiles once).
  void compile(const FunctionDef& def, std::span<const DynamoArg> args,
               const std::vector<std::int64_t>& int_key, CompiledEntry& entry, bool another_size);
  void compile_without_cudagraphs(const FunctionDef& def, const StaticInputs& statics,
                                  CompiledEntry& entry, bool another_size);
  void skip_graph(const FunctionDef& def, CompiledEntry& entry, Decision id, std::string message,
                  std::vector<std::uint32_t> inputs, bool logged = true);
  // The skip event of a skipped entry, and with cudagraph_or_error its error.
  void emit_compile_skip(const FunctionDef& def, const CompiledEntry& entry);
  FunctionId add_tree_function(const FunctionDef& def, std::vector<std::uint32_t> statics,
                               std::vector<std::uint32_t> mutated,
                               const std::vector<std::int64_t>& int_key,
                               std::optional<std::uint32_t> partition);
  bool bypasses_trees(const FunctionDef& def, const std::vector<std::int64_t>& int_key,
                      CompiledEntry& entry);
  // One call of an entry; `inputs` are held once each and handed over, and
  // the `consume` names let go of theirs.
  Result<std::optional<std::vector<TensorId>>> run_entry(const FunctionDef& def,
                                                         const CompiledEntry& entry,
                                                         std::vector<TensorId>& inputs,
                                                         const std::vector<std::string>& consume);
  Result<std::optional<std::vector<TensorId>>> run_partitioned(const FunctionDef& def,
                                                               const CompiledEntry& entry,
                                                               std::vector<TensorId>& inputs);
  Result<std::vector<TensorId>> run_eagerly(const FunctionDef& def, std::vector<TensorId>& inputs);
  // copy_misaligned_inputs for the non-static inputs of `fn`.
  Status align_inputs(const WrappedFunction& fn, std::vector<TensorId>& inputs);
  TreeManager& ensure_manager();
  Status shutdown_manager(const char* reason);
  Result<const FunctionDef*> function(const std::string& name) const;

  WorldOptions options_;
  DeviceMemory memory_;
  CachingAllocator allocator_;
  TensorStore store_;
  TensorRefs refs_;
  CpuBackend backend_;
  Rng rng_;
  std::vector<Event> events_;
  Counters counters_;
  GenerationState generations_;
  EagerOracle oracle_;  // P-replay's eager runs (verify_replays)
  SimContext ctx_;
  const Program* program_ = nullptr;
  // program_'s functions by name (begin() refuses a name defined twice).
  std::unordered_map<std::string, const FunctionDef*, TextHash, std::equal_to<>>
      functions_by_name_;  // looked up per call, never iterated

  std::unique_ptr<TreeManager> manager_;
  std::optional<PoolId> tree_pool_;
  std::uint64_t managers_created_ = 0;
  std::uint64_t live_cudagraphified_ = 0;  // TreeManagerContainer's count
  CompileCache compiled_;                  // Dynamo's cache (dynamo.hpp)
  // The pieces of each partitioned function, per (function, dynamic).
  std::map<std::pair<const FunctionDef*, bool>, std::vector<Segment>> pieces_;
  // Per tree function's body: the int keys it was cudagraphed for (the size
  // of cudagraphify_impl's fn_cache), and whether W2 or W3 was shown.
  std::map<const FunctionDef*, std::size_t> cudagraphed_keys_;
  std::set<const FunctionDef*> warned_dynamic_;
  std::set<const FunctionDef*> warned_rerecord_limit_;

  ObjectTable objects_;
  WorldContext context_;  // what the parts work on

  PlainGraphs plain_;              // the plain API (plain_graphs.hpp)
  CompiledOptimizers optimizers_;  // compiled_optimizers.hpp
  WorldAutograd autograd_;         // world_autograd.hpp
};

}  // namespace capsim
