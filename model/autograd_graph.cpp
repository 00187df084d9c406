// AutogradGraph (see autograd_graph.hpp): the Boost.Graph adjacency_list behind it, edges and
// their checks, the acyclicity check and the topological order. The one file that includes
// Boost.Graph, so that only it pays Boost's compile time.
#include "model/autograd_graph.hpp"

#include <fmt/format.h>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <queue>

namespace capsim {

std::string_view autograd_node_kind_name(AutogradNodeKind kind) {
  switch (kind) {
#define CAPSIM_NAME_(e, name) \
  case AutogradNodeKind::e: return name;
    CAPSIM_AUTOGRAD_NODE_KINDS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

std::string_view autograd_hook_kind_name(AutogradHookKind kind) {
  switch (kind) {
#define CAPSIM_NAME_(e, name) \
  case AutogradHookKind::e: return name;
    CAPSIM_AUTOGRAD_HOOK_KINDS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

namespace {
struct EdgeProps {
  std::uint32_t output_nr = 0;
  std::uint32_t input_nr = 0;
};
using BoostGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, AutogradNode, EdgeProps>;
using Vertex = boost::graph_traits<BoostGraph>::vertex_descriptor;
}  // namespace

struct AutogradGraph::Impl {
  BoostGraph graph;
  // next[node][output_nr]: the edge leaving that output, if any. Kept beside
  // the Boost graph so that next_edges is in output order, not edge order.
  std::vector<std::vector<std::optional<NextEdge>>> next;
};

AutogradGraph::AutogradGraph() : impl_(std::make_unique<Impl>()) {}
AutogradGraph::~AutogradGraph() = default;
AutogradGraph::AutogradGraph(AutogradGraph&&) noexcept = default;
AutogradGraph& AutogradGraph::operator=(AutogradGraph&&) noexcept = default;

std::size_t AutogradGraph::num_nodes() const {
  return boost::num_vertices(impl_->graph);
}

const AutogradNode& AutogradGraph::node(AutogradNodeId id) const {
  CAPSIM_CHECK(id < num_nodes(), "node id out of range");
  return impl_->graph[static_cast<Vertex>(id)];
}

std::string describe_node(const AutogradGraph& graph, AutogradNodeId id) {
  if (id >= graph.num_nodes()) return fmt::format("node {} (missing)", id);
  return fmt::format("node {} ({})", id, graph.node(id).name);
}

Result<AutogradNodeId> AutogradGraph::add_node(AutogradNode node) {
  if (num_nodes() >= kMaxAutogradNodes) {
    return make_error(fmt::format("autograd graph: more than {} nodes", kMaxAutogradNodes));
  }
  if (node.name.empty()) node.name = std::string(autograd_node_kind_name(node.kind));
  const std::uint32_t outputs = node.num_outputs;
  const auto v = boost::add_vertex(std::move(node), impl_->graph);
  impl_->next.emplace_back(outputs);
  return static_cast<AutogradNodeId>(v);
}

Status AutogradGraph::add_edge(AutogradNodeId from, std::uint32_t output_nr, AutogradNodeId to,
                               std::uint32_t input_nr) {
  if (from >= num_nodes() || to >= num_nodes()) {
    return make_error(fmt::format("autograd graph: edge from {} output {} to {}: no such node",
                                  describe_node(*this, from), output_nr, describe_node(*this, to)));
  }
  const AutogradNode& source = node(from);
  const AutogradNode& target = node(to);
  if (output_nr >= source.num_outputs) {
    return make_error(
        fmt::format("autograd graph: edge from {}: output {} out of range ({} outputs)",
                    describe_node(*this, from), output_nr, source.num_outputs));
  }
  if (input_nr >= target.inputs.size()) {
    return make_error(fmt::format(
        "autograd graph: edge from {} output {} to {}: input_nr {} out of range ({} inputs)",
        describe_node(*this, from), output_nr, describe_node(*this, to), input_nr,
        target.inputs.size()));
  }
  auto& slot = impl_->next[from][output_nr];
  if (slot) {
    return make_error(fmt::format("autograd graph: {} output {} already has an edge",
                                  describe_node(*this, from), output_nr));
  }
  slot = NextEdge{to, input_nr};
  boost::add_edge(from, to, EdgeProps{output_nr, input_nr}, impl_->graph);
  return {};
}

std::vector<std::optional<NextEdge>> AutogradGraph::next_edges(AutogradNodeId id) const {
  CAPSIM_CHECK(id < num_nodes(), "node id out of range");
  return impl_->next[id];
}

std::vector<InEdge> AutogradGraph::in_edges(AutogradNodeId id) const {
  CAPSIM_CHECK(id < num_nodes(), "node id out of range");
  std::vector<InEdge> out;
  for (auto [it, end] = boost::in_edges(id, impl_->graph); it != end; ++it) {
    const EdgeProps& e = impl_->graph[*it];
    out.push_back(
        {static_cast<AutogradNodeId>(boost::source(*it, impl_->graph)), e.output_nr, e.input_nr});
  }
  return out;
}

namespace {
// Records the first back edge a depth-first search meets: an edge of a cycle.
struct BackEdgeFinder : boost::default_dfs_visitor {
  std::optional<std::pair<Vertex, Vertex>>* found;
  template <typename Edge, typename Graph>
  void back_edge(Edge e, const Graph& g) {
    if (!*found) *found = std::make_pair(boost::source(e, g), boost::target(e, g));
  }
};
}  // namespace

Status AutogradGraph::check_acyclic() const {
  std::optional<std::pair<Vertex, Vertex>> found;
  BackEdgeFinder visitor;
  visitor.found = &found;
  boost::depth_first_search(impl_->graph, boost::visitor(visitor));
  if (!found) return {};
  return make_error(fmt::format(
      "autograd graph: cycle: the edge from {} to {} closes it (a backward graph is a DAG)",
      describe_node(*this, static_cast<AutogradNodeId>(found->first)),
      describe_node(*this, static_cast<AutogradNodeId>(found->second))));
}

Result<std::vector<AutogradNodeId>> AutogradGraph::topological_order() const {
  CAPSIM_TRY(check_acyclic());
  // Kahn's algorithm with a min-heap on ids: deterministic, and linear up to
  // the heap's log factor.
  const std::size_t n = num_nodes();
  std::vector<std::uint32_t> pending(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    pending[v] = static_cast<std::uint32_t>(boost::in_degree(v, impl_->graph));
  }
  std::priority_queue<AutogradNodeId, std::vector<AutogradNodeId>, std::greater<>> ready;
  for (std::size_t v = 0; v < n; ++v) {
    if (pending[v] == 0) ready.push(static_cast<AutogradNodeId>(v));
  }
  std::vector<AutogradNodeId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const AutogradNodeId v = ready.top();
    ready.pop();
    order.push_back(v);
    for (auto [it, end] = boost::out_edges(v, impl_->graph); it != end; ++it) {
      const auto t = boost::target(*it, impl_->graph);
      if (--pending[t] == 0) ready.push(static_cast<AutogradNodeId>(t));
    }
  }
  CAPSIM_CHECK(order.size() == n, "acyclic graph left nodes unordered");
  return order;
}

}  // namespace capsim
