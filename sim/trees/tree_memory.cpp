// Liveness, deallocation, checkpoints and pool checks of the tree manager
// (docs/cudagraph-trees.md §5: cudagraph_trees.py `_get_liveness`,
// `path_live_weakrefs`, `dealloc_current_path_weakrefs`,
// `apply_checkpoint_execution_state_in_allocator` and `check_memory_pool`).
#include <fmt/format.h>

#include <algorithm>

#include "sim/core/decisions.hpp"
#include "sim/core/messages.hpp"
#include "sim/trees/tree_manager.hpp"

namespace capsim {

std::vector<NodeRef> TreeManager::path_to(std::optional<NodeRef> node) const {
  std::vector<NodeRef> path;
  while (node) {
    path.push_back(*node);
    if (node->warmup) {
      node = warmups_[node->index].parent;
    } else if (auto p = graphs_[node->index].parent) {
      node = NodeRef{false, *p};
    } else {
      node.reset();
    }
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::optional<NodeRef> TreeManager::parent_of(NodeRef ref) const {
  if (ref.warmup) return warmups_[ref.index].parent;
  if (auto p = graphs_[ref.index].parent) return NodeRef{false, *p};
  return std::nullopt;
}

void TreeManager::set_current(std::optional<NodeRef> node) {
  if (!node) {
    current_path_.clear();
  } else if (parent_of(*node) == current_) {
    current_path_.push_back(*node);
  } else {
    current_path_ = path_to(node);
  }
  current_ = node;
  CAPSIM_CHECK(current_path_.size() == (current_ ? depth_of(*current_) + 1 : 0),
               "the current path runs from a root to the current node");
}

const std::vector<NodeRef>& TreeManager::current_path() const {
  CAPSIM_CHECK(
      current_path_.empty() == !current_ && (!current_ || current_path_.back() == *current_),
      "current_path_ follows current_ (set_current is the only writer)");
  return current_path_;
}

const std::vector<std::optional<StorageRef>>& TreeManager::node_outputs(NodeRef ref) const {
  return ref.warmup ? warmups_[ref.index].outputs_weakrefs : graphs_[ref.index].outputs_weakrefs;
}

bool TreeManager::is_live(NodeRef node, std::uint32_t output) const {
  const std::optional<StorageRef>& ref = node_outputs(node)[output];
  if (!ref || !ctx_.refs.storage_live(ref->id)) return false;
  if (node.warmup || profile_rules(ctx_.config.torch_profile).saved_tensor_keeps_output_live) {
    return true;
  }
  // Up to 2.14 check_refcount counts the extra C++ use of a cached tensor
  // (autograd's SavedVariable) as the expected baseline, not as a holder.
  const std::optional<TensorId>& cached = graphs_[node.index].cached_outputs[output];
  return !cached || !ctx_.refs.held_only_as_saved(ref->id, *cached);
}

std::vector<std::vector<bool>> TreeManager::liveness(const std::vector<NodeRef>& path) const {
  std::vector<std::vector<bool>> out;
  for (NodeRef r : path) {
    std::vector<bool> level;
    for (std::uint32_t i = 0; i < node_outputs(r).size(); ++i) level.push_back(is_live(r, i));
    out.push_back(std::move(level));
  }
  return out;
}

Result<Address> TreeManager::storage_ptr(TensorId t) const {
  const Tensor* tensor = ctx_.store().find(t);
  if (tensor == nullptr) return make_error(fmt::format("unknown tensor {}", t.value));
  CAPSIM_TRY_ASSIGN(const Storage storage, ctx_.store().storage(tensor->storage));
  return storage.base;
}

Result<Address> TreeManager::data_ptr(TensorId t) const {
  return ctx_.store().data_address(t);
}

bool TreeManager::is_cuda_graph_recorded_tensor(const std::vector<NodeRef>& path,
                                                TensorId t) const {
  auto ptr = storage_ptr(t);
  if (!ptr || *ptr == 0) return false;
  for (NodeRef r : path) {
    // A graph node's memory is never released, so dead outputs count; a warmup
    // node only vouches for what is still alive.
    const std::vector<std::optional<StorageRef>>& outs = node_outputs(r);
    for (std::uint32_t i = 0; i < outs.size(); ++i) {
      if (!outs[i] || outs[i]->base != *ptr) continue;
      if (!r.warmup || is_live(r, i)) return true;
    }
  }
  return false;
}

std::vector<StorageRef> TreeManager::live_weakrefs_of(const std::vector<NodeRef>& path) const {
  std::vector<StorageRef> live;
  for (NodeRef r : path) {
    const std::vector<std::optional<StorageRef>>& outs = node_outputs(r);
    for (std::uint32_t i = 0; i < outs.size(); ++i) {
      if (is_live(r, i)) live.push_back(*outs[i]);
    }
  }
  return live;
}

std::vector<StorageRef> TreeManager::path_live_weakrefs() const {
  return live_weakrefs_of(current_path());
}

bool TreeManager::all_outputs_are_dead() const {
  CAPSIM_CHECK(current_.has_value());
  if (current_->warmup) return live_weakrefs_of(current_path()).empty();
  const GraphNode& node = graphs_[current_->index];
  const std::vector<NodeRef>& path = current_path();
  for (const PathIndex& i : node.live_indices_after_graph) {
    if (is_live(path[i.depth], i.index)) return false;
  }
  return true;
}

Status TreeManager::dealloc_current_path_weakrefs() {
  std::size_t freed = 0;
  std::set<StorageId> seen;
  for (NodeRef r : current_path()) {
    // Outputs of a BACKWARD function are grads (format_dealloc_msg's
    // is_grad_output, 2.13 on).
    const bool grad_output = functions_[fid_of(r)].mode() == CompilationMode::kBackward;
    const std::vector<std::optional<StorageRef>>& outs = node_outputs(r);
    for (std::uint32_t i = 0; i < outs.size(); ++i) {
      const std::optional<StorageRef>& out = outs[i];
      if (!is_live(r, i) || !seen.insert(out->id).second) continue;
      // The zip of tensor_weakrefs with the node's stack_traces.
      ctx_.refs.set_access_error(out->id, grad_output,
                                 output_stack_trace(*functions_[fid_of(r)].def, i));
      if (ctx_.store().owns_block(out->id) && ctx_.fault != Fault::kDeallocFreesNothing) {
        CAPSIM_TRY(ctx_.store().force_free(out->id));
        ++freed;
      }
    }
  }
  ctx_.emit(EventKind::kDealloc, {{F::poisoned, seen.size()}, {F::freed, freed}});
  return {};
}

Status TreeManager::clone_live_user_visible_outputs() {
  if (!generation_cloning(ctx_.config)) return {};
  std::set<StorageId> cloned;
  std::uint64_t bytes = 0;
  for (NodeRef r : current_path()) {
    const FunctionDef& def = *functions_[fid_of(r)].def;
    auto& weakrefs =
        r.warmup ? warmups_[r.index].outputs_weakrefs : graphs_[r.index].outputs_weakrefs;
    for (std::uint32_t i = 0; i < weakrefs.size(); ++i) {
      // Backward outputs (grads) are never user-visible: they keep E1.
      if (!is_live(r, i) || !user_visible_output(def, i)) continue;
      const StorageId id = weakrefs[i]->id;
      if (cloned.insert(id).second) {
        CAPSIM_TRY_ASSIGN(const Storage st, ctx_.store().storage(id));
        // torch.empty outside the pool, then _foreach_copy_ and
        // _swap_data_ptr_: the user's tensors keep their values at a new address.
        CAPSIM_TRY_ASSIGN(const Block block,
                          ctx_.allocator.allocate(static_cast<std::int64_t>(st.nbytes)));
        if (st.nbytes > 0) {
          CAPSIM_TRY(ctx_.backend.run_step(Step{CopyStep{block.address, st.base, st.nbytes}, {}}));
        }
        CAPSIM_TRY(ctx_.store().rebase(id, block, ctx_.fault != Fault::kCloneKeepsPoolBlock));
        bytes += st.nbytes;
      }
      // The output's weak reference now points at the swapped-out storage,
      // which nothing holds: the output is dead to the tree, and a cached
      // tensor is no longer handed out.
      weakrefs[i].reset();
      if (!r.warmup && graphs_[r.index].cached_outputs[i]) {
        CAPSIM_TRY(ctx_.refs.unpin(*graphs_[r.index].cached_outputs[i]));
        graphs_[r.index].cached_outputs[i].reset();
      }
    }
  }
  if (cloned.empty()) return {};
  ctx_.counters.generation_clones += cloned.size();
  ctx_.emit(EventKind::kGenerationClone, {{F::cloned, cloned.size()}, {F::bytes, bytes}});
  return {};
}

namespace {

bool allocated_in(const PoolCheckpoint& checkpoint, Address a) {
  for (const auto& seg : checkpoint.segments) {
    for (const auto& b : seg.blocks) {
      if (b.address == a && b.allocated) return true;
    }
  }
  return false;
}

}  // namespace

// The live storages' addresses that the restore keeps allocated: those the
// checkpoint has allocated. A live storage whose block the checkpoint has
// free (up to 2.14, a saved tensor that check_refcount called dead while its
// path ran on) is passed to _cuda_setCheckpointPoolState like the others,
// but addStorageDeleterFns finds no allocated block for it and leaves it
// as it was: a non-owning storage over memory the allocator hands out again.
std::vector<Address> TreeManager::checkpoint_live_ptrs(const GraphNode& node,
                                                       const std::vector<StorageRef>& live) const {
  const PoolCheckpoint& checkpoint = node.checkpointed_caching_state;
  std::vector<Address> ptrs;
  for (const StorageRef& ref : live) {
    if (ref.base != 0) ptrs.push_back(ref.base);
  }
  if (ctx_.fault == Fault::kRestoreKeepsAll) {
    for (const Block& b : ctx_.allocator.live_blocks(pool_)) ptrs.push_back(b.address);
    for (const auto& seg : checkpoint.segments) {
      for (const auto& b : seg.blocks) {
        if (b.allocated) ptrs.push_back(b.address);
      }
    }
  }
  std::sort(ptrs.begin(), ptrs.end());
  ptrs.erase(std::unique(ptrs.begin(), ptrs.end()), ptrs.end());
  std::erase_if(ptrs, [&](Address a) { return !allocated_in(checkpoint, a); });
  return ptrs;
}

Status TreeManager::apply_checkpoint_execution_state_in_allocator() {
  CAPSIM_CHECK(current_ && !current_->warmup, "checkpoint needs a recorded current node");
  ++ctx_.counters.checkpoints;
  const std::vector<NodeRef>& path = current_path();
  // remove_path_cached_tensors: later replays hand out new tensor objects.
  for (NodeRef r : path) {
    for (auto& cached : graphs_[r.index].cached_outputs) {
      if (cached) CAPSIM_TRY(ctx_.refs.unpin(*cached));
      cached.reset();
    }
  }
  const std::vector<StorageRef> live = live_weakrefs_of(path);
  const GraphNode& node = graphs_[current_->index];
  const std::vector<Address> live_ptrs = checkpoint_live_ptrs(node, live);
  const std::size_t before = ctx_.allocator.live_blocks(pool_).size();
  CAPSIM_TRY(ctx_.allocator.restore(pool_, node.checkpointed_caching_state, live_ptrs));
  // The live storages were non-owning replay outputs; those the restore
  // kept allocated get deleters now.
  for (const StorageRef& ref : live) {
    if (ref.base == 0 || std::binary_search(live_ptrs.begin(), live_ptrs.end(), ref.base)) {
      CAPSIM_TRY(ctx_.store().adopt(ref.id));
    }
  }
  ctx_.emit(EventKind::kCheckpoint,
            {{F::count, ctx_.counters.checkpoints},
             {F::node, node.id},
             {F::live, live_ptrs.size()},
             {F::pool_blocks_before, before},
             {F::pool_blocks_after, ctx_.allocator.live_blocks(pool_).size()}});
  check_memory_pool(live, "checkpoint");
  return {};
}

bool TreeManager::check_memory_pool(const std::vector<StorageRef>& live, const char* where) {
  if (!ctx_.config.slow_path_cudagraph_asserts) return true;
  std::set<Address> expected;
  for (const StorageRef& ref : live) {
    if (ref.base != 0) expected.insert(ref.base);
  }
  std::set<Address> allocated;
  for (const Block& b : ctx_.allocator.live_blocks(pool_)) allocated.insert(b.address);
  std::vector<Address> missing, untracked;
  std::set_difference(expected.begin(), expected.end(), allocated.begin(), allocated.end(),
                      std::back_inserter(missing));
  std::set_difference(allocated.begin(), allocated.end(), expected.begin(), expected.end(),
                      std::back_inserter(untracked));
  if (missing.empty() && untracked.empty()) return true;
  if (!missing.empty()) {
    ctx_.emit(EventKind::kError,
              {{F::id, decision_key(Decision::kErrorPoolMissingBlocks)},
               {F::exception, "RuntimeError"},
               {F::where, where},
               {F::message, messages::pool_missing(profile_rules(ctx_.config.torch_profile),
                                                   pool_.value, missing)}});
  } else {
    ctx_.emit(EventKind::kError,
              {{F::id, decision_key(Decision::kErrorPoolUntracked)},
               {F::exception, "RuntimeError"},
               {F::where, where},
               {F::message,
                messages::pool_untracked(profile_rules(ctx_.config.torch_profile), untracked)}});
  }
  return false;
}

}  // namespace capsim
