// FxGraph: the graph compiled autograd captures, in torch.fx's shape.
//
// Nodes are placeholders (`inputs`, `sizes`, `scalars`, `hooks`), calls of a
// function target named as PyTorch names it (`ops.MulBackward0`,
// `validate_outputs`, `torch.add`, `copy_slices_prologue`, `call_backward`,
// `make_subclass`, `inductor.accumulate_grad_`, `call_hook`, ...) and one
// output. Arguments are node references, constants and lists of them. Names
// are unique and derived from the target as torch.fx does (snake case of its
// last component, then `_1`, `_2`, ...). `to_text` is the stable form that
// `capsim capture` prints and that properties compare byte for byte.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/fx_arg.hpp"
#include "model/hashing.hpp"
#include "model/result.hpp"

namespace capsim {

// X(enumerator, name)
#define CAPSIM_FX_OPS(X)            \
  X(kPlaceholder, "placeholder")    \
  X(kCallFunction, "call_function") \
  X(kOutput, "output")

enum class FxOp : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_FX_OPS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view fx_op_name(FxOp op);

struct FxNode {
  FxOp op = FxOp::kCallFunction;
  std::string name;
  std::string target;
  std::vector<FxArg> args;
  friend bool operator==(const FxNode&, const FxNode&) = default;
};

// The limit on nodes in one FxGraph.
inline constexpr std::size_t kMaxFxNodes = std::size_t{1} << 24;

class FxGraph {
 public:
  explicit FxGraph(std::string name = "CompiledAutograd0") : name_(std::move(name)) {}

  FxNodeId placeholder(const std::string& name);
  // A call of `target`; every node argument must already exist.
  Result<FxNodeId> call_function(std::string_view target, std::vector<FxArg> args);
  // The single output; nothing may follow it.
  Status output(std::vector<FxArg> args);

  const std::vector<FxNode>& nodes() const { return nodes_; }
  const std::string& name() const { return name_; }
  bool has_output() const { return !nodes_.empty() && nodes_.back().op == FxOp::kOutput; }

  // A graph with the same nodes (names kept) in `order`, references remapped;
  // nodes left out of `order` are dropped. Every reference must point to a
  // node placed earlier in `order` (passes reorder and dce through this).
  Result<FxGraph> rebuilt(const std::vector<FxNodeId>& order) const&;
  // The same for a graph about to be replaced (`g = std::move(g).rebuilt(o)`):
  // its nodes are moved, not copied, unless `order` places one twice. On an
  // error the graph is left valid but unspecified.
  Result<FxGraph> rebuilt(const std::vector<FxNodeId>& order) &&;
  // Replaces argument `index` of node `id` (a pass renumbering a getitem);
  // a node it refers to must exist.
  Status replace_arg(FxNodeId id, std::size_t index, FxArg value);
  // Which nodes each node's arguments refer to.
  std::vector<FxNodeId> uses(FxNodeId id) const;
  // The same, one at a time and in the same order, without a vector: the
  // capture's passes ask it of every node.
  template <typename Fn>
  void for_each_use(FxNodeId id, Fn&& fn) const {
    for_each_node_ref(nodes_.at(id).args, fn);
  }
  // The first of uses(id), if any.
  std::optional<FxNodeId> first_use(FxNodeId id) const;

  // Same name and same nodes (names, targets, arguments), in the same order:
  // what makes to_text() equal, without writing it.
  friend bool operator==(const FxGraph& a, const FxGraph& b) {
    return a.name_ == b.name_ && a.nodes_ == b.nodes_;
  }

  // One line per node: `%name = op[target=T](args)`, args written as Python
  // would (None, True, 1.5, 'text', [a, b]).
  std::string to_text() const;

 private:
  Status check_args(const std::vector<FxArg>& args) const;
  std::string unique_name(const std::string& base);
  // fx_snake_case(target), remembered: a capture calls a few targets
  // thousands of times.
  const std::string& snake_case_of(std::string_view target);
  template <typename Fn>
  static void for_each_node_ref(const std::vector<FxArg>& args, Fn& fn) {
    for (const FxArg& a : args) {
      if (a.kind == FxArg::Kind::kNode) fn(a.node);
      if (a.nests()) for_each_node_ref(a.items(), fn);
    }
  }

  std::string name_;
  std::vector<FxNode> nodes_;
  // Hashed: a capture names every node, and only lookups reach output (the
  // maps are never iterated), so their order cannot leak.
  std::unordered_map<std::string, std::uint32_t, TextHash, std::equal_to<>> name_counts_;
  // A pure function of the target: safe to copy with the graph.
  std::unordered_map<std::string, std::string, TextHash, std::equal_to<>> snake_case_of_;
};

// A node's arguments as to_text writes them, without the parentheses.
std::string fx_args_text(const FxGraph& graph, const std::vector<FxArg>& args);

// `args` with every node reference %k replaced by `by[k]` (nested lists,
// tuples and keywords too): the arguments of a graph copied into another,
// its numbering mapped to the values they stand for there.
std::vector<FxArg> substitute_nodes(const std::vector<FxArg>& args, const std::vector<FxArg>& by);

// The graph node for node, one line each, in the form a recorder writes for a
// real PyTorch graph (docs/trace-format.md §6.3), so that the two compare line
// by line: `%i = placeholder NAME`, `%i = TARGET(ARGS)`, `%i = output(ARGS)`.
// A node is `%k`, its position; floats are Python's repr; names are left out.
std::vector<std::string> fx_node_lines(const FxGraph& graph);

// torch.fx's snake case: "MulBackward0" -> "mul_backward0"; the last dotted
// component of a target only, or the op of "torch.ops.aten.mul.Tensor" ("mul").
std::string fx_snake_case(std::string_view target);

}  // namespace capsim
