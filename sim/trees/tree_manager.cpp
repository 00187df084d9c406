// The state machine of CUDAGraphTreeManager: `run`, generations, the mutation
// gate and the re-record limit (cudagraph_trees.py, `_run`; docs/cudagraph-trees.md §2 and
// §4). Recording and warmup are in tree_warmup_record.cpp, replay in
// tree_replay.cpp, liveness and checkpoints in tree_memory.cpp.
#include "sim/trees/tree_manager.hpp"
#include "sim/core/decisions.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/core/body_interpreter.hpp"
#include "sim/core/messages.hpp"

namespace capsim {

TreeManager::TreeManager(SimContext& ctx, PoolId pool) : ctx_(ctx), pool_(pool) {}

FunctionId TreeManager::add_function(WrappedFunction fn) {
  fn.id = static_cast<FunctionId>(functions_.size());
  functions_.push_back(std::move(fn));
  return functions_.back().id;
}

ExecutionState TreeManager::path_state() const {
  return current_ ? state_ : ExecutionState::kNone;
}

std::optional<GraphId> TreeManager::current_graph_id() const {
  if (!current_ || current_->warmup) return std::nullopt;
  return current_->index;
}

std::optional<std::int64_t> TreeManager::current_node_id() const {
  if (!current_) return std::nullopt;
  return current_->warmup ? warmups_[current_->index].id
                          : static_cast<std::int64_t>(current_->index);
}

std::uint64_t TreeManager::num_rerecord(std::optional<std::int64_t> node, FunctionId fid) const {
  auto it = num_rerecord_.find({node, fid});
  return it == num_rerecord_.end() ? 0 : it->second;
}

std::vector<std::size_t> TreeManager::root_children() const {
  std::vector<std::size_t> out;
  for (const auto& [fid, ids] : roots_) {
    for (GraphId root : ids) {
      std::size_t n = 0;
      std::vector<GraphId> stack{root};
      while (!stack.empty()) {
        const GraphId g = stack.back();
        stack.pop_back();
        for (const auto& [child_fid, children] : graphs_[g].children) {
          n += children.size();
          stack.insert(stack.end(), children.begin(), children.end());
        }
      }
      out.push_back(n);
    }
  }
  return out;
}

bool TreeManager::in_new_torch_compile_invocation() const {
  return current_gen_ != ctx_.generations.current();
}

bool TreeManager::can_start_new_generation() const {
  if (!in_new_torch_compile_invocation()) return false;
  return ctx_.generations.user_invoked_mark_step() || !running_forwards_with_pending_backwards_;
}

void TreeManager::clear_current_path(const char* reason) {
  ctx_.emit(EventKind::kPathEnd, {{F::reason, reason}});
  set_current(std::nullopt);
  state_ = ExecutionState::kNone;
}

Status TreeManager::try_end_curr_recording_or_warmup(FunctionId fid) {
  if (can_start_new_generation()) {
    CAPSIM_TRY(clone_live_user_visible_outputs());
    CAPSIM_TRY(dealloc_current_path_weakrefs());
    clear_current_path("new_generation");
    return {};
  }
  if (all_outputs_are_dead()) {
    clear_current_path("outputs_dead");
    return {};
  }
  check_warn_on_unable_to_start_executing(fid);
  return {};
}

Status TreeManager::try_end_curr_execution() {
  CAPSIM_CHECK(state_ != ExecutionState::kRecording);
  if (!current_) return {};
  if (can_start_new_generation()) {
    // Cloning runs from EXECUTION too: a replay's outputs are not poisoned,
    // but would be overwritten.
    CAPSIM_TRY(clone_live_user_visible_outputs());
    clear_current_path("new_generation");
  } else if (all_outputs_are_dead()) {
    clear_current_path("outputs_dead");
  }
  return {};
}

void TreeManager::check_warn_on_unable_to_start_executing(FunctionId fid) {
  if (warned_functions_.count(fid) != 0 || !in_new_torch_compile_invocation()) return;
  CAPSIM_CHECK(current_.has_value());
  const std::vector<NodeRef>& path = current_path();
  std::vector<NodeRef> existing;
  for (NodeRef r : path) {
    if (fid_of(r) == fid) existing.push_back(r);
  }
  if (existing.size() <= 1) return;
  std::set<FunctionId> parents;
  std::vector<NodeRef> considered = existing;
  considered.push_back(*current_);
  for (NodeRef r : considered) {
    if (auto p = parent_of(r)) parents.insert(fid_of(*p));
  }
  if (parents.size() == existing.size()) return;
  warned_functions_.insert(fid);
  ctx_.emit(EventKind::kWarning,
            {{F::id, decision_key(Decision::kWarnPendingBackward)},
             {F::fid, fid},
             {F::message, messages::pending_backward(profile_rules(ctx_.config.torch_profile))}});
}

bool TreeManager::exceed_rerecord_limit(std::optional<std::int64_t> node, FunctionId fid) const {
  if (ctx_.fault == Fault::kIgnoreSkipE5) return false;
  switch (profile_rules(ctx_.config.torch_profile).rerecord_limit) {
    case RerecordLimit::kNever: return false;
    case RerecordLimit::kUnlessInlined:
      if (inline_inbuilt_nn_modules(ctx_.config)) return false;
      break;
    case RerecordLimit::kAlways: break;
  }
  return static_cast<std::int64_t>(num_rerecord(node, fid)) >
         ctx_.config.cudagraph_unexpected_rerecord_limit;
}

bool TreeManager::counts_toward_rerecord_limit(InvariantStatus status) const {
  const TorchProfileRules& rules = profile_rules(ctx_.config.torch_profile);
  switch (status) {
    case InvariantStatus::kSuccess: return false;
    case InvariantStatus::kCudagraphManagedIdxMismatch: return true;
    case InvariantStatus::kStaticInputIdxMismatch: return rules.static_mismatch_counts;
    case InvariantStatus::kExpectedDeadIndicesBeforeGraphMismatch:
      return rules.liveness_mismatch_counts;
  }
  return false;
}

bool TreeManager::mutation_blocks(FunctionId fid, const std::vector<TensorId>& inputs,
                                  bool recompute) {
  const auto key = std::make_pair(current_node_id(), fid);
  if (!recompute) {
    auto it = mutation_hint_.find(key);
    if (it != mutation_hint_.end()) return it->second;
  }
  const WrappedFunction& fn = functions_[fid];
  const std::vector<NodeRef>& path = current_path();
  std::size_t instances = 0;
  std::vector<std::uint32_t> mutated;  // the inputs that block, for the skip event
  for (std::uint32_t idx : fn.mutated_input_idxs) {
    const bool is_static =
        std::binary_search(fn.static_input_idxs.begin(), fn.static_input_idxs.end(), idx);
    if (!is_static && !is_cuda_graph_recorded_tensor(path, inputs[idx])) {
      ++instances;
      mutated.push_back(idx);
    }
  }
  const bool blocked = instances > 0 && ctx_.fault != Fault::kIgnoreSkipS1Runtime;
  mutation_hint_[key] = blocked;
  if (blocked && warned_mutation_.insert(fid).second) {
    const std::string message =
        messages::mutated_inputs(instances, mutation_stack_trace(*fn.def, mutated));
    ++ctx_.counters.cudagraph_skips;
    ctx_.emit(EventKind::kSkip, {{F::id, decision_key(Decision::kSkipMutatedInputs)},
                                 {F::fid, fid},
                                 {F::inputs, int_list(mutated)},
                                 {F::message, message}});
    if (skips_raise()) pending_skip_error_ = message;
  }
  return blocked;
}

bool TreeManager::skips_raise() const {
  return cudagraph_or_error(ctx_.config);
}

Result<CallOutcome> TreeManager::skip_or_fallback(FunctionId fid, std::vector<TensorId>& inputs,
                                                  Decision reason) {
  if (!pending_skip_error_) return run_eager_fallback(fid, inputs, reason);
  // cudagraph_or_error: log_cudagraph_skip_and_bump_counter raises after it
  // logged; the skip is remembered, so the next call runs eagerly.
  CAPSIM_TRY(drop_all(inputs));
  ctx_.emit(EventKind::kError, {{F::id, decision_key(Decision::kErrorSkipRaised)},
                                {F::exception, "RuntimeError"},
                                {F::where, "run"},
                                {F::message, *std::exchange(pending_skip_error_, std::nullopt)}});
  return CallOutcome{CallPath::kRaised, {}};
}

Result<CallOutcome> TreeManager::run_eager_fallback(FunctionId fid, std::vector<TensorId>& inputs,
                                                    Decision reason) {
  CAPSIM_CHECK(decision_info(reason).kind == EventKind::kEager, "an eager run's reason");
  const WrappedFunction& fn = functions_[fid];
  BodyEnv env{ctx_.refs, ctx_.backend, kDefaultPool, nullptr};
  CAPSIM_TRY_ASSIGN(std::vector<TensorId> outputs, run_body(*fn.def, inputs, env));
  CAPSIM_TRY(drop_all(inputs));
  ++ctx_.counters.eager_fallbacks;
  ctx_.emit(EventKind::kEager,
            {{F::fid, fid}, {F::function, fn.def->name}, {F::reason, decision_key(reason)}});
  return CallOutcome{CallPath::kEager, std::move(outputs)};
}

Result<CallOutcome> TreeManager::run(FunctionId fid, std::vector<TensorId> inputs) {
  CAPSIM_CHECK(fid < functions_.size(), "run of an unknown FunctionId");
  if (shut_down_) {
    CAPSIM_TRY(drop_all(inputs));
    ctx_.emit(EventKind::kError, {{F::id, decision_key(Decision::kErrorAfterShutdown)},
                                  {F::exception, "AssertionError"},
                                  {F::message, messages::after_shutdown()}});
    return CallOutcome{CallPath::kRaised, {}};
  }
  auto outcome = run_inner(fid, inputs);
  if (!inputs.empty()) CAPSIM_TRY(drop_all(inputs));
  if (outcome && outcome->path != CallPath::kRaised) {
    switch (functions_[fid].mode()) {
      case CompilationMode::kForward: running_forwards_with_pending_backwards_ = true; break;
      case CompilationMode::kBackward: running_forwards_with_pending_backwards_ = false; break;
      case CompilationMode::kInference: break;
    }
  }
  return outcome;
}

namespace {
// E5: the re-record limit is passed, so the call skips cudagraphs (with the
// first changed pointer when there is one) and runs eagerly.
std::string emit_rerecord_limit_skip(SimContext& ctx, FunctionId fid, std::optional<GraphId> node,
                                     const RecordCause& cause, const std::string& reason) {
  ++ctx.counters.cudagraph_skips;
  std::vector<EventField> fields{{F::id, decision_key(Decision::kSkipRerecordLimit)},
                                 {F::fid, fid},
                                 {F::reason, decision_key(record_decision(cause.status))}};
  if (cause.input) {
    fields.push_back({F::input, *cause.input});
    fields.push_back({F::old_ptr, DevicePtr{cause.old_ptr}});
    fields.push_back({F::new_ptr, DevicePtr{cause.new_ptr}});
  }
  std::string message =
      messages::rerecord_limit(fid, ctx.config.cudagraph_unexpected_rerecord_limit, node, reason);
  fields.push_back({F::message, message});
  ctx.emit(EventKind::kSkip, std::move(fields));
  return message;
}
}  // namespace

Result<CallOutcome> TreeManager::run_inner(FunctionId fid, std::vector<TensorId>& inputs) {
  // 1-2. End the current recording or warmup if a new generation may start or
  // everything it produced is dead.
  if (current_ && state_ == ExecutionState::kRecording) {
    CAPSIM_TRY(try_end_curr_recording_or_warmup(fid));
  }
  if (current_ && state_ == ExecutionState::kWarmup) {
    CAPSIM_TRY(try_end_curr_recording_or_warmup(fid));
  }
  // 3-4. The mutation gate and the re-record limit.
  if (mutation_blocks(fid, inputs, false)) {
    return skip_or_fallback(fid, inputs, Decision::kEagerMutatedInputs);
  }
  if (exceed_rerecord_limit(current_node_id(), fid)) {
    return run_eager_fallback(fid, inputs, Decision::kEagerRerecordLimit);
  }
  if (managed_skip_edges_.count({current_node_id(), fid}) != 0) {
    return run_eager_fallback(fid, inputs, Decision::kEagerManagedInputLimit);
  }
  // 5. Warmup: a fresh function, or a path that is warming up (sticky).
  const bool in_warmup = current_ && state_ == ExecutionState::kWarmup;
  if ((warmed_up_functions_.count(fid) == 0 && !ctx_.config.skip_cudagraph_warmup) || in_warmup ||
      ctx_.config.force_cudagraphs_warmup) {
    if (current_ && state_ == ExecutionState::kExecution) {
      CAPSIM_TRY(apply_checkpoint_execution_state_in_allocator());
    }
    return run_warmup(fid, inputs);
  }
  // 6-7. Replay the first child whose invariants hold, or decide why not.
  RecordCause cause;
  if (!(current_ && state_ == ExecutionState::kRecording)) {
    std::optional<Result<CallOutcome>> decided = replay_or_rerecord(fid, inputs, cause);
    if (decided) return std::move(*decided);
  }
  // 8. Record, as a root or as a child of the current node.
  return record_function(fid, inputs, cause);
}

TreeManager::ChildMatch TreeManager::match_children(FunctionId fid,
                                                    const std::vector<TensorId>& inputs) const {
  ChildMatch m;
  const std::map<FunctionId, std::vector<GraphId>>& children =
      current_ ? graphs_[current_->index].children : roots_;
  const TorchProfileRules& rules = profile_rules(ctx_.config.torch_profile);
  auto it = children.find(fid);
  if (it == children.end()) return m;
  m.latest = it->second.empty() ? std::nullopt : std::optional(it->second.back());
  for (GraphId child : it->second) {
    const InvariantStatus status = check_invariants(graphs_[child], inputs);
    if (status == InvariantStatus::kSuccess) {
      m.hit = child;
      return m;
    }
    // A pointer mismatch names the cause over a liveness mismatch.
    if (!m.unexpected) m.cause = record_cause(graphs_[child], inputs, status);
    const bool counts = counts_toward_rerecord_limit(status);
    if (counts) m.unexpected = status;
    if (counts || rules.reason_from_last_failure) {
      m.unexpected_reason = mismatch_reason(graphs_[child], inputs, status);
    }
  }
  return m;
}

std::optional<Result<CallOutcome>> TreeManager::replay_or_rerecord(FunctionId fid,
                                                                   std::vector<TensorId>& inputs,
                                                                   RecordCause& cause) {
  const WrappedFunction& fn = functions_[fid];
  ChildMatch m = match_children(fid, inputs);
  if (m.hit) return execute_node(*m.hit, inputs);
  cause = m.cause;
  if (current_ && roots_.count(fid) != 0) {
    CAPSIM_TRY(try_end_curr_execution());
    if (!current_) return run_inner(fid, inputs);
  }
  if (!fn.mutated_input_idxs.empty() && mutation_blocks(fid, inputs, true)) {
    return skip_or_fallback(fid, inputs, Decision::kEagerMutatedInputs);
  }
  // 2.15: the managed inputs whose pointers changed since the newest
  // recording on this edge (not the older ones: inputs that settled stop
  // being charged).
  std::vector<std::uint32_t> reached;
  if (managed_input_rerecord_limit(ctx_.config) && m.latest) {
    const std::vector<std::uint32_t> idxs = demotable_managed_idxs(graphs_[*m.latest], inputs);
    if (!idxs.empty()) reached = update_managed_input_rerecord(fid, idxs);
  }
  if (m.unexpected) {
    const std::optional<GraphId> node = current_graph_id();
    ++num_rerecord_[{current_node_id(), fid}];
    if (!reached.empty()) {
      std::string message = emit_managed_input_skip(fid, node, reached);
      if (skips_raise()) pending_skip_error_ = std::move(message);
      return skip_or_fallback(fid, inputs, Decision::kEagerManagedInputLimit);
    }
    if (exceed_rerecord_limit(current_node_id(), fid)) {
      std::string message = emit_rerecord_limit_skip(ctx_, fid, node, cause, m.unexpected_reason);
      if (skips_raise()) pending_skip_error_ = std::move(message);
      return skip_or_fallback(fid, inputs, Decision::kEagerRerecordLimit);
    }
    ++ctx_.counters.rerecords;
  }
  CAPSIM_TRY(try_end_curr_execution());
  if (current_) CAPSIM_TRY(apply_checkpoint_execution_state_in_allocator());
  return std::nullopt;  // the call records
}

Status TreeManager::drop_all(std::vector<TensorId>& inputs) {
  Status first;
  for (TensorId t : inputs) {
    if (t == TensorId{0}) continue;  // already dropped
    Status s = ctx_.refs.drop(t);
    if (!s && first) first = s;
  }
  inputs.clear();
  return first;
}

Status TreeManager::shutdown() {
  if (shut_down_) return {};
  shut_down_ = true;
  set_current(std::nullopt);
  state_ = ExecutionState::kNone;
  for (GraphNode& node : graphs_) {
    for (auto& cached : node.cached_outputs) {
      if (cached) CAPSIM_TRY(ctx_.refs.unpin(*cached));
      cached.reset();
    }
    for (OutputInfo& out : node.outputs) {
      if (out.static_tensor) CAPSIM_TRY(ctx_.refs.unpin(*out.static_tensor));
      out.static_tensor.reset();
    }
  }
  ctx_.emit(EventKind::kShutdown, {{F::graphs, graphs_.size()}});
  return {};
}

}  // namespace capsim
