// The end_capture passes of release_form_passes.hpp, over a doubly linked node order that
// moves nodes as torch.fx's Node.append and Node.prepend do.
#include "sim/compiled_autograd/release_form_passes.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

namespace capsim {
// Named, so that a unity build (tests/fuzz/run-libfuzzer.sh) keeps these
// apart from the other captures' internals.
namespace release_form_passes {
namespace {

constexpr FxNodeId kNil = static_cast<FxNodeId>(-1);
constexpr std::string_view kGetitem = "_operator.getitem";
constexpr std::string_view kCallHook = "torch._dynamo.external_utils.call_hook";
constexpr std::string_view kAccumulate = "torch._dynamo.external_utils.call_accumulate_grad";

// A graph's node order as a doubly linked list, with torch.fx's moves.
class NodeOrder {
 public:
  explicit NodeOrder(std::size_t n) : prev_(n), next_(n), live_(n, true) {
    for (std::size_t i = 0; i < n; ++i) {
      prev_[i] = i == 0 ? kNil : static_cast<FxNodeId>(i - 1);
      next_[i] = i + 1 == n ? kNil : static_cast<FxNodeId>(i + 1);
    }
    head_ = n == 0 ? kNil : 0;
  }
  FxNodeId prev(FxNodeId n) const { return prev_[n]; }
  FxNodeId next(FxNodeId n) const { return next_[n]; }
  bool live(FxNodeId n) const { return live_[n]; }
  // anchor.append(n): n moves to right after anchor.
  void append(FxNodeId anchor, FxNodeId n) {
    if (anchor == n || next_[anchor] == n) return;
    unlink(n);
    link(n, anchor, next_[anchor]);
  }
  // anchor.prepend(n): n moves to right before anchor.
  void prepend(FxNodeId anchor, FxNodeId n) {
    if (anchor == n || prev_[anchor] == n) return;
    unlink(n);
    link(n, prev_[anchor], anchor);
  }
  void erase(FxNodeId n) {
    unlink(n);
    live_[n] = false;
  }
  std::vector<FxNodeId> sequence() const {
    std::vector<FxNodeId> out;
    for (FxNodeId n = head_; n != kNil; n = next_[n]) out.push_back(n);
    return out;
  }
  // Positions in the current order (recomputed on each call: O(n)).
  std::vector<std::size_t> positions() const {
    std::vector<std::size_t> pos(prev_.size(), 0);
    std::size_t i = 0;
    for (FxNodeId n = head_; n != kNil; n = next_[n]) pos[n] = i++;
    return pos;
  }

 private:
  void unlink(FxNodeId n) {
    if (prev_[n] != kNil) next_[prev_[n]] = next_[n];
    if (next_[n] != kNil) prev_[next_[n]] = prev_[n];
    if (head_ == n) head_ = next_[n];
    prev_[n] = next_[n] = kNil;
  }
  void link(FxNodeId n, FxNodeId before, FxNodeId after) {
    prev_[n] = before;
    next_[n] = after;
    if (before != kNil) next_[before] = n;
    if (after != kNil) prev_[after] = n;
    if (before == kNil) head_ = n;
  }
  std::vector<FxNodeId> prev_, next_;
  std::vector<bool> live_;
  FxNodeId head_ = kNil;
};

void node_args(const std::vector<FxArg>& args, std::vector<FxNodeId>& out) {
  for (const FxArg& a : args) {
    if (a.kind == FxArg::Kind::kNode) out.push_back(a.node);
    if (a.nests()) node_args(a.items(), out);
  }
}

class Passes {
 public:
  Passes(const FxGraph& g, const std::vector<FxNodeId>& placeholders)
      : g_(g), nodes_(g.nodes()), order_(nodes_.size()), users_(nodes_.size()) {
    CAPSIM_CHECK(placeholders.size() == 5, "five placeholders");
    sizes_ = placeholders[1];
    for (FxNodeId n = 0; n < nodes_.size(); ++n) {
      for (FxNodeId u : g.uses(n)) {
        if (std::find(users_[u].begin(), users_[u].end(), n) == users_[u].end())
          users_[u].push_back(n);
      }
    }
  }

  Result<FxGraph> run() {
    delay_unpack_hooks();
    reorder_tensor_pre_hooks();
    reorder_pre_hooks_asap();
    reorder_accumulate_grad();
    reorder_pre_hooks_to_mimic_eager();
    reorder_post_acc_grad_hooks();
    reorder_post_hooks();
    dce();
    return rebuild();
  }

 private:
  bool is(FxNodeId n, std::string_view target) const { return nodes_[n].target == target; }
  bool is_hook(FxNodeId n, std::string_view type) const {
    if (!is(n, kCallHook)) return false;
    const FxArg& last = nodes_[n].args.back();
    return last.kind == FxArg::Kind::kKeyword && last.items().at(0).text() == type;
  }
  bool is_placeholder(FxNodeId n) const {
    if (nodes_[n].op == FxOp::kPlaceholder) return true;
    return is(n, kGetitem) && nodes_[nodes_[n].args[0].node].op == FxOp::kPlaceholder;
  }
  FxNodeId latest(const std::vector<FxNodeId>& candidates) const {
    const auto pos = order_.positions();
    return *std::max_element(candidates.begin(), candidates.end(),
                             [&](FxNodeId a, FxNodeId b) { return pos[a] < pos[b]; });
  }
  // find_nodes(op="call_function", target=...): in the order at the call.
  template <typename Pred>
  std::vector<FxNodeId> find(Pred pred) const {
    std::vector<FxNodeId> out;
    for (FxNodeId n : order_.sequence()) {
      if (nodes_[n].op == FxOp::kCallFunction && pred(n)) out.push_back(n);
    }
    return out;
  }
  std::vector<FxNodeId> arg_nodes(const FxArg& a) const {
    std::vector<FxNodeId> out;
    node_args({a}, out);
    return out;
  }

  // delay_unpack_hook_nodes: each unpack hook's call moves to just before
  // its first user.
  void delay_unpack_hooks() {
    for (FxNodeId n : find([&](FxNodeId x) { return is_hook(x, "unpack_hook"); })) {
      if (users_[n].empty()) continue;
      const auto pos = order_.positions();
      const FxNodeId first =
          *std::min_element(users_[n].begin(), users_[n].end(),
                            [&](FxNodeId a, FxNodeId b) { return pos[a] < pos[b]; });
      order_.prepend(first, n);
    }
  }

  void reorder_tensor_pre_hooks() {
    for (FxNodeId n : find([&](FxNodeId x) { return is_hook(x, "tensor_pre_hook"); })) {
      const FxNodeId hook = nodes_[n].args[0].node, input = nodes_[n].args[1].node;
      if (input != order_.prev(n) && !is_placeholder(input)) {
        order_.append(input, hook);
        order_.append(hook, n);
      }
    }
  }

  void reorder_pre_hooks_asap() {
    for (FxNodeId n : find([&](FxNodeId x) { return is_hook(x, "pre_hook"); })) {
      const FxNodeId hook = nodes_[n].args[0].node;
      std::vector<FxNodeId> inputs = arg_nodes(nodes_[n].args[1]);
      std::vector<FxNodeId> block{n}, moved, sources;
      for (FxNodeId x : inputs) {
        if (is(x, kGetitem)) {
          moved.push_back(x);
          sources.push_back(nodes_[x].args[0].node);
          block.push_back(x);
        }
      }
      for (std::size_t i = 0; i < moved.size(); ++i) {
        inputs.erase(std::find(inputs.begin(), inputs.end(), moved[i]));
        inputs.push_back(sources[i]);
      }
      if (inputs.empty()) continue;
      const FxNodeId arg = latest(inputs);
      if (arg != order_.prev(n) && !is_placeholder(arg)) {
        order_.append(arg, hook);
        for (FxNodeId x : block) order_.append(hook, x);
      }
    }
  }

  void reorder_accumulate_grad() {
    for (FxNodeId n : find([&](FxNodeId x) { return is(x, kAccumulate); })) {
      const auto& args = nodes_[n].args;
      // (variable, grad, has_post_hooks) or (variable, variable_grad, grad, ...).
      const bool four = args.size() == 4;
      std::vector<FxNodeId> anchors = arg_nodes(args[0]);
      if (four) {
        for (FxNodeId x : arg_nodes(args[1])) anchors.push_back(x);
      }
      const FxArg& grad = args[four ? 2 : 1];
      std::optional<FxNodeId> getitem;
      if (grad.kind == FxArg::Kind::kNode) {
        FxNodeId g = grad.node;
        if (is(g, kGetitem)) {
          getitem = g;
          g = nodes_[g].args[0].node;
        }
        anchors.push_back(g);
      }
      const FxNodeId arg = latest(anchors);
      if (arg != order_.prev(n) && !is_placeholder(arg)) {
        order_.append(arg, n);
        if (getitem) order_.append(arg, *getitem);
      }
    }
  }

  void reorder_pre_hooks_to_mimic_eager() {
    const auto hooks = find([&](FxNodeId x) { return is_hook(x, "pre_hook"); });
    for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) {
      const FxNodeId n = *it, hook = nodes_[n].args[0].node;
      const auto& users = users_[n];
      if (users.empty() || users_[users[0]].empty()) continue;
      const FxNodeId registered = users_[users[0]][0];
      if (registered != order_.next(n)) {
        order_.prepend(registered, hook);
        order_.prepend(registered, n);
        for (FxNodeId g : users) order_.prepend(registered, g);
      }
    }
  }

  std::optional<FxNodeId> user_of(FxNodeId param, bool accumulate, bool last) const {
    std::optional<FxNodeId> found;
    for (FxNodeId u : users_[param]) {
      if (accumulate ? is(u, kAccumulate) : is_hook(u, "post_acc_grad_hook")) {
        found = u;
        if (!last) break;
      }
    }
    return found;
  }

  void reorder_post_acc_grad_hooks() {
    const auto hooks = find([&](FxNodeId x) { return is_hook(x, "post_acc_grad_hook"); });
    for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) {
      const FxNodeId n = *it, hook = nodes_[n].args[0].node;
      const auto acc = user_of(nodes_[n].args[1].node, true, false);
      CAPSIM_CHECK(acc.has_value(), "post_acc_grad_hook must have corresponding acc grad node");
      order_.append(*acc, hook);
      order_.append(hook, n);
    }
  }

  void reorder_post_hooks() {
    const auto hooks = find([&](FxNodeId x) { return is_hook(x, "post_hook"); });
    for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) {
      const FxNodeId n = *it, hook = nodes_[n].args[0].node;
      if (!nodes_[n].args[1].items().empty()) continue;  // only hooks of output-less nodes move
      std::vector<FxNodeId> candidates = arg_nodes(nodes_[n].args[2]);
      for (FxNodeId in : arg_nodes(nodes_[n].args[2])) {
        for (FxNodeId u : users_[in]) {
          if (!is(u, kCallHook)) candidates.push_back(u);
        }
      }
      if (candidates.empty()) continue;
      const FxNodeId arg = latest(candidates);
      if (is(arg, kAccumulate)) {
        if (const auto post = user_of(nodes_[arg].args[0].node, false, true)) {
          order_.append(*post, hook);
          order_.append(hook, n);
          continue;
        }
      }
      if (arg != order_.prev(n) && !is_placeholder(arg)) {
        order_.append(arg, hook);
        order_.append(hook, n);
      }
    }
  }

  // Graph.eliminate_dead_code with compiled autograd's is_impure: every use
  // of a placeholder stays, and so do hooks, backwards, accumulations and
  // the final-callbacks stub.
  void dce() {
    std::vector<std::size_t> live_users(nodes_.size(), 0);
    for (FxNodeId n = 0; n < nodes_.size(); ++n) live_users[n] = users_[n].size();
    const auto seq = order_.sequence();
    for (auto it = seq.rbegin(); it != seq.rend(); ++it) {
      const FxNodeId n = *it;
      const FxNodeView node = nodes_[n];
      const bool impure = node.op != FxOp::kCallFunction || is_placeholder(n) || is(n, kCallHook) ||
                          is(n, kAccumulate) ||
                          is(n, "torch._dynamo.external_utils.call_backward") ||
                          is(n, "torch._dynamo.external_utils._exec_final_callbacks_stub");
      if (impure || live_users[n] != 0) continue;
      for (FxNodeId u : g_.uses(n)) --live_users[u];
      order_.erase(n);
    }
    // remove_unused_sizes: a sizes[j] nobody reads goes; the rest are renumbered.
    for (FxNodeId u : users_[sizes_]) {
      if (!order_.live(u)) continue;
      const bool read = std::any_of(users_[u].begin(), users_[u].end(),
                                    [&](FxNodeId x) { return order_.live(x); });
      if (read) {
        renumber_.emplace_back(u, static_cast<std::int64_t>(renumber_.size()));
      } else {
        order_.erase(u);
      }
    }
  }

  Result<FxGraph> rebuild() {
    FxGraph copy = g_;
    for (const auto& [node, index] : renumber_) {
      CAPSIM_TRY(copy.replace_arg(node, 1, FxArg::integer(index)));
    }
    return copy.rebuilt(order_.sequence());
  }

  const FxGraph& g_;
  const FxNodeRange nodes_;
  NodeOrder order_;
  std::vector<std::vector<FxNodeId>> users_;
  FxNodeId sizes_ = 0;
  std::vector<std::pair<FxNodeId, std::int64_t>> renumber_;
};

}  // namespace
}  // namespace release_form_passes

Result<FxGraph> run_end_capture_passes(const FxGraph& graph,
                                       const std::vector<FxNodeId>& placeholders) {
  release_form_passes::Passes passes(graph, placeholders);
  return passes.run();
}

}  // namespace capsim
