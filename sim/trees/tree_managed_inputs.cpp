// 2.15's managed-input demotion (cudagraph_trees.py, 2.15.0:
// CUDAGraphTreeManager._update_cudagraph_managed_input_rerecord,
// _get_demoted_cudagraph_managed_idxs; CUDAGraphNode
// .mismatched_cudagraph_managed_idxs, .can_copy_cudagraph_managed_input;
// docs/cudagraph-trees.md §4.1). `run_inner` counts, on its re-record path,
// the managed inputs whose pointers moved since the newest recording on the
// edge; at the limit "copy" demotes them (the next recordings copy them in,
// classify_inputs) and "skip" sends the edge to eager with E9.
#include "sim/core/decisions.hpp"
#include "sim/core/messages.hpp"
#include "sim/trees/tree_manager.hpp"

namespace capsim {

std::vector<std::uint32_t> TreeManager::demotable_managed_idxs(
    const GraphNode& latest, const std::vector<TensorId>& inputs) const {
  const WrappedFunction& fn = functions_[latest.fid];
  std::vector<std::uint32_t> out;
  // can_copy_cudagraph_managed_input: a copy would break the aliasing a
  // mutating function or an output that aliases the input relies on.
  if (!fn.mutated_input_idxs.empty()) return out;
  for (std::uint32_t i : latest.cudagraph_managed_idxs) {
    CAPSIM_CHECK(i < inputs.size(), "a managed index names an input");
    const Result<Address> ptr = data_ptr(inputs[i]);
    if (ptr && latest.static_input_data_ptrs[i] && *ptr == *latest.static_input_data_ptrs[i]) {
      continue;
    }
    if (std::binary_search(fn.static_input_idxs.begin(), fn.static_input_idxs.end(), i)) continue;
    if (latest.preserved_aliased_inputs[i]) continue;
    out.push_back(i);
  }
  return out;
}

std::vector<std::uint32_t> TreeManager::update_managed_input_rerecord(
    FunctionId fid, const std::vector<std::uint32_t>& idxs) {
  const std::int64_t limit = *managed_input_rerecord_limit(ctx_.config);
  const bool copy =
      ctx_.config.cudagraph_managed_input_rerecord_action == ManagedInputAction::kCopy;
  const Edge edge{current_node_id(), fid};
  std::map<std::uint32_t, std::int64_t>& counts = managed_rerecords_[edge];
  std::set<std::uint32_t>& demoted = demoted_managed_[edge];
  std::vector<std::uint32_t> reached;
  for (std::uint32_t i : idxs) {
    // A demoted input is copied already: its changes no longer count.
    if (copy && demoted.count(i) != 0) continue;
    if (++counts[i] < limit) continue;
    if (!copy && ctx_.fault == Fault::kIgnoreSkipE9) continue;
    if (copy) {
      demoted.insert(i);
      ctx_.emit(EventKind::kDemote, {{F::fid, fid},
                                     {F::function, functions_[fid].def->name},
                                     {F::parent, current_graph_id()},
                                     {F::input, i}});
    } else {
      reached.push_back(i);
    }
  }
  if (!reached.empty()) managed_skip_edges_.insert(edge);
  return reached;
}

std::vector<std::uint32_t> TreeManager::demoted_managed_idxs(FunctionId fid) const {
  const auto it = demoted_managed_.find({current_node_id(), fid});
  if (it == demoted_managed_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

// E9: action "skip" reached the managed-input threshold on this edge; the
// call and every later one on the edge run eagerly.
std::string TreeManager::emit_managed_input_skip(FunctionId fid, std::optional<GraphId> node,
                                                 const std::vector<std::uint32_t>& idxs) {
  ++ctx_.counters.cudagraph_skips;
  std::string message = messages::managed_input_rerecord_limit(
      fid, ctx_.config.cudagraph_managed_input_rerecord_limit, node, idxs);
  ctx_.emit(EventKind::kSkip, {{F::id, decision_key(Decision::kSkipManagedInputLimit)},
                               {F::fid, fid},
                               {F::inputs, int_list(idxs)},
                               {F::message, message}});
  return message;
}

}  // namespace capsim
