// TreeManager: PyTorch's CUDAGraphTreeManager for one simulated device.
//
// One private pool, one stream, the FunctionIds of every cudagraphified
// function, and the tree of warmup and recorded nodes. `run` is `_run` of
// cudagraph_trees.py (§2.3 of docs/cudagraph-trees.md): end the current
// recording or warmup if a new generation may start, take the mutation gate and
// the re-record limit, warm up, replay the first child whose invariants hold, or
// checkpoint and record. Recording captures the function's body into a
// StepProgram with the addresses of that moment baked in; replay copies the
// non-static inputs into their placeholders and runs that program through the
// backend, so whatever lies at those addresses now is what it computes.
//
// Modelled PyTorch errors (E1, E3, E4, E6, E7) are not Errors: they become
// error events and a `raised` outcome, and the world goes on, as a Python
// program that catches the exception would. Errors (Result) mean bad input.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/core/decisions.hpp"
#include "sim/core/sim_context.hpp"
#include "sim/trees/cudagraph_node.hpp"

namespace capsim {

// X(enumerator, name): how a call was served.
#define CAPSIM_CALL_PATHS(X) \
  X(kWarmup, "warmup")       \
  X(kRecord, "record")       \
  X(kReplay, "replay")       \
  X(kEager, "eager")         \
  X(kRaised, "raised")
enum class CallPath : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_CALL_PATHS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

struct CallOutcome {
  CallPath path = CallPath::kEager;
  std::vector<TensorId> outputs;  // each held once on the caller's behalf
};

// The limit on recordings one manager may make.
inline constexpr std::size_t kMaxGraphNodes = 1u << 16;

class TreeManager {
 public:
  TreeManager(SimContext& ctx, PoolId pool);
  TreeManager(const TreeManager&) = delete;
  TreeManager& operator=(const TreeManager&) = delete;

  FunctionId add_function(WrappedFunction fn);
  const WrappedFunction& function(FunctionId fid) const { return functions_.at(fid); }
  std::size_t function_count() const { return functions_.size(); }

  // One call. `inputs` are held once each by the call's input list, which the
  // manager drops (the boxed calling convention clears the list).
  Result<CallOutcome> run(FunctionId fid, std::vector<TensorId> inputs);

  // A backward that is not cudagraphed ran (`set_to_running_backward`).
  void set_to_running_backward() { running_forwards_with_pending_backwards_ = false; }
  // `shutdown()`: drops the tree and every pin; later runs raise A1.
  Status shutdown();

  // --- Queries, for tests, scenarios and the printer ----------------------
  PoolId pool() const { return pool_; }
  ExecutionState path_state() const;
  std::optional<NodeRef> current_node() const { return current_; }
  const std::vector<GraphNode>& graphs() const { return graphs_; }
  // The steps a recorded graph froze, read-only (the Chrome exporter names
  // each replayed kernel after them).
  Result<const StepProgram*> graph_program(GraphId id) const {
    if (id >= graphs_.size()) return make_error("tree manager: unknown graph id");
    return ctx_.backend.program(graphs_[id].graph);
  }
  const std::vector<WarmupNode>& warmups() const { return warmups_; }
  const std::map<FunctionId, std::vector<GraphId>>& roots() const { return roots_; }
  bool running_forwards_with_pending_backwards() const {
    return running_forwards_with_pending_backwards_;
  }
  // By current_node_id(): a warmup node's own (negative) id, as PyTorch's
  // _get_node_id, so the count there is its own, never a recorded node's.
  std::uint64_t num_rerecord(std::optional<std::int64_t> node, FunctionId fid) const;
  // Descendants of each root, roots in function-id then insertion order
  // (the tests' get_root_children()).
  std::vector<std::size_t> root_children() const;
  // The live tracked output storages of the current path.
  std::vector<StorageRef> path_live_weakrefs() const;

 private:
  // tree_manager.cpp: the state machine.
  Result<CallOutcome> run_inner(FunctionId fid, std::vector<TensorId>& inputs);
  // Steps 6-7 of run_inner, outside a recording: the call's result when
  // they decide it (a replay, a skip or fallback, an error), or nullopt when
  // it goes on to record, `cause` saying why.
  std::optional<Result<CallOutcome>> replay_or_rerecord(FunctionId fid,
                                                        std::vector<TensorId>& inputs,
                                                        RecordCause& cause);
  // The function's recordings under the current node (or the roots): the
  // first whose invariants hold, else what the failed checks say.
  struct ChildMatch {
    std::optional<GraphId> hit;
    std::optional<GraphId> latest;              // the newest recording on this edge
    std::optional<InvariantStatus> unexpected;  // the last failure that counts
    std::string unexpected_reason;
    RecordCause cause;
  };
  ChildMatch match_children(FunctionId fid, const std::vector<TensorId>& inputs) const;
  bool in_new_torch_compile_invocation() const;
  bool can_start_new_generation() const;
  void update_generation() { current_gen_ = ctx_.generations.current(); }
  Status try_end_curr_recording_or_warmup(FunctionId fid);
  Status try_end_curr_execution();
  void clear_current_path(const char* reason);
  void check_warn_on_unable_to_start_executing(FunctionId fid);
  // Whether a sibling that failed with `status` counts toward the
  // re-record limit, as the profile says.
  bool counts_toward_rerecord_limit(InvariantStatus status) const;
  bool exceed_rerecord_limit(std::optional<std::int64_t> node, FunctionId fid) const;
  // 2.15's managed-input accounting (tree_managed_inputs.cpp). The managed inputs
  // of `latest` (the newest recording of the function on this edge) whose
  // pointers changed and that a copy may replace.
  std::vector<std::uint32_t> demotable_managed_idxs(const GraphNode& latest,
                                                    const std::vector<TensorId>& inputs) const;
  // Counts one pointer change of each of `idxs` on the current edge and
  // applies the action at the limit: "copy" demotes (nothing returned),
  // "skip" returns the inputs that reached it and marks the edge eager.
  std::vector<std::uint32_t> update_managed_input_rerecord(FunctionId fid,
                                                           const std::vector<std::uint32_t>& idxs);
  // The inputs demoted on the current edge, sorted.
  std::vector<std::uint32_t> demoted_managed_idxs(FunctionId fid) const;
  // E9 (action "skip"), with its count; returns the text.
  std::string emit_managed_input_skip(FunctionId fid, std::optional<GraphId> node,
                                      const std::vector<std::uint32_t>& idxs);
  // The mutation gate: true when the call must run eagerly.
  bool mutation_blocks(FunctionId fid, const std::vector<TensorId>& inputs, bool recompute);
  // `reason`: an eager decision (Decision::kEager*).
  Result<CallOutcome> run_eager_fallback(FunctionId fid, std::vector<TensorId>& inputs,
                                         Decision reason);
  // cudagraph_or_error turns skips into RuntimeErrors (2.9 on).
  bool skips_raise() const;
  // The eager fallback, or E8 when the skip just logged must raise.
  Result<CallOutcome> skip_or_fallback(FunctionId fid, std::vector<TensorId>& inputs,
                                       Decision reason);
  std::optional<GraphId> current_graph_id() const;
  std::optional<std::int64_t> current_node_id() const;

  // tree_warmup_record.cpp
  Result<CallOutcome> run_warmup(FunctionId fid, std::vector<TensorId>& inputs);
  Result<CallOutcome> record_function(FunctionId fid, std::vector<TensorId>& inputs,
                                      const RecordCause& cause);
  // The parts of record_function, in the order it runs them.
  Status classify_inputs(GraphNode& node, const WrappedFunction& fn,
                         const std::vector<NodeRef>& parent_path,
                         const std::vector<TensorId>& inputs,
                         const std::vector<std::uint32_t>& demoted);
  Result<std::vector<TensorId>> fill_placeholders(GraphNode& node,
                                                  const std::vector<NodeRef>& parent_path,
                                                  const std::vector<TensorId>& inputs,
                                                  std::vector<TensorId>& placeholder_ids);
  GraphNode& add_to_tree(GraphNode node, FunctionId fid);
  void emit_record(const GraphNode& node, const RecordCause& cause);
  Status classify_outputs(GraphNode& node, const std::vector<TensorId>& outputs,
                          const std::vector<Address>& input_storage_ptrs);

  // tree_replay.cpp
  InvariantStatus check_invariants(const GraphNode& node,
                                   const std::vector<TensorId>& inputs) const;
  Result<CallOutcome> execute_node(GraphId id, std::vector<TensorId>& inputs);
  // The parts of execute_node: E3 and E4 (true: raised, with its error
  // event), then the copies into the placeholders with their copy_in event.
  bool raise_if_recorded_dead_is_live(GraphId id);
  Result<bool> raise_if_static_pointers_changed(const GraphNode& node,
                                                const std::vector<TensorId>& inputs);
  Status copy_into_placeholders(const GraphNode& node, const std::vector<TensorId>& inputs);
  Status copy_into_placeholder(const TensorArg& dst, TensorId input, const TensorMeta& src_meta);
  Result<std::vector<TensorId>> reconstruct_outputs(GraphNode& node);
  Status check_static_inputs_alive(const GraphNode& node, const std::vector<TensorId>& inputs);
  std::string mismatch_reason(const GraphNode& node, const std::vector<TensorId>& inputs,
                              InvariantStatus status) const;
  // The cause a failed check gives a new recording (first changed pointer).
  RecordCause record_cause(const GraphNode& node, const std::vector<TensorId>& inputs,
                           InvariantStatus status) const;

  // tree_memory.cpp: liveness, checkpoints, pool checks.
  std::vector<NodeRef> path_to(std::optional<NodeRef> node) const;
  std::optional<NodeRef> parent_of(NodeRef ref) const;
  // The only way current_ changes: it keeps current_path_ in step, one
  // push_back when the new node is a child of the current one (a replay or
  // recording that extends the path), a walk from the root otherwise.
  void set_current(std::optional<NodeRef> node);
  // path_to(current_), without the walk: a decision reads the path several
  // times (check_invariants, liveness, reconstruct_outputs), and a walk per
  // read made the decisions of a 50-deep chain grow with its depth. The
  // reference is invalidated by set_current.
  const std::vector<NodeRef>& current_path() const;
  const std::vector<std::optional<StorageRef>>& node_outputs(NodeRef ref) const;
  std::uint32_t depth_of(NodeRef ref) const {
    return ref.warmup ? warmups_[ref.index].depth : graphs_[ref.index].depth;
  }
  FunctionId fid_of(NodeRef ref) const {
    return ref.warmup ? warmups_[ref.index].fid : graphs_[ref.index].fid;
  }
  std::vector<std::vector<bool>> liveness(const std::vector<NodeRef>& path) const;
  // Whether output `output` of `node` is alive: its storage has a holder
  // (StorageWeakRefWrapper's use count), and, for a cached replay output
  // before 2.15, a holder other than a pending backward's saved tensor
  // (`check_refcount`).
  bool is_live(NodeRef node, std::uint32_t output) const;
  std::vector<Address> checkpoint_live_ptrs(const GraphNode& node,
                                            const std::vector<StorageRef>& live) const;
  bool is_cuda_graph_recorded_tensor(const std::vector<NodeRef>& path, TensorId t) const;
  bool all_outputs_are_dead() const;
  std::vector<StorageRef> live_weakrefs_of(const std::vector<NodeRef>& path) const;
  Status dealloc_current_path_weakrefs();
  // cudagraph_trees_generation_cloning: moves every live user-visible output
  // storage of the current path out of the pool (2.14 on, opt-in).
  Status clone_live_user_visible_outputs();
  Status apply_checkpoint_execution_state_in_allocator();
  // check_memory_pool: false (with an error event) on a mismatch.
  bool check_memory_pool(const std::vector<StorageRef>& live, const char* where);
  Result<Address> storage_ptr(TensorId t) const;
  Result<Address> data_ptr(TensorId t) const;
  Status drop_all(std::vector<TensorId>& inputs);

  SimContext& ctx_;
  PoolId pool_;
  std::vector<WrappedFunction> functions_;
  std::vector<GraphNode> graphs_;
  std::vector<WarmupNode> warmups_;
  std::map<FunctionId, std::vector<GraphId>> roots_;
  std::optional<NodeRef> current_;
  std::vector<NodeRef> current_path_;  // path_to(current_), kept by set_current
  ExecutionState state_ = ExecutionState::kNone;
  std::int64_t current_gen_ = -1;
  bool running_forwards_with_pending_backwards_ = false;
  std::set<FunctionId> warmed_up_functions_;
  // Per function, the warmups its body marked incomplete so far.
  std::map<FunctionId, std::uint32_t> warmups_marked_incomplete_;
  std::set<FunctionId> warned_functions_;  // W1
  std::set<FunctionId> warned_mutation_;   // S1
  // non_cudagraph_managed_mutation_hint[(node, fid)]
  // Keyed by the current node's id: a GraphId, a (negative) warmup id, or none.
  std::map<std::pair<std::optional<std::int64_t>, FunctionId>, bool> mutation_hint_;
  std::map<std::pair<std::optional<std::int64_t>, FunctionId>, std::uint64_t> num_rerecord_;
  // 2.15, per (current node id, function) edge like mutation_hint_: pointer
  // changes per managed input index, the indices demoted to copies, and the
  // edges that the "skip" action sends to eager.
  using Edge = std::pair<std::optional<std::int64_t>, FunctionId>;
  std::map<Edge, std::map<std::uint32_t, std::int64_t>> managed_rerecords_;
  std::map<Edge, std::set<std::uint32_t>> demoted_managed_;
  std::set<Edge> managed_skip_edges_;
  bool shut_down_ = false;
  // The text of a skip logged under cudagraph_or_error, not yet raised.
  std::optional<std::string> pending_skip_error_;
};

}  // namespace capsim
