// Folding a drawing too big to lay out (see fold.hpp): runs of like nodes into one, and
// fit_for_layout, which cuts a diff to its changes first and folds only what is still too big.
#include "render/fold.hpp"

#include <fmt/format.h>

#include <map>
#include <tuple>

#include "render/graph_diff.hpp"

namespace capsim {

DrawGraph fold_repeated(const DrawGraph& graph, std::size_t limit) {
  DrawGraph out = empty_like(graph);
  using Key = std::tuple<std::string_view, std::string_view, DiffClass>;
  std::map<Key, std::uint32_t> group_of_key;
  std::vector<std::size_t> members;
  std::vector<std::optional<std::uint32_t>> group(graph.nodes.size());
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const DrawNode& n = graph.nodes[i];
    const Key key{n.kind, n.target, n.diff};
    auto it = group_of_key.find(key);
    if (it == group_of_key.end()) {
      if (out.nodes.size() >= limit) {
        ++dropped;
        continue;
      }
      DrawNode folded;
      folded.id = fmt::format("fold{}", out.nodes.size());
      folded.kind = n.kind;
      folded.target = n.target;
      folded.fill = n.fill;
      folded.diff = n.diff;
      folded.title = n.title;  // replaced below when the group has more members
      it = group_of_key.emplace(key, out.add_node(std::move(folded))).first;
      members.push_back(0);
    }
    group[i] = it->second;
    ++members[it->second];
  }
  for (std::size_t g = 0; g < out.nodes.size(); ++g) {
    DrawNode& n = out.nodes[g];
    if (members[g] > 1) {
      n.title = fmt::format("{} x {}", members[g], n.target.empty() ? n.kind : n.target);
      n.attrs.push_back({"kind", n.kind, std::nullopt, false});
    }
  }
  std::map<std::tuple<std::uint32_t, std::uint32_t, bool, DiffClass>, std::size_t> edge_count;
  for (const DrawEdge& e : graph.edges) {
    if (!group[e.from] || !group[e.to]) continue;
    ++edge_count[{*group[e.from], *group[e.to], e.dotted, e.diff}];
  }
  for (const auto& [key, count] : edge_count) {
    const auto& [from, to, dotted, diff] = key;
    out.add_edge(from, to, count > 1 ? fmt::format("x{}", count) : "", dotted);
    out.edges.back().diff = diff;
  }
  out.notes.push_back(fmt::format(
      "folded: {} nodes drawn as {} (one per kind and target; over the {}-node layout limit)",
      graph.nodes.size(), out.nodes.size(), limit));
  if (dropped > 0) out.notes.push_back(fmt::format("{} nodes of further kinds left out", dropped));
  return out;
}

DrawGraph fit_for_layout(const DrawGraph& graph, std::size_t limit, std::string* what) {
  if (graph.nodes.size() <= limit) return graph;
  bool is_diff = graph.is_diff;
  for (const DrawNode& n : graph.nodes) is_diff = is_diff || n.diff != DiffClass::kNone;
  if (is_diff) {
    DrawGraph changes = changes_only(graph);
    if (changes.nodes.size() <= limit) {
      if (what != nullptr) {
        *what = fmt::format("{} nodes are over the layout limit of {}: drew the changes only",
                            graph.nodes.size(), limit);
      }
      return changes;
    }
    if (what != nullptr) {
      *what = fmt::format(
          "{} nodes are over the layout limit of {}, and their changes alone "
          "too: drew the changes folded by kind",
          graph.nodes.size(), limit);
    }
    return fold_repeated(changes, limit);
  }
  if (what != nullptr) {
    *what = fmt::format("{} nodes are over the layout limit of {}: drew them folded by kind",
                        graph.nodes.size(), limit);
  }
  return fold_repeated(graph, limit);
}

}  // namespace capsim
