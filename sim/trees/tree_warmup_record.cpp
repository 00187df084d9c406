// Warmup runs and recordings (cudagraph_trees.py: `run_eager` with
// CUDAWarmupNode.run, and `record_function` with CUDAGraphNode.__init__,
// `_allocate_and_copy_recording_inputs`, `_record` and `_add_first_outputs`).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sim/core/body_interpreter.hpp"
#include "sim/trees/tree_manager.hpp"

namespace capsim {

namespace {

// _get_different_indices: (depth, idx) whose liveness differs; levels beyond
// `prev` are ignored.
std::vector<PathIndex> different_indices(const std::vector<std::vector<bool>>& prev,
                                         const std::vector<std::vector<bool>>& curr) {
  CAPSIM_CHECK(prev.size() <= curr.size());
  std::vector<PathIndex> out;
  for (std::size_t d = 0; d < prev.size(); ++d) {
    CAPSIM_CHECK(prev[d].size() == curr[d].size());
    for (std::size_t i = 0; i < prev[d].size(); ++i) {
      if (prev[d][i] != curr[d][i]) {
        out.push_back({static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(i)});
      }
    }
  }
  return out;
}

}  // namespace

Decision record_decision(InvariantStatus s) {
  switch (s) {
    case InvariantStatus::kSuccess: return Decision::kRecordFirst;
    case InvariantStatus::kCudagraphManagedIdxMismatch: return Decision::kRerecordManagedInputMoved;
    case InvariantStatus::kStaticInputIdxMismatch: return Decision::kRerecordStaticInputMoved;
    case InvariantStatus::kExpectedDeadIndicesBeforeGraphMismatch:
      return Decision::kRerecordExpectedDeadAlive;
  }
  CAPSIM_CHECK(false, "an InvariantStatus without a record decision");
  return Decision::kRecordFirst;
}

Result<CallOutcome> TreeManager::run_warmup(FunctionId fid, std::vector<TensorId>& inputs) {
  const WrappedFunction& fn = functions_[fid];
  const bool already_warm = !warmed_up_functions_.insert(fid).second;
  WarmupNode node;
  node.id = -static_cast<std::int64_t>(warmups_.size()) - 1;
  node.parent = current_;
  node.fid = fid;
  // A copy: the warmup node becomes current below.
  const std::vector<NodeRef> parent_path = current_path();
  node.depth = static_cast<std::uint32_t>(parent_path.size());
  const std::vector<StorageRef> parent_live = live_weakrefs_of(parent_path);
  // Storages of inputs that are not live path outputs: outputs over them are
  // not the pool's and are not tracked.
  std::set<Address> non_cudagraph_inps;
  for (TensorId t : inputs) {
    CAPSIM_TRY_ASSIGN(const Address ptr, storage_ptr(t));
    const bool on_path = std::any_of(parent_live.begin(), parent_live.end(),
                                     [&](const StorageRef& r) { return r.base == ptr; });
    if (!on_path) non_cudagraph_inps.insert(ptr);
  }
  warmups_.push_back(node);
  set_current(NodeRef{true, static_cast<std::uint32_t>(warmups_.size() - 1)});
  state_ = ExecutionState::kWarmup;
  update_generation();
  // PyTorch's warmup node is current and the function warm by the time its
  // run reads the inputs' storages and raises.
  if (ctx_.raise_if_overwritten(inputs, "warmup")) return CallOutcome{CallPath::kRaised, {}};
  if (!already_warm) check_memory_pool(parent_live, "before_warmup");

  BodyEnv env{ctx_.refs, ctx_.backend, pool_, nullptr};
  CAPSIM_TRY_ASSIGN(std::vector<TensorId> outputs, run_body(*fn.def, inputs, env));
  // The body's cudagraph_mark_warmup_incomplete(): the function is not warm
  // after all, so its next call warms up again (2.14 on).
  if (std::uint32_t& marked = warmups_marked_incomplete_[fid];
      marked < fn.def->warmups_marked_incomplete) {
    ++marked;
    warmed_up_functions_.erase(fid);
  }
  CAPSIM_TRY(drop_all(inputs));
  WarmupNode& stored = warmups_.back();
  for (TensorId o : outputs) {
    const Tensor& t = ctx_.store().at(o);  // the body's outputs are held
    CAPSIM_TRY_ASSIGN(const Storage s, ctx_.store().storage(t.storage));
    if (s.base == 0 || non_cudagraph_inps.count(s.base) != 0) {
      stored.outputs_weakrefs.push_back(std::nullopt);
    } else {
      stored.outputs_weakrefs.push_back(StorageRef{s.id, s.base});
    }
  }
  if (!already_warm) check_memory_pool(path_live_weakrefs(), "after_warmup");
  ++ctx_.counters.warmups;
  ctx_.emit(
      EventKind::kWarmup,
      {{F::fid, fid}, {F::function, fn.def->name}, {F::node, stored.id}, {F::depth, stored.depth}});
  return CallOutcome{CallPath::kWarmup, std::move(outputs)};
}

// Static sets (docs/cudagraph-trees.md §3.2): the compile-time set plus
// cudagraph-managed inputs, and the pointers the recording bakes in for them.
Status TreeManager::classify_inputs(GraphNode& node, const WrappedFunction& fn,
                                    const std::vector<NodeRef>& parent_path,
                                    const std::vector<TensorId>& inputs,
                                    const std::vector<std::uint32_t>& demoted) {
  const std::size_t n = inputs.size();
  std::vector<bool> is_static(n, false), is_copied_managed(n, false);
  for (std::uint32_t i : fn.static_input_idxs) is_static[i] = true;
  std::vector<bool> is_baked = is_static;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (!is_cuda_graph_recorded_tensor(parent_path, inputs[i])) continue;
    // A demoted managed input is copied in, unless it is static anyway
    // (copy_cudagraph_managed_idxs minus static_input_idxs); it stays in
    // static_input_idxs, with its pointer, as in PyTorch.
    if (!is_static[i] && std::binary_search(demoted.begin(), demoted.end(), i)) {
      node.copied_managed_idxs.push_back(i);
      is_copied_managed[i] = true;
    } else {
      node.cudagraph_managed_idxs.push_back(i);
      is_baked[i] = true;
    }
    is_static[i] = true;
  }
  node.static_input_data_ptrs.assign(n, std::nullopt);
  node.placeholders.assign(n, std::nullopt);
  node.preserved_aliased_inputs.assign(n, false);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (is_static[i]) {
      node.static_input_idxs.push_back(i);
      CAPSIM_TRY_ASSIGN(node.static_input_data_ptrs[i], data_ptr(inputs[i]));
    } else {
      node.non_static_input_idxs.push_back(i);
    }
    if (is_baked[i]) node.tensor_static_input_idxs.push_back(i);
    if (!is_static[i] || is_copied_managed[i]) node.input_copy_idxs.push_back(i);
  }
  for (std::uint32_t i : fn.static_input_idxs) {
    if (!std::binary_search(node.cudagraph_managed_idxs.begin(), node.cudagraph_managed_idxs.end(),
                            i)) {
      node.non_managed_static_input_idxs.push_back(i);
    }
  }
  return {};
}

// Placeholders: one pool buffer per input to copy (non-static inputs and
// demoted managed ones), filled by one copy. The body's inputs: the
// placeholders where the inputs are copied. Checks the
// pool before the recording.
Result<std::vector<TensorId>> TreeManager::fill_placeholders(
    GraphNode& node, const std::vector<NodeRef>& parent_path, const std::vector<TensorId>& inputs,
    std::vector<TensorId>& placeholder_ids) {
  std::vector<TensorId> body_inputs = inputs;
  std::vector<StorageRef> before_record_live = live_weakrefs_of(parent_path);
  for (std::uint32_t i : node.input_copy_idxs) {
    const Tensor src = ctx_.store().at(inputs[i]);
    const std::int64_t elements = needed_size(src.meta.sizes, src.meta.strides);
    CAPSIM_TRY_ASSIGN(const Tensor buffer, ctx_.store().empty({elements}, src.meta.dtype, pool_));
    TensorMeta meta = src.meta;
    meta.storage_offset = 0;
    // Sized to hold the input's geometry, so neither the view nor the copy
    // into it can be refused.
    const Tensor placeholder = CAPSIM_MUST(ctx_.store().view(buffer.id, meta));
    CAPSIM_TRY(ctx_.store().release(buffer.id));
    ctx_.refs.hold(placeholder.id);
    placeholder_ids.push_back(placeholder.id);
    const TensorArg dst = held_tensor_arg(ctx_.store(), placeholder.id);
    const TensorArg from = held_tensor_arg(ctx_.store(), inputs[i]);
    if (numel(meta) > 0) {
      const KernelLaunch copy = CAPSIM_MUST(launch_copy(dst, from));
      CAPSIM_TRY(ctx_.backend.run_step(Step{copy, {}}));
    }
    node.placeholders[i] = dst;
    body_inputs[i] = placeholder.id;
    CAPSIM_TRY_ASSIGN(const Storage s, ctx_.store().storage(placeholder.storage));
    if (s.base != 0) before_record_live.push_back(StorageRef{s.id, s.base});
  }
  check_memory_pool(before_record_live, "before_record");
  return body_inputs;
}

// The recorded node joins the tree under the current node (or as a root) and
// becomes current; what is alive after it is what its replays expect.
GraphNode& TreeManager::add_to_tree(GraphNode node, FunctionId fid) {
  graphs_.push_back(std::move(node));
  GraphNode& stored = graphs_.back();
  if (stored.parent) {
    graphs_[*stored.parent].children[fid].push_back(stored.id);
  } else {
    roots_[fid].push_back(stored.id);
  }
  set_current(NodeRef{false, stored.id});
  state_ = ExecutionState::kRecording;
  const std::vector<NodeRef>& path = current_path();
  stored.recorded_liveness_after_graph = liveness(path);
  for (std::uint32_t d = 0; d < path.size(); ++d) {
    const auto& level = stored.recorded_liveness_after_graph[d];
    for (std::uint32_t i = 0; i < level.size(); ++i) {
      if (level[i]) stored.live_indices_after_graph.push_back({d, i});
    }
  }
  return stored;
}

void TreeManager::emit_record(const GraphNode& node, const RecordCause& cause) {
  // The pointers the graph baked in for its static inputs, in index order.
  std::vector<Address> static_ptrs;
  for (std::uint32_t i : node.static_input_idxs) {
    static_ptrs.push_back(node.static_input_data_ptrs[i].value_or(0));
  }
  std::vector<EventField> fields{{F::fid, node.fid},
                                 {F::function, functions_[node.fid].def->name},
                                 {F::graph, node.id},
                                 {F::parent, node.parent},
                                 {F::static_, int_list(node.static_input_idxs)},
                                 {F::managed, int_list(node.cudagraph_managed_idxs)},
                                 {F::non_static, int_list(node.non_static_input_idxs)}};
  // Additive: only a recording that copies a managed input names them.
  if (!node.copied_managed_idxs.empty()) {
    fields.push_back({F::copied_managed, int_list(node.copied_managed_idxs)});
  }
  fields.push_back({F::steps, node.program_steps});
  fields.push_back({F::static_ptrs, std::move(static_ptrs)});
  fields.push_back({F::reason, decision_key(record_decision(cause.status))});
  if (cause.input) {
    fields.push_back({F::input, *cause.input});
    fields.push_back({F::old_ptr, DevicePtr{cause.old_ptr}});
    fields.push_back({F::new_ptr, DevicePtr{cause.new_ptr}});
  }
  ctx_.emit(EventKind::kRecord, std::move(fields));
}

Result<CallOutcome> TreeManager::record_function(FunctionId fid, std::vector<TensorId>& inputs,
                                                 const RecordCause& cause) {
  if (graphs_.size() >= kMaxGraphNodes) {
    return make_error(fmt::format("more than {} recordings in one tree", kMaxGraphNodes));
  }
  CAPSIM_CHECK(!current_ || !current_->warmup, "a recording never follows a warmup node");
  // CUDAGraphNode's constructor raises before the node joins the tree (PyTorch
  // has drawn a graph id by then; capsim numbers only nodes that exist).
  if (ctx_.raise_if_overwritten(inputs, "recording")) return CallOutcome{CallPath::kRaised, {}};
  const WrappedFunction& fn = functions_[fid];
  GraphNode node;
  node.id = static_cast<GraphId>(graphs_.size());
  node.fid = fid;
  node.parent = current_graph_id();
  node.depth = node.parent ? graphs_[*node.parent].depth + 1 : 0;
  // A copy: add_to_tree makes the new node current.
  const std::vector<NodeRef> parent_path = current_path();
  // _get_demoted_cudagraph_managed_idxs: looked up for the edge as it is now,
  // after try_end_curr_execution may have made this a root.
  CAPSIM_TRY(classify_inputs(node, fn, parent_path, inputs, demoted_managed_idxs(fid)));

  // Liveness the recording assumes (measured while the input list still holds
  // its tensors, so saved tensors that the graph consumes count as alive).
  std::vector<std::vector<bool>> before;
  if (node.parent) {
    before = liveness(parent_path);
    before.emplace_back();
    node.recorded_liveness_before_graph = before;
    node.expected_dead_indices_before_graph =
        different_indices(graphs_[*node.parent].recorded_liveness_after_graph, before);
  }
  std::vector<TensorId> placeholder_ids;
  CAPSIM_TRY_ASSIGN(const std::vector<TensorId> body_inputs,
                    fill_placeholders(node, parent_path, inputs, placeholder_ids));
  // Storage pointers of the inputs, for output classification after the
  // input list has been dropped.
  std::vector<Address> input_storage_ptrs;
  for (TensorId t : body_inputs) {
    CAPSIM_TRY_ASSIGN(const Address ptr, storage_ptr(t));
    input_storage_ptrs.push_back(ptr);
  }

  // Capture: the body allocates from the pool and its launches are baked.
  StepProgram program{fmt::format("{}#{}", fn.def->name, node.id), {}};
  BodyEnv env{ctx_.refs, ctx_.backend, pool_, &program};
  CAPSIM_TRY_ASSIGN(std::vector<TensorId> outputs, run_body(*fn.def, body_inputs, env));
  // `graph.replay()` inside __init__: the capture ran nothing, this computes.
  CAPSIM_TRY(ctx_.backend.materialize(ctx_.memory.layout()));
  CAPSIM_TRY_ASSIGN(node.graph, ctx_.backend.instantiate(program));
  CAPSIM_TRY(ctx_.backend.replay(node.graph));
  CAPSIM_TRY_ASSIGN(const std::optional<GraphEvidence> evidence, ctx_.replay_evidence(node.graph));
  node.program_steps = program.steps.size();
  // The boxed call cleared the input list; the placeholders die with it.
  CAPSIM_TRY(drop_all(inputs));
  CAPSIM_TRY(drop_all(placeholder_ids));
  if (node.parent) {
    std::vector<std::vector<bool>> after = liveness(parent_path);
    after.emplace_back();
    node.expected_dead_indices_after_graph = different_indices(before, after);
  }

  CAPSIM_TRY(classify_outputs(node, outputs, input_storage_ptrs));
  GraphNode& stored = add_to_tree(std::move(node), fid);
  CAPSIM_TRY_ASSIGN(stored.checkpointed_caching_state, ctx_.allocator.checkpoint(pool_));
  update_generation();
  check_memory_pool(path_live_weakrefs(), "after_record");
  ++ctx_.counters.graphs_recorded;
  ctx_.counters.cudagraph_recorded_non_static_inputs += stored.non_static_input_idxs.size();
  emit_record(stored, cause);
  ctx_.emit_device(evidence);
  return CallOutcome{CallPath::kRecord, std::move(outputs)};
}

Status TreeManager::classify_outputs(GraphNode& node, const std::vector<TensorId>& outputs,
                                     const std::vector<Address>& input_storage_ptrs) {
  // Storages of persistent static inputs (static, not managed).
  std::set<Address> persistent;
  for (std::uint32_t i : node.non_managed_static_input_idxs)
    persistent.insert(input_storage_ptrs[i]);
  const std::vector<NodeRef>& ancestors = current_path();
  std::map<Address, std::uint32_t> new_storages;
  node.unaliased_in_all_paths.assign(outputs.size(), false);
  node.cached_outputs.assign(outputs.size(), std::nullopt);
  for (std::uint32_t i = 0; i < outputs.size(); ++i) {
    const Tensor t = ctx_.store().at(outputs[i]);  // the body's outputs are held
    CAPSIM_TRY_ASSIGN(const Storage s, ctx_.store().storage(t.storage));
    OutputInfo info;
    info.meta = t.meta;
    info.storage_base = s.base;
    info.storage_nbytes = s.nbytes;
    std::optional<StorageRef> weak = StorageRef{s.id, s.base};
    if (s.base == 0 || persistent.count(s.base) != 0) {
      info.cls = OutputClass::kStatic;
      info.static_tensor = outputs[i];
      ctx_.refs.pin(outputs[i]);
      weak.reset();
    } else {
      std::optional<PathIndex> prior;
      for (std::uint32_t d = 0; d < ancestors.size() && !prior; ++d) {
        const auto& refs = node_outputs(ancestors[d]);
        for (std::uint32_t k = 0; k < refs.size(); ++k) {
          if (is_live(ancestors[d], k) && refs[k]->base == s.base) {
            prior = PathIndex{d, k};
            break;
          }
        }
      }
      if (prior) {
        info.cls = OutputClass::kAliasPrior;
        info.prior = *prior;
        graphs_[ancestors[prior->depth].index].unaliased_in_all_paths[prior->index] = false;
        for (std::uint32_t j : node.cudagraph_managed_idxs) {
          if (input_storage_ptrs[j] == s.base) node.preserved_aliased_inputs[j] = true;
        }
      } else if (auto it = new_storages.find(s.base); it != new_storages.end()) {
        info.cls = OutputClass::kAliasNew;
        info.new_index = it->second;
        node.unaliased_in_all_paths[it->second] = false;
      } else {
        info.cls = OutputClass::kFresh;
        new_storages.emplace(s.base, i);
        node.unaliased_in_all_paths[i] = true;
      }
    }
    node.outputs.push_back(info);
    node.outputs_weakrefs.push_back(weak);
  }
  return {};
}

}  // namespace capsim
