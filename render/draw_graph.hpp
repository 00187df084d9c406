// DrawGraph: what every renderer produces and what the diff and the DOT
// writer consume.
//
// A renderer turns one of capsim's graphs (an AutogradGraph, a captured
// FxGraph, a cudagraph tree, a recorded StepProgram, a pool's layout) into
// plain nodes and edges with stable string ids and ordered attribute rows.
// The ids are the identity the diff matches first (`g3`, `s17`, `getitem_2`:
// never an address, so that the DOT of two runs can be diffed); `kind` and
// `target` are the structural identity it falls back to. Keeping the model of
// a picture apart from the writing of it is LLVM's GraphWriter split: one
// writer and one diff serve every graph.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"

namespace capsim {

// X(enumerator, name): how a node or an edge of a diff compares.
#define CAPSIM_DIFF_CLASSES(X)      \
  X(kNone, "none") /* not a diff */ \
  X(kSame, "same")                  \
  X(kChanged, "changed")            \
  X(kAdded, "added")                \
  X(kRemoved, "removed")

enum class DiffClass : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_DIFF_CLASSES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view diff_class_name(DiffClass c);

// One row of a node's label. `before` is set by the diff on a changed row
// (the value in the first graph; `value` is the second's), and on a row that
// only the first graph has (`value` is then empty and `gone` is true).
struct DrawAttr {
  std::string key;
  std::string value;
  std::optional<std::string> before;
  bool gone = false;
  friend bool operator==(const DrawAttr&, const DrawAttr&) = default;
};

struct DrawNode {
  std::string id;      // stable within the graph kind: the diff's first key
  std::string kind;    // "kernel", "placeholder", "warmup", ...: shape and colour
  std::string target;  // the structural identity: an op, a kernel, a function
  std::string title;   // the label's first line
  std::vector<DrawAttr> attrs;
  std::string fill;  // a renderer's own fill colour; empty: the palette's by target
  DiffClass diff = DiffClass::kNone;
  // Diff: what differs ("title", "inputs", attribute keys), sorted.
  std::vector<std::string> changed;
  // Set on the per-use proxies that stand in for a hub node (dot_writer).
  bool proxy = false;
};

struct DrawEdge {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  std::string label;  // part of the edge's identity: `input_nr`, an arg index
  bool dotted = false;
  DiffClass diff = DiffClass::kNone;
};

// The limits on one drawing, before any folding (render_limits.hpp folds
// what a layout can take).
inline constexpr std::size_t kMaxDrawNodes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxDrawEdges = std::size_t{1} << 22;

struct DrawGraph {
  std::string name;  // the graph's title
  std::string kind;  // "tree", "program", "fx", "autograd", "pool", "diff"
  bool left_to_right = false;
  // A diff's drawing: a legend and diff colours, even when it has no nodes.
  bool is_diff = false;
  std::vector<DrawNode> nodes;
  std::vector<DrawEdge> edges;
  // Lines drawn under the title: what was folded or hidden, and why.
  std::vector<std::string> notes;

  // Appends a node and returns its index (the id must be new: CAPSIM_CHECK).
  std::uint32_t add_node(DrawNode node);
  void add_edge(std::uint32_t from, std::uint32_t to, std::string label = {}, bool dotted = false);
  std::optional<std::uint32_t> find(std::string_view id) const;
  // Edges into each node, in the order they were added.
  std::vector<std::vector<std::uint32_t>> in_edges() const;

  // id -> index, kept by add_node (nodes are only ever added through it).
  std::map<std::string, std::uint32_t, std::less<>> index;
};

// A graph with `graph`'s name, kind, direction, diff flag and notes, and no
// nodes: what a pass that rebuilds a drawing starts from.
DrawGraph empty_like(const DrawGraph& graph);

// Unique non-empty ids, edges within range, the limits. Errors name the node
// or the edge.
Status validate(const DrawGraph& graph);

}  // namespace capsim
