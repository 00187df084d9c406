// end_capture's reorder_accumulate_grad_nodes and dce as one order
// (end_capture_order.hpp).
#include "sim/compiled_autograd/end_capture_order.hpp"

#include <optional>

#include "model/check.hpp"

namespace capsim {

bool is_input_like(const FxGraph& graph, FxNodeId n) {
  const FxNodeView node = graph.node(n);
  if (node.op == FxOp::kPlaceholder) return true;
  if (node.target != "operator.getitem") return false;
  const std::optional<FxNodeId> from = graph.first_use(n);
  return from && graph.node(*from).op == FxOp::kPlaceholder;
}

bool impure_target(std::string_view target) {
  return target == "call_hook" || target == "call_backward" ||
         target == "FakeCompiledAutogradEngine._exec_final_callbacks_stub" ||
         target == "torch.ops.inductor.accumulate_grad_.default" ||
         target.starts_with("torch.ops.aten.copy_") || target == "torch.ops.aten.add_.Tensor";
}

std::vector<FxNodeId> accumulate_grad_order(const FxGraph& graph) {
  // Anchors precede their accumulate node in the current order, so one pass
  // that emits each moved node right after its anchor is enough: linear.
  const FxNodeRange nodes = graph.nodes();
  std::vector<std::vector<FxNodeId>> after(nodes.size());
  std::vector<bool> moved(nodes.size(), false);
  for (FxNodeId id = 0; id < nodes.size(); ++id) {
    if (nodes[id].target != "torch.ops.inductor.accumulate_grad_.default") continue;
    // The anchor is the latest argument that is not an input: PyTorch lifts
    // every input at the top of the graph, capsim lifts an input where it is
    // first used, so an input must not count as "later" here.
    std::optional<FxNodeId> anchor;
    graph.for_each_use(id, [&](FxNodeId u) {
      if (!is_input_like(graph, u) && (!anchor || u > *anchor)) anchor = u;
    });
    if (!anchor) continue;
    // An input lifted after the anchor (capsim lifts where first used)
    // moves with the node, just before it; its own argument is a placeholder.
    graph.for_each_use(id, [&](FxNodeId u) {
      if (u > *anchor && !moved[u] && is_input_like(graph, u)) {
        after[*anchor].push_back(u);
        moved[u] = true;
      }
    });
    after[*anchor].push_back(id);
    moved[id] = true;
  }
  std::vector<FxNodeId> order;
  order.reserve(nodes.size());
  for (FxNodeId id = 0; id < nodes.size(); ++id) {
    if (moved[id]) continue;
    order.push_back(id);
    order.insert(order.end(), after[id].begin(), after[id].end());
  }
  CAPSIM_CHECK(order.size() == nodes.size());
  return order;
}

std::vector<bool> live_nodes(const FxGraph& graph) {
  const FxNodeRange nodes = graph.nodes();
  std::vector<bool> keep(nodes.size(), false);
  for (std::size_t i = nodes.size(); i-- > 0;) {
    const FxNodeView n = nodes[i];
    const bool impure = n.op != FxOp::kCallFunction || impure_target(n.target) ||
                        is_input_like(graph, static_cast<FxNodeId>(i));
    if (impure) keep[i] = true;
    if (!keep[i]) continue;
    graph.for_each_use(static_cast<FxNodeId>(i), [&](FxNodeId u) { keep[u] = true; });
  }
  return keep;
}

std::vector<FxNodeId> end_capture_order(const FxGraph& graph) {
  const std::vector<bool> keep = live_nodes(graph);
  std::vector<FxNodeId> order;
  for (FxNodeId id : accumulate_grad_order(graph)) {
    if (keep[id]) order.push_back(id);
  }
  return order;
}

}  // namespace capsim
