// Folding a drawing that is too big for a layout.
//
// Graphviz's `dot` layout is the bottleneck (2.43 was measured at 0.4 s for
// 1,000 nodes, 5.9 s for 3,000, and far worse with hubs; docs/rendering.md,
// "Limits and safety"), so a drawing above
// kLayoutNodeLimit nodes is folded before it is laid out: every run of nodes
// with the same kind, target and diff class becomes one node that says how
// many it stands for, and parallel edges between two folded nodes become one
// edge that says how many it stands for. The notes say that it happened. A
// diff is first cut to its changes (changes_only) and folded only if that is
// still too big.
#pragma once

#include <cstddef>

#include "render/draw_graph.hpp"

namespace capsim {

inline constexpr std::size_t kLayoutNodeLimit = 2000;

// The quotient drawing: one node per (kind, target, diff class), in order of
// first appearance. If there are still more than `limit` of those, the rest
// are dropped and a note says how many.
DrawGraph fold_repeated(const DrawGraph& graph, std::size_t limit);

// `graph` unchanged when it has at most `limit` nodes; otherwise its changes
// (for a diff) or its folding, with a note. `folded` says which happened.
DrawGraph fit_for_layout(const DrawGraph& graph, std::size_t limit, std::string* what = nullptr);

}  // namespace capsim
