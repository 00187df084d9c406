// The drawings of compiled autograd's two graphs (see capture_drawings.hpp): the autograd graph
// in torchviz's style, the captured FxGraph in FxGraphDrawer's.
#include "render/capture_drawings.hpp"

#include <fmt/format.h>

namespace capsim {

namespace {

// torchviz's colours.
constexpr std::string_view kFillNode = "#d3d3d3";   // lightgrey
constexpr std::string_view kFillSaved = "#ffd8a8";  // orange, lightened
constexpr std::string_view kFillLeaf = "#add8e6";   // lightblue
constexpr std::string_view kFillRoot = "#caff70";   // darkolivegreen1: the output
// FxGraphDrawer's fixed colours.
constexpr std::string_view kFillPlaceholder = "#f0f8ff";  // AliceBlue
constexpr std::string_view kFillOutput = "#b0e0e6";       // PowderBlue

std::string shape_text(const Dims& sizes) {
  std::string out = "(";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(sizes[i]);
  }
  return out + (sizes.size() == 1 ? ",)" : ")");
}

void add_row(DrawNode& n, std::string key, std::string value) {
  n.attrs.push_back({std::move(key), std::move(value), std::nullopt, false});
}

// Node arguments in order, each with its position ("1", "0.2" inside a list).
void node_refs(std::span<const FxArg> args, const std::string& prefix,
               std::vector<std::pair<FxNodeId, std::string>>& out) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string pos = prefix.empty() ? std::to_string(i) : fmt::format("{}.{}", prefix, i);
    if (args[i].kind == FxArg::Kind::kNode) out.emplace_back(args[i].node, pos);
    if (args[i].nests()) node_refs(args[i].items(), pos, out);
  }
}

// One autograd node's box, with what PyTorch would show of it.
DrawNode autograd_node_box(AutogradNodeId id, const AutogradNode& node) {
  DrawNode d;
  d.id = fmt::format("n{}", id);
  d.kind = std::string(autograd_node_kind_name(node.kind));
  d.target = node.name;
  d.title = node.name;
  d.fill = std::string(node.kind == AutogradNodeKind::kGraphRoot ? kFillRoot : kFillNode);
  if (node.kind == AutogradNodeKind::kCopySlices) add_row(d, "wraps", node.inner_name);
  if (node.kind == AutogradNodeKind::kCppNode && !node.traceable) add_row(d, "traceable", "no");
  if (!node.saved_sizes.empty()) {
    std::string sizes;
    for (std::int64_t s : node.saved_sizes)
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(s);
    add_row(d, "saved sizes", "[" + sizes + "]");
  }
  if (!node.saved_scalars.empty()) {
    add_row(d, "saved scalars", std::to_string(node.saved_scalars.size()));
  }
  for (AutogradHookKind hook : node.hooks) {
    add_row(d, "hook", std::string(autograd_hook_kind_name(hook)));
  }
  if (node.subclass_outputs > 0) {
    add_row(d, "subclass outputs", std::to_string(node.subclass_outputs));
  }
  return d;
}

// A saved tensor's or a leaf's box, with the tensor's shape when the store
// still holds it.
DrawNode tensor_box(std::string id, std::string kind, std::string title, std::string_view fill,
                    const TensorStore* store, TensorId tensor) {
  DrawNode d;
  d.id = std::move(id);
  d.target = kind;
  d.kind = std::move(kind);
  d.title = std::move(title);
  d.fill = std::string(fill);
  if (store != nullptr) {
    if (Result<Tensor> t = store->tensor(tensor)) add_row(d, "", shape_text(t->meta.sizes));
  }
  return d;
}

}  // namespace

DrawGraph draw_autograd_graph(const AutogradGraph& graph, const TensorStore* store,
                              std::string name) {
  DrawGraph g;
  g.name = std::move(name);
  g.kind = "autograd";
  const auto n_nodes = static_cast<AutogradNodeId>(graph.num_nodes());
  for (AutogradNodeId id = 0; id < n_nodes; ++id) g.add_node(autograd_node_box(id, graph.node(id)));
  // Saved tensors and leaves: one box per use (a per-use proxy, never a hub).
  for (AutogradNodeId id = 0; id < n_nodes; ++id) {
    const AutogradNode& node = graph.node(id);
    for (std::size_t k = 0; k < node.saved_tensors.size(); ++k) {
      const std::uint32_t index = g.add_node(tensor_box(fmt::format("n{}.saved{}", id, k), "saved",
                                                        fmt::format("saved {}", k), kFillSaved,
                                                        store, node.saved_tensors[k]));
      g.add_edge(index, id, "", /*dotted=*/true);
    }
    if (node.variable) {
      const std::uint32_t index = g.add_node(tensor_box(fmt::format("n{}.variable", id), "leaf",
                                                        "leaf", kFillLeaf, store, *node.variable));
      g.add_edge(id, index, "", /*dotted=*/false);
    }
  }
  // torchviz's direction: from each next function to the node it feeds.
  for (AutogradNodeId id = 0; id < n_nodes; ++id) {
    for (const std::optional<NextEdge>& e : graph.next_edges(id)) {
      if (e) g.add_edge(e->target, id, std::to_string(e->input_nr));
    }
  }
  return g;
}

DrawGraph draw_fx_graph(const FxGraph& graph, std::string name) {
  DrawGraph g;
  g.name = std::move(name);
  g.kind = "fx";
  const FxNodeRange nodes = graph.nodes();
  for (const FxNodeView n : nodes) {
    DrawNode d;
    d.id = n.name();
    while (g.find(d.id)) d.id += "'";  // an output named like a call
    d.kind = std::string(fx_op_name(n.op));
    d.target = std::string(n.target);
    d.title = n.op == FxOp::kOutput ? "output" : n.name();
    if (n.op == FxOp::kPlaceholder) d.fill = std::string(kFillPlaceholder);
    if (n.op == FxOp::kOutput) d.fill = std::string(kFillOutput);
    add_row(d, "op", std::string(fx_op_name(n.op)));
    if (n.op == FxOp::kCallFunction) add_row(d, "target", std::string(n.target));
    if (!n.args.empty()) add_row(d, "args", "(" + fx_args_text(graph, n.args) + ")");
    g.add_node(std::move(d));
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::vector<std::pair<FxNodeId, std::string>> refs;
    node_refs(nodes[i].args, "", refs);
    for (const auto& [from, pos] : refs) {
      g.add_edge(from, static_cast<std::uint32_t>(i), pos);
    }
  }
  return g;
}

}  // namespace capsim
