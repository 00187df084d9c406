// Graph diff: which nodes and edges of two drawings are the same, changed,
// added or removed, and one merged drawing that shows it.
//
// Nodes are matched in three passes, each only over what the passes before
// left unmatched:
//   1. by id (a graph id, a step index, an FX node name): the stable identity;
//   2. by structural hash: kind, target and, in order, the hashes of the
//      nodes its edges come from with their labels (a Merkle hash over the
//      dataflow, so a renamed but identical subgraph still matches);
//   3. by kind and target alone, so that a node whose inputs changed is
//      marked changed, not removed and added.
// Within passes 2 and 3, the k-th unmatched node of a key in the first graph
// pairs with the k-th of the same key in the second. Every pass is symmetric,
// so diff(b, a) gives the same pairs as diff(a, b), with added and removed
// swapped. A matched pair is changed when its kind, target, title, attribute
// rows or inputs (the matched sources and labels of its edges) differ.
// Edges compare by (matched source, matched target, label).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/fault.hpp"
#include "render/draw_graph.hpp"

namespace capsim {

// X(enumerator, name): which pass matched a pair.
#define CAPSIM_MATCH_PASSES(X) \
  X(kUnmatched, "unmatched")   \
  X(kById, "id")               \
  X(kByHash, "structure")      \
  X(kByKind, "kind")

enum class MatchPass : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_MATCH_PASSES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

struct NodeMatch {
  std::optional<std::uint32_t> a;  // node index in the first graph
  std::optional<std::uint32_t> b;  // node index in the second graph
  DiffClass cls = DiffClass::kSame;
  MatchPass pass = MatchPass::kUnmatched;
  std::vector<std::string> changed;  // sorted: "inputs", "kind", "title", attribute keys
};

struct EdgeMatch {
  std::optional<std::uint32_t> a;  // edge index in the first graph
  std::optional<std::uint32_t> b;
  DiffClass cls = DiffClass::kSame;
};

struct DiffCounts {
  std::size_t same = 0, changed = 0, added = 0, removed = 0;
  std::size_t edges_same = 0, edges_added = 0, edges_removed = 0;
  bool identical() const {
    return changed == 0 && added == 0 && removed == 0 && edges_added == 0 && edges_removed == 0;
  }
};

struct GraphDiff {
  // Matched pairs in the second graph's node order, then the removed nodes
  // in the first graph's order.
  std::vector<NodeMatch> nodes;
  // The second graph's edges in order, then the removed edges.
  std::vector<EdgeMatch> edges;
  DiffCounts counts;
};

// `fault`: a kDiff fault (model/fault.hpp), for the diff's negative controls
// (tests/render/prop_graph_diff.cpp) only.
GraphDiff diff_graphs(const DrawGraph& a, const DrawGraph& b, Fault fault = Fault::kNone);

// The merged drawing: every node of `b` and every removed node of `a`, with
// its DiffClass, changed rows carrying their `before` values, and a legend
// entry in `notes`. Removed nodes get the id "-" + their id in `a`.
DrawGraph merge_diff(const DrawGraph& a, const DrawGraph& b, const GraphDiff& diff);

// Only the nodes that are not the same, and their neighbours (one edge
// away); a note says how many nodes were hidden.
DrawGraph changes_only(const DrawGraph& merged);

// A one-line summary: "3 changed, 1 added, 0 removed, 12 same; edges: ...".
std::string diff_summary(const DiffCounts& counts);

}  // namespace capsim
