// The cudagraph tree drawn from a run's events (see tree_drawing.hpp): TreeBuilder follows the
// tree manager's path through the events, BackwardChain the compiled-autograd backwards.
#include "render/tree_drawing.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <map>
#include <optional>
#include <vector>

#include "model/saturating_sum.hpp"
#include "render/state_colours.hpp"
#include "sim/core/decisions.hpp"
#include "traces/simulation/event_compare.hpp"

namespace capsim {

namespace {

// A field as the text printer writes it, for a label; `fallback` if absent.
std::string field(const Event& e, FieldKey key, std::string_view fallback = "?") {
  return e.printed(key).value_or(std::string(fallback));
}

void set_row(DrawNode& n, std::string_view key, std::string value) {
  for (DrawAttr& a : n.attrs) {
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  }
  n.attrs.push_back({std::string(key), std::move(value), std::nullopt, false});
}

// Compiled autograd's backwards, one box each, chained in run order: the
// cache decision, metadata reads, the captured graph and the grads.
class BackwardChain {
 public:
  void on(const Event& e, DrawGraph& g) {
    // Backwards count from 0 in each capture action, so the action is part
    // of the id.
    const std::string b = field(e, F::backward);
    const std::string id = fmt::format("ca.a{}.b{}", e.action, b);
    std::optional<std::uint32_t> index = g.find(id);
    if (!index) {
      DrawNode box;
      box.id = id;
      box.kind = "backward";
      box.target = "backward";
      box.title = fmt::format("compiled autograd backward {} (action {})", b, e.action);
      box.fill = std::string(state_fill::kPlain);
      index = g.add_node(std::move(box));
      if (last_) g.add_edge(*last_, *index, "next");
      last_ = index;
    }
    DrawNode& n = g.nodes[*index];
    switch (e.kind) {
      case EventKind::kCaCacheHit:
        n.target = "cache_hit";
        n.fill = std::string(state_fill::kInUse);
        set_row(n, "cache", "hit");
        set_row(n, "node calls", field(e, F::node_calls));
        break;
      case EventKind::kCaCacheMiss:
        n.target = "cache_miss";
        n.fill = std::string(state_fill::kTrusted);
        set_row(n, "cache",
                fmt::format("miss: {} ({})", field(e, F::reason), field(e, F::autograd_node, "")));
        set_row(n, "node calls", field(e, F::node_calls));
        break;
      case EventKind::kMetadataRead:
        set_row(n, "metadata reads", std::to_string(++metadata_reads_[*index]));
        n.fill = std::string(state_fill::kError);
        break;
      case EventKind::kCaCapture:
        set_row(n, "captured",
                fmt::format("{} nodes, {} mode", field(e, F::graph_nodes), field(e, F::mode)));
        set_row(n, "graph digest", field(e, F::graph_digest));
        break;
      case EventKind::kCaRun: set_row(n, "grads digest", field(e, F::digest)); break;
      // A recorded PyTorch backward says only this much (docs/fidelity.md).
      case EventKind::kCaGraph: {
        // A recorder of a real run may leave out what it could not observe.
        const bool* captured_field = e.get_if<bool>(F::captured);
        const bool captured = captured_field != nullptr && *captured_field;
        if (n.target == "backward") {
          n.target = captured ? "cache_miss" : "cache_hit";
          n.fill = std::string(captured ? state_fill::kTrusted : state_fill::kInUse);
        }
        set_row(n, "captured", captured ? "yes" : "no (a cached graph)");
        if (const auto calls = captured_calls(e); captured && calls) {
          set_row(n, "calls", std::to_string(calls->targets.size()));
        }
        break;
      }
      default: break;
    }
  }

 private:
  std::map<std::uint32_t, std::uint64_t> metadata_reads_;
  std::optional<std::uint32_t> last_;
};

// What the trace did to one node of the tree, as its fill and rows say.
struct NodeState {
  bool warmup = false;
  bool rerecord = false;
  std::uint64_t replays = 0;
  SaturatingSum copied_bytes;  // the trace's byte counts: their sum may not fit
  std::uint64_t errors = 0;
  std::uint32_t depth = 0;
};

// A node's fill and its state and copied-in rows, from what befell it.
void paint(DrawNode& n, const NodeState& st) {
  std::string_view fill = state_fill::kTrusted;
  std::string state = "recorded";
  if (st.warmup) {
    fill = state_fill::kInert;
    state = "warmup";
  } else if (st.replays > 0) {
    fill = state_fill::kInUse;
    state = fmt::format("replayed x{}", st.replays);
  }
  if (st.rerecord) {
    fill = state_fill::kMoved;
    state = "re-recorded, " + state;
  }
  if (st.errors > 0) {
    fill = state_fill::kError;
    state += fmt::format(", {} errors", st.errors);
  }
  n.fill = std::string(fill);
  set_row(n, "state", state);
  if (st.copied_bytes.value > 0) {
    set_row(n, "copied in", fmt::format("{} bytes", st.copied_bytes.text()));
  }
}

class TreeBuilder {
 public:
  explicit TreeBuilder(std::string name) {
    g_.name = std::move(name);
    g_.kind = "tree";
  }

  void on(const Event& e) {
    switch (e.kind) {
      case EventKind::kWarmup: warmup(e); break;
      case EventKind::kRecord: record(e); break;
      case EventKind::kReplay: replay(e); break;
      case EventKind::kCopyIn: copy_in(e); break;
      case EventKind::kCheckpoint: checkpoint(e); break;
      case EventKind::kPathEnd: path_.clear(); break;
      case EventKind::kShutdown: shutdown(e); break;
      case EventKind::kError: error(e); break;
      case EventKind::kEager: ++eager_; break;
      case EventKind::kCaCacheHit:
      case EventKind::kCaCacheMiss:
      case EventKind::kCaCapture:
      case EventKind::kCaRun:
      case EventKind::kCaGraph:
      case EventKind::kMetadataRead: backwards_.on(e, g_); break;
      default: break;
    }
  }

  DrawGraph finish() {
    for (const auto& [index, st] : state_) paint(g_.nodes[index], st);
    if (eager_ > 0) g_.notes.push_back(fmt::format("{} calls fell back to eager", eager_));
    return std::move(g_);
  }

 private:
  std::string prefix() const { return tree_ == 0 ? "" : fmt::format("t{}.", tree_); }

  std::uint32_t root() {
    const std::string id = fmt::format("t{}", tree_);
    if (std::optional<std::uint32_t> r = g_.find(id)) return *r;
    DrawNode n;
    n.id = id;
    n.kind = "tree";
    n.target = "tree";
    n.title = fmt::format("cudagraph tree {}", tree_);
    n.fill = std::string(state_fill::kPlain);
    return g_.add_node(std::move(n));
  }

  // The node at `depth - 1` of the current path, or the tree's root (also
  // where the trace skipped that depth).
  std::uint32_t parent_at(std::uint32_t depth) {
    if (depth == 0) return root();
    const auto at =
        std::lower_bound(path_.begin(), path_.end(), depth - 1,
                         [](const PathEntry& p, std::uint32_t d) { return p.depth < d; });
    return at != path_.end() && at->depth == depth - 1 ? at->node : root();
  }

  // The path holds only the nodes the trace showed, by depth, so a depth the
  // trace claims costs nothing: no depth may size work.
  void enter(std::uint32_t index, std::uint32_t depth) {
    while (!path_.empty() && path_.back().depth >= depth) path_.pop_back();
    path_.push_back(PathEntry{depth, index});
  }

  std::uint32_t node_for(const std::string& id) {
    if (std::optional<std::uint32_t> i = g_.find(id)) return *i;
    return add(id, "graph", "?", id);
  }

  std::uint32_t add(const std::string& id, std::string kind, std::string target,
                    std::string title) {
    DrawNode n;
    n.id = id;
    n.kind = std::move(kind);
    n.target = std::move(target);
    n.title = std::move(title);
    const std::uint32_t index = g_.add_node(std::move(n));
    state_[index];
    return index;
  }

  void warmup(const Event& e) {
    const std::string node = field(e, F::node);
    const std::string id = prefix() + "w" + (node.starts_with('-') ? node.substr(1) : node);
    const auto depth = static_cast<std::uint32_t>(e.count(F::depth));
    if (g_.find(id)) return;  // a trace that repeats a node id: draw it once
    const std::uint32_t parent = parent_at(depth);
    const std::uint32_t index =
        add(id, "warmup", field(e, F::function), fmt::format("warmup node {}", node));
    DrawNode& n = g_.nodes[index];
    set_row(n, "function", fmt::format("{} (fid {})", field(e, F::function), field(e, F::fid)));
    set_row(n, "depth", std::to_string(depth));
    state_[index].warmup = true;
    state_[index].depth = depth;
    g_.add_edge(parent, index);
    enter(index, depth);
  }

  void record(const Event& e) {
    if (e.has(F::api)) {
      plain(e);
      return;
    }
    const std::string graph = field(e, F::graph);
    const std::string id = prefix() + "g" + graph;
    if (g_.find(id)) return;
    const IntOrNone* parent_graph = e.get_if<IntOrNone>(F::parent);
    std::uint32_t parent = root();
    std::uint32_t depth = 0;
    if (parent_graph != nullptr && parent_graph->value) {
      parent = node_for(prefix() + "g" + std::to_string(*parent_graph->value));
      depth = state_[parent].depth + 1;
    }
    // A trace is input: a record that names its own graph as its parent made
    // that graph just above, as the parent's placeholder. Drawn as the
    // placeholder, as a graph replayed before its record is (found by
    // fuzz_render; the id must stay unique).
    if (g_.find(id)) return;
    const std::uint32_t index =
        add(id, "graph", field(e, F::function), fmt::format("graph {}", graph));
    DrawNode& n = g_.nodes[index];
    set_row(n, "function", fmt::format("{} (fid {})", field(e, F::function), field(e, F::fid)));
    const std::string reason = field(e, F::reason, "no_child");
    set_row(n, "recorded", fmt::format("action {}", e.action));
    set_row(n, "reason", reason);
    if (e.has(F::input)) {
      set_row(n, "moved",
              fmt::format("input {}: {} -> {}", field(e, F::input), field(e, F::old_ptr),
                          field(e, F::new_ptr)));
    }
    set_row(n, "static", field(e, F::static_, "[]"));
    set_row(n, "non_static", field(e, F::non_static, "[]"));
    if (field(e, F::managed, "[]") != "[]") set_row(n, "managed", field(e, F::managed));
    set_row(n, "steps", field(e, F::steps));
    NodeState& st = state_[index];
    st.depth = depth;
    st.rerecord = decision_of(e) != Decision::kRecordFirst;
    g_.add_edge(parent, index, st.rerecord ? "re-record" : "");
    enter(index, depth);
  }

  void plain(const Event& e) {
    const std::string id = fmt::format("plain.{}", field(e, F::function));
    if (g_.find(id)) return;
    const std::uint32_t index = add(id, "plain", field(e, F::function),
                                    fmt::format("torch.cuda.graph {}", field(e, F::function)));
    set_row(g_.nodes[index], "steps", field(e, F::steps));
  }

  void replay(const Event& e) {
    if (e.has(F::api)) {
      if (auto i = g_.find(fmt::format("plain.{}", field(e, F::function)))) ++state_[*i].replays;
      return;
    }
    const std::uint32_t index = node_for(prefix() + "g" + field(e, F::graph));
    ++state_[index].replays;
    enter(index, state_[index].depth);
  }

  void copy_in(const Event& e) {
    if (!e.has(F::graph)) return;
    const std::uint32_t index = node_for(prefix() + "g" + field(e, F::graph));
    state_[index].copied_bytes.add(e.count(F::bytes));
  }

  void checkpoint(const Event& e) {
    const std::string node = field(e, F::node);
    const std::string target_id =
        prefix() + (node.starts_with('-') ? "w" + node.substr(1) : "g" + node);
    const std::uint32_t target = node_for(target_id);
    DrawNode n;
    n.id = fmt::format("{}checkpoint{}", prefix(), field(e, F::count));
    if (g_.find(n.id)) return;
    n.kind = "checkpoint";
    n.target = "checkpoint";
    n.title = fmt::format("checkpoint #{}", field(e, F::count));
    n.fill = std::string(state_fill::kCheckpoint);
    n.attrs.push_back({"at", fmt::format("action {}", e.action), std::nullopt, false});
    n.attrs.push_back({"live storages", field(e, F::live), std::nullopt, false});
    n.attrs.push_back(
        {"pool blocks",
         fmt::format("{} -> {}", field(e, F::pool_blocks_before), field(e, F::pool_blocks_after)),
         std::nullopt, false});
    const std::uint32_t index = g_.add_node(std::move(n));
    g_.add_edge(target, index, "restored to", /*dotted=*/true);
  }

  // The manager was dropped: its graphs are gone, and a later compiled call
  // starts tree t+1 (graph ids restart at 0).
  void shutdown(const Event& e) {
    std::string note = fmt::format("cudagraph tree {} shut down by action {}", tree_, e.action);
    if (e.has(F::reason)) note += fmt::format(" ({})", field(e, F::reason));
    if (e.has(F::graphs)) note += fmt::format(", holding {} graphs", field(e, F::graphs));
    g_.notes.push_back(std::move(note));
    ++tree_;
    path_.clear();
  }

  void error(const Event& e) {
    if (!e.has(F::graph)) return;
    const std::uint32_t index = node_for(prefix() + "g" + field(e, F::graph));
    ++state_[index].errors;
    set_row(g_.nodes[index], "error",
            fmt::format("{} ({})", field(e, F::id), field(e, F::where, "")));
  }

  DrawGraph g_;
  std::map<std::uint32_t, NodeState> state_;
  BackwardChain backwards_;
  struct PathEntry {
    std::uint32_t depth;
    std::uint32_t node;
  };
  std::vector<PathEntry> path_;  // ascending depths
  std::uint32_t tree_ = 0;
  std::uint64_t eager_ = 0;
};

}  // namespace

DrawGraph draw_tree(std::span<const Event> events, std::string name) {
  TreeBuilder builder(std::move(name));
  for (const Event& e : events) builder.on(e);
  return builder.finish();
}

}  // namespace capsim
