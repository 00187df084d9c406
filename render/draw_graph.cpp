// DrawGraph (see draw_graph.hpp): adding nodes and edges, lookup by id, and the validation
// every drawing passes before it is written or diffed.
#include "render/draw_graph.hpp"

#include <fmt/format.h>

#include <set>

#include "model/check.hpp"

namespace capsim {

std::string_view diff_class_name(DiffClass c) {
  switch (c) {
#define CAPSIM_CASE_(e, name) \
  case DiffClass::e: return name;
    CAPSIM_DIFF_CLASSES(CAPSIM_CASE_)
#undef CAPSIM_CASE_
  }
  return "?";
}

std::uint32_t DrawGraph::add_node(DrawNode node) {
  CAPSIM_CHECK(!node.id.empty(), "a drawn node needs an id");
  CAPSIM_CHECK(nodes.size() < kMaxDrawNodes, "too many drawn nodes");
  const auto index_of = static_cast<std::uint32_t>(nodes.size());
  const bool fresh = index.emplace(node.id, index_of).second;
  CAPSIM_CHECK(fresh, "drawn node ids are unique");
  nodes.push_back(std::move(node));
  return index_of;
}

void DrawGraph::add_edge(std::uint32_t from, std::uint32_t to, std::string label, bool dotted) {
  CAPSIM_CHECK(from < nodes.size() && to < nodes.size(), "an edge joins drawn nodes");
  CAPSIM_CHECK(edges.size() < kMaxDrawEdges, "too many drawn edges");
  edges.push_back({from, to, std::move(label), dotted, DiffClass::kNone});
}

std::optional<std::uint32_t> DrawGraph::find(std::string_view id) const {
  auto it = index.find(id);
  if (it == index.end()) return std::nullopt;
  return it->second;
}

std::vector<std::vector<std::uint32_t>> DrawGraph::in_edges() const {
  std::vector<std::vector<std::uint32_t>> in(nodes.size());
  for (std::size_t e = 0; e < edges.size(); ++e) {
    in[edges[e].to].push_back(static_cast<std::uint32_t>(e));
  }
  return in;
}

DrawGraph empty_like(const DrawGraph& graph) {
  DrawGraph out;
  out.name = graph.name;
  out.kind = graph.kind;
  out.left_to_right = graph.left_to_right;
  out.is_diff = graph.is_diff;
  out.notes = graph.notes;
  return out;
}

Status validate(const DrawGraph& graph) {
  if (graph.nodes.size() > kMaxDrawNodes) {
    return make_error(fmt::format("graph '{}': {} nodes, the limit is {}", graph.name,
                                  graph.nodes.size(), kMaxDrawNodes));
  }
  if (graph.edges.size() > kMaxDrawEdges) {
    return make_error(fmt::format("graph '{}': {} edges, the limit is {}", graph.name,
                                  graph.edges.size(), kMaxDrawEdges));
  }
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const DrawNode& n = graph.nodes[i];
    if (n.id.empty())
      return make_error(fmt::format("graph '{}': node {} has no id", graph.name, i));
    if (!seen.insert(n.id).second) {
      return make_error(fmt::format("graph '{}': node id '{}' is used twice", graph.name, n.id));
    }
  }
  for (std::size_t e = 0; e < graph.edges.size(); ++e) {
    const DrawEdge& edge = graph.edges[e];
    if (edge.from >= graph.nodes.size() || edge.to >= graph.nodes.size()) {
      return make_error(fmt::format("graph '{}': edge {} joins {} to {}, but there are {} nodes",
                                    graph.name, e, edge.from, edge.to, graph.nodes.size()));
    }
  }
  return {};
}

}  // namespace capsim
