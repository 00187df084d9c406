// Replays (cudagraph_trees.py: `check_invariants`, `execute_node`,
// CUDAGraphNode.run, `reconstruct_outputs`; docs/cudagraph-trees.md §4 and
// §5.2).
#include <fmt/format.h>

#include <algorithm>

#include "sim/core/body_interpreter.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/eager_oracle.hpp"
#include "sim/core/messages.hpp"
#include "sim/trees/tree_manager.hpp"

namespace capsim {

namespace {
// Whether every output holds, bit for bit, what eager execution computed
// (Counters::replay_mismatches); stops at the first that differs.
Result<bool> outputs_equal(const TensorStore& store, const DeviceMemory& memory,
                           const std::vector<TensorId>& outputs,
                           const std::vector<ElementBits>& expected) {
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    CAPSIM_TRY_ASSIGN(const TensorArg out, tensor_arg(store, outputs[k]));
    CAPSIM_TRY_ASSIGN(const ElementBits got, gather_bits(memory, out.address, out.meta));
    if (got != expected[k]) return false;
  }
  return true;
}
}  // namespace

InvariantStatus TreeManager::check_invariants(const GraphNode& node,
                                              const std::vector<TensorId>& inputs) const {
  auto ptr_matches = [&](std::uint32_t i) {
    auto ptr = data_ptr(inputs[i]);
    return ptr && node.static_input_data_ptrs[i] && *ptr == *node.static_input_data_ptrs[i];
  };
  for (std::uint32_t i : node.cudagraph_managed_idxs) {
    if (!ptr_matches(i)) return InvariantStatus::kCudagraphManagedIdxMismatch;
  }
  const std::vector<NodeRef>& path = current_path();
  for (const PathIndex& i : node.expected_dead_indices_before_graph) {
    if (i.depth < path.size() && is_live(path[i.depth], i.index)) {
      return InvariantStatus::kExpectedDeadIndicesBeforeGraphMismatch;
    }
  }
  if (rerecord_if_static_inputs_change(ctx_.config) && ctx_.fault != Fault::kIgnoreStaticPointers) {
    for (std::uint32_t i : node.tensor_static_input_idxs) {
      if (!ptr_matches(i)) return InvariantStatus::kStaticInputIdxMismatch;
    }
  }
  return InvariantStatus::kSuccess;
}

RecordCause TreeManager::record_cause(const GraphNode& node, const std::vector<TensorId>& inputs,
                                      InvariantStatus status) const {
  RecordCause cause{status, std::nullopt, 0, 0};
  if (status != InvariantStatus::kStaticInputIdxMismatch &&
      status != InvariantStatus::kCudagraphManagedIdxMismatch) {
    return cause;
  }
  const bool managed = status == InvariantStatus::kCudagraphManagedIdxMismatch;
  for (std::uint32_t i : managed ? node.cudagraph_managed_idxs : node.tensor_static_input_idxs) {
    auto ptr = data_ptr(inputs[i]);
    const Address old_ptr = node.static_input_data_ptrs[i].value_or(0);
    if (ptr && *ptr != old_ptr) return RecordCause{status, i, old_ptr, *ptr};
  }
  return cause;
}

std::string TreeManager::mismatch_reason(const GraphNode& node, const std::vector<TensorId>& inputs,
                                         InvariantStatus status) const {
  // CheckInvariantStatus's own text, with no input lines.
  if (status == InvariantStatus::kExpectedDeadIndicesBeforeGraphMismatch) {
    return messages::liveness_mismatch_reason();
  }
  const bool managed = status == InvariantStatus::kCudagraphManagedIdxMismatch;
  const std::vector<std::uint32_t>& idxs =
      managed ? node.cudagraph_managed_idxs : node.tensor_static_input_idxs;
  std::vector<messages::PointerChange> changes;
  for (std::uint32_t i : idxs) {
    auto ptr = data_ptr(inputs[i]);
    const Address old_ptr = node.static_input_data_ptrs[i].value_or(0);
    if (ptr && *ptr != old_ptr) {
      changes.push_back({functions_[node.fid].def->input_names[i], old_ptr, *ptr});
    }
  }
  std::string text = messages::static_pointer_changed(changes);
  if (managed) {
    const std::string header = "static input data pointer changed.\n";
    text = messages::managed_pointer_changed_reason() + "\n" + text.substr(header.size());
  }
  return text;
}

bool TreeManager::raise_if_recorded_dead_is_live(GraphId id) {
  const std::vector<NodeRef>& path = current_path();
  for (const PathIndex& i : graphs_[id].expected_dead_indices_after_graph) {
    if (i.depth < path.size() && is_live(path[i.depth], i.index)) {
      ctx_.emit(EventKind::kError, {{F::id, decision_key(Decision::kErrorDeadOutputAlive)},
                                    {F::exception, "RuntimeError"},
                                    {F::graph, id},
                                    {F::message, messages::dealloc_during_recording()}});
      return true;
    }
  }
  return false;
}

// check_static_inputs_are_stable: error mode only (E4).
Result<bool> TreeManager::raise_if_static_pointers_changed(const GraphNode& node,
                                                           const std::vector<TensorId>& inputs) {
  if (rerecord_if_static_inputs_change(ctx_.config)) return false;
  const WrappedFunction& fn = functions_[node.fid];
  std::vector<messages::PointerChange> changes;
  for (std::uint32_t i : node.non_managed_static_input_idxs) {
    CAPSIM_TRY_ASSIGN(const Address ptr, data_ptr(inputs[i]));
    const Address old_ptr = node.static_input_data_ptrs[i].value_or(0);
    if (ptr != old_ptr) changes.push_back({fn.def->input_names[i], old_ptr, ptr});
  }
  if (changes.empty()) return false;
  ctx_.emit(EventKind::kError, {{F::id, decision_key(Decision::kErrorStaticInputMoved)},
                                {F::exception, "RuntimeError"},
                                {F::graph, node.id},
                                {F::message, messages::static_pointer_changed(changes)}});
  return true;
}

// One input into its placeholder. Where both are dense over the same sizes
// and dtype and do not partly overlap (almost every copy a replay makes), the
// copy kernel would move each element's bytes to the same offset: one block
// copy does exactly that, without building a KernelLaunch per copy (the
// launches were most of a steady replay's profile). Strided, expanded and
// converting copies take the kernel.
Status TreeManager::copy_into_placeholder(const TensorArg& dst, TensorId input,
                                          const TensorMeta& src_meta) {
  CAPSIM_TRY_ASSIGN(const Address src, ctx_.store().data_address(input));
  const bool dense = src_meta.dtype == dst.meta.dtype && src_meta.sizes == dst.meta.sizes &&
                     is_contiguous(src_meta) && is_contiguous(dst.meta);
  if (dense) {
    const std::uint64_t bytes = extent_bytes(dst.meta);
    CAPSIM_CHECK(bytes > 0, "an empty placeholder is skipped before its copy");
    const bool apart = src + bytes <= dst.address || dst.address + bytes <= src;
    if (apart || src == dst.address) {
      return ctx_.backend.run_step(Step{CopyStep{dst.address, src, bytes}, {}});
    }
  }
  CAPSIM_TRY_ASSIGN(const KernelLaunch copy, launch_copy(dst, TensorArg{src, src_meta}));
  return ctx_.backend.run_step(Step{copy, {}});
}

// One copy per input to copy into its placeholder (a foreach copy).
Status TreeManager::copy_into_placeholders(const GraphNode& node,
                                           const std::vector<TensorId>& inputs) {
  std::uint64_t copies = 0, bytes = 0;
  for (std::uint32_t i : node.input_copy_idxs) {
    if (ctx_.fault == Fault::kSkipCopyIn) break;
    if (ctx_.fault == Fault::kDemotedNotCopied &&
        std::binary_search(node.copied_managed_idxs.begin(), node.copied_managed_idxs.end(), i)) {
      continue;
    }
    const TensorArg& dst = *node.placeholders[i];
    const Tensor* src = ctx_.store().find(inputs[i]);
    if (src == nullptr) return make_error(fmt::format("unknown tensor {}", inputs[i].value));
    ++copies;
    // The injected bug (`capsim check --inject skip_first_copy`,
    // docs/properties.md): an off-by-one that counts the first non-static
    // input but never copies it, so the replay reads whatever its placeholder
    // last held.
    if (ctx_.fault == Fault::kSkipFirstCopy && copies == 1) continue;
    if (numel(dst.meta) == 0) continue;
    CAPSIM_TRY(copy_into_placeholder(dst, inputs[i], src->meta));
    // A stride-0 (expanded) dimension is copied once, as index_expanded_dims.
    bytes += extent_bytes(dst.meta);
  }
  ctx_.counters.copies += copies;
  ctx_.counters.copy_bytes += bytes;
  ctx_.emit(EventKind::kCopyIn, {{F::fid, node.fid},
                                 {F::function, functions_[node.fid].def->name},
                                 {F::graph, node.id},
                                 {F::copies, copies},
                                 {F::bytes, bytes}});
  return {};
}

Result<CallOutcome> TreeManager::execute_node(GraphId id, std::vector<TensorId>& inputs) {
  // What eager execution would compute, from the inputs as they are now.
  std::optional<std::vector<ElementBits>> expected;
  if (ctx_.verify_replays) {
    CAPSIM_CHECK(ctx_.oracle != nullptr, "verify_replays comes with an oracle");
    CAPSIM_TRY_ASSIGN(expected, ctx_.oracle->outputs(*functions_[graphs_[id].fid].def, ctx_.store(),
                                                     ctx_.memory, inputs));
  }
  // The pointers the replay finds at the static positions, before managed
  // inputs leave the list; a trace checks them against the recording's (a
  // stale read shows as a difference).
  std::vector<Address> static_ptrs;
  for (std::uint32_t i : graphs_[id].static_input_idxs) {
    auto ptr = data_ptr(inputs[i]);
    static_ptrs.push_back(ptr ? *ptr : 0);
  }
  // The tail of check_invariants: managed inputs leave the list so that they
  // may die; what died during the recording must now be dead (E3).
  for (std::uint32_t i : graphs_[id].cudagraph_managed_idxs) {
    if (graphs_[id].preserved_aliased_inputs[i]) continue;
    CAPSIM_TRY(ctx_.refs.drop(inputs[i]));
    inputs[i] = TensorId{0};
  }
  if (raise_if_recorded_dead_is_live(id)) return CallOutcome{CallPath::kRaised, {}};
  set_current(NodeRef{false, id});
  state_ = ExecutionState::kExecution;
  update_generation();
  // The node is current when its run reads the inputs (to copy them) and raises.
  if (ctx_.raise_if_overwritten(inputs, "replay")) return CallOutcome{CallPath::kRaised, {}};
  GraphNode& node = graphs_[id];
  CAPSIM_TRY_ASSIGN(const bool changed, raise_if_static_pointers_changed(node, inputs));
  if (changed) return CallOutcome{CallPath::kRaised, {}};
  CAPSIM_TRY(copy_into_placeholders(node, inputs));

  if (ctx_.verify_replays) CAPSIM_TRY(check_static_inputs_alive(node, inputs));
  CAPSIM_TRY(ctx_.backend.replay(node.graph));
  CAPSIM_TRY_ASSIGN(const std::optional<GraphEvidence> evidence, ctx_.replay_evidence(node.graph));
  CAPSIM_TRY_ASSIGN(std::vector<TensorId> outputs, reconstruct_outputs(node));
  for (TensorId& t : inputs) {
    if (t != TensorId{0}) CAPSIM_TRY(ctx_.refs.drop(t));
  }
  inputs.clear();
  ++ctx_.counters.replays;
  std::vector<EventField> fields{{F::fid, node.fid},
                                 {F::function, functions_[node.fid].def->name},
                                 {F::graph, id},
                                 {F::static_ptrs, static_ptrs}};
  if (expected) {
    ++ctx_.counters.replay_checks;
    CAPSIM_TRY_ASSIGN(const bool equal,
                      outputs_equal(ctx_.store(), ctx_.memory, outputs, *expected));
    if (!equal) ctx_.counters.note_replay_mismatch(ctx_.events.size());
  }
  ctx_.emit(EventKind::kReplay, std::move(fields));
  ctx_.emit_device(evidence);
  return CallOutcome{CallPath::kReplay, std::move(outputs)};
}

Status TreeManager::check_static_inputs_alive(const GraphNode& node,
                                              const std::vector<TensorId>& inputs) {
  // P-static: every static input the graph baked in is still the memory of a
  // live storage at the recorded address. Managed inputs that were dropped
  // from the list are checked through the path's weak references instead;
  // demoted ones are copied, not baked in.
  for (std::uint32_t i : node.tensor_static_input_idxs) {
    if (inputs[i] == TensorId{0}) continue;
    auto ptr = data_ptr(inputs[i]);
    const Tensor* tensor = ctx_.store().find(inputs[i]);
    const bool moved = !ptr || *ptr != node.static_input_data_ptrs[i].value_or(0);
    // An owning storage must still hold its block. A non-owning one (a
    // replayed output the pool tracks through weak references) is never in the
    // allocator's books during execution; it must only not have been
    // deallocated by a generation change.
    bool freed = tensor == nullptr;
    if (tensor != nullptr) {
      auto storage = ctx_.store().storage(tensor->storage);
      freed = !storage.ok() || ctx_.refs.access_error(tensor->storage) ||
              (storage->base != 0 && ctx_.store().owns_block(tensor->storage) &&
               !ctx_.allocator.block_at(storage->base).ok());
    }
    if (moved || freed) ++ctx_.counters.static_violations;
  }
  return {};
}

Result<std::vector<TensorId>> TreeManager::reconstruct_outputs(GraphNode& node) {
  const std::vector<NodeRef>& path = current_path();
  std::vector<TensorId> outputs;
  for (std::uint32_t i = 0; i < node.outputs.size(); ++i) {
    const OutputInfo& info = node.outputs[i];
    TensorId out{0};
    switch (info.cls) {
      case OutputClass::kStatic: out = *info.static_tensor; break;
      case OutputClass::kAliasPrior: {
        const auto& prior = node_outputs(path[info.prior.depth])[info.prior.index];
        // The storage itself, while anything holds it: a view of it, never a
        // second storage over the same bytes.
        if (prior && ctx_.refs.storage_live(prior->id)) {
          CAPSIM_TRY_ASSIGN(const Tensor t, ctx_.store().view_of_storage(prior->id, info.meta));
          out = t.id;
        } else {
          CAPSIM_TRY_ASSIGN(const Tensor t, ctx_.store().from_address(info.storage_base, info.meta,
                                                                      pool_, info.storage_nbytes));
          out = t.id;
        }
        break;
      }
      case OutputClass::kAliasNew: {
        // An output this reconstruction made (and holds) a moment ago.
        const Tensor base = ctx_.store().at(outputs[info.new_index]);
        CAPSIM_TRY_ASSIGN(const Tensor t, ctx_.store().view_of_storage(base.storage, info.meta));
        out = t.id;
        break;
      }
      case OutputClass::kFresh: {
        if (node.cached_outputs[i]) {
          out = *node.cached_outputs[i];
          break;
        }
        CAPSIM_TRY_ASSIGN(const Tensor t, ctx_.store().from_address(info.storage_base, info.meta,
                                                                    pool_, info.storage_nbytes));
        out = t.id;
        if (node.unaliased_in_all_paths[i]) {
          // A cached tensor: the same object every replay until a checkpoint.
          node.cached_outputs[i] = out;
          ctx_.refs.pin(out);
        }
        break;
      }
    }
    ctx_.refs.hold(out);
    outputs.push_back(out);
    if (info.cls != OutputClass::kStatic) {
      node.outputs_weakrefs[i] = StorageRef{ctx_.store().at(out).storage, info.storage_base};
    }
  }
  return outputs;
}

}  // namespace capsim
