// DOT text for a DrawGraph: deterministic, diffable and safe to lay out.
//
// The same DrawGraph always gives the same bytes: node ids are the drawing's
// stable ids (never addresses), and nodes and edges are written in the
// drawing's order. Following what was measured of Graphviz 2.43
// (docs/rendering.md, "Limits and safety"): labels are HTML-like tables
// inside plain boxes (never `record` shapes), `constraint=false` is never
// written, and a node with more than kHubFanout out-edges is drawn once,
// unconnected, while each of its uses gets its own small proxy node, because
// a hub's edges to everything make the `dot` layout blow up. Colours: a fixed light palette picked
// by hashing the node's target, so an op keeps its colour in every graph (FxGraphDrawer's rule); in
// a diff, Okabe-Ito colours that stay apart for colour-blind readers (blue for added, orange for
// removed, reddish purple for changed, grey for same) plus a second cue for each (bold, dashed, a
// double border), and a legend.
#pragma once

#include <cstddef>
#include <string>

#include "render/draw_graph.hpp"

namespace capsim {

inline constexpr std::size_t kHubFanout = 8;
// Rows longer than this are cut with "...", as torchviz's max_attr_chars.
inline constexpr std::size_t kMaxLabelChars = 64;

std::string to_dot(const DrawGraph& graph);

// The fill of a node's target in the fixed palette (exposed for tests).
std::string_view palette_colour(std::string_view target);

}  // namespace capsim
