// AutogradEngine: the recorded graph as an AutogradGraph, whole (graph()) or
// as the nodes one backward reaches, renumbered (backward_graph(); the
// engine_ids map back), so that a backward costs what it reaches, not what
// the engine ever recorded.
#include <algorithm>

#include "sim/autograd/autograd_engine.hpp"
#include "sim/autograd/autograd_errors.hpp"

namespace capsim {

Result<AutogradGraph> AutogradEngine::build(std::span<const AutogradNodeId> ids,
                                            std::optional<GradFn> root_edge) const {
  CAPSIM_CHECK(std::is_sorted(ids.begin(), ids.end()), "a graph keeps recording order");
  // An engine id's graph id: its place among `ids`.
  const auto graph_id = [&ids](AutogradNodeId engine_id) {
    const auto it = std::lower_bound(ids.begin(), ids.end(), engine_id);
    CAPSIM_CHECK(it != ids.end() && *it == engine_id, "a built graph is closed under its edges");
    return static_cast<AutogradNodeId>(it - ids.begin());
  };
  AutogradGraph graph;
  for (AutogradNodeId id : ids) {
    AutogradNode node = records_[id].node;
    if (node.variable) node.variable_grad_defined = grad_of(*node.variable).has_value();
    CAPSIM_TRY(graph.add_node(std::move(node)));
  }
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const auto& next = records_[ids[k]].next;
    for (std::size_t out = 0; out < next.size(); ++out) {
      if (!next[out]) continue;
      CAPSIM_TRY(graph.add_edge(static_cast<AutogradNodeId>(k), static_cast<std::uint32_t>(out),
                                graph_id(next[out]->target), next[out]->input_nr));
    }
  }
  if (root_edge) {
    AutogradNode root;
    root.kind = AutogradNodeKind::kGraphRoot;
    root.name = "GraphRoot";
    root.num_outputs = 1;
    CAPSIM_TRY_ASSIGN(const AutogradNodeId id, graph.add_node(std::move(root)));
    CAPSIM_TRY(graph.add_edge(id, 0, graph_id(root_edge->node), root_edge->output_nr));
  }
  return graph;
}

Result<AutogradGraph> AutogradEngine::graph() const {
  std::vector<AutogradNodeId> all(records_.size());
  for (std::size_t id = 0; id < all.size(); ++id) all[id] = static_cast<AutogradNodeId>(id);
  return build(all, std::nullopt);
}

Result<AutogradEngine::BackwardGraph> AutogradEngine::backward_graph(const Variable& root) const {
  const std::optional<GradFn> edge = gradient_edge(root.tensor);
  if (!edge) {
    return make_error(kErrNoGradFn);
  }
  // The nodes the root's edge reaches, in recording order.
  std::vector<bool> seen(records_.size(), false);
  std::vector<AutogradNodeId> stack{edge->node};
  seen[edge->node] = true;
  BackwardGraph out;
  while (!stack.empty()) {
    const AutogradNodeId id = stack.back();
    stack.pop_back();
    out.engine_ids.push_back(id);
    for (const auto& next : records_[id].next) {
      if (next && !seen[next->target]) {
        seen[next->target] = true;
        stack.push_back(next->target);
      }
    }
  }
  std::sort(out.engine_ids.begin(), out.engine_ids.end());
  CAPSIM_TRY_ASSIGN(out.graph, build(out.engine_ids, edge));
  out.root = static_cast<AutogradNodeId>(out.graph.num_nodes() - 1);
  CAPSIM_CHECK(out.root == out.engine_ids.size(), "the GraphRoot is the last id");
  return out;
}

}  // namespace capsim
