// FxGraph: the graph compiled autograd captures, in torch.fx's shape.
//
// Nodes are placeholders (`inputs`, `sizes`, `scalars`, `hooks`), calls of a
// function target named as PyTorch names it (`ops.MulBackward0`,
// `validate_outputs`, `torch.add`, `copy_slices_prologue`, `call_backward`,
// `make_subclass`, `inductor.accumulate_grad_`, `call_hook`, ...) and one
// output. Arguments are node references, constants and lists of them. Names
// are unique and derived from the target as torch.fx does (snake case of its
// last component, then `_1`, `_2`, ...). `to_text` is the stable form that
// `capsim capture` prints and that properties compare byte for byte. The
// graph stores its nodes as records, their arguments in one vector and their
// targets and names interned (model/fx_node.hpp says why); `nodes()` hands
// out views.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/fx_arg.hpp"
#include "model/fx_node.hpp"
#include "model/hashing.hpp"
#include "model/result.hpp"

namespace capsim {

// The limit on nodes in one FxGraph, and on the arguments of all its nodes
// together (offsets into the graph's argument vector are 32 bits).
inline constexpr std::size_t kMaxFxNodes = std::size_t{1} << 24;
inline constexpr std::size_t kMaxFxArgs = std::size_t{1} << 30;

class FxGraph;

// The nodes of a graph, in order, as views (see FxNodeView): what
// `FxGraph::nodes()` returns. Valid until the graph next changes.
class FxNodeRange {
 public:
  class iterator {
   public:
    using value_type = FxNodeView;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const FxGraph* g, FxNodeId i) : g_(g), i_(i) {}
    FxNodeView operator*() const;
    iterator& operator++() {
      ++i_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++i_;
      return old;
    }
    friend bool operator==(const iterator&, const iterator&) = default;

   private:
    const FxGraph* g_ = nullptr;
    FxNodeId i_ = 0;
  };

  explicit FxNodeRange(const FxGraph& g) : g_(&g) {}
  std::size_t size() const;
  bool empty() const { return size() == 0; }
  FxNodeView operator[](FxNodeId id) const;
  iterator begin() const { return {g_, 0}; }
  iterator end() const { return {g_, static_cast<FxNodeId>(size())}; }

 private:
  const FxGraph* g_;
};

class FxGraph {
 public:
  explicit FxGraph(std::string name = "CompiledAutograd0") : name_(std::move(name)) {}

  FxNodeId placeholder(const std::string& name);
  // A call of `target`; every node argument must already exist.
  Result<FxNodeId> call_function(std::string_view target, std::vector<FxArg> args) {
    return call_function_moving(target, args);
  }
  // The same, moving the arguments out of `args` (a caller's array on the
  // stack: no vector, and no copy through an initializer list). On an error
  // nothing is moved.
  Result<FxNodeId> call_function_moving(std::string_view target, std::span<FxArg> args);
  // The single output; nothing may follow it.
  Status output(std::vector<FxArg> args);

  FxNodeRange nodes() const { return FxNodeRange(*this); }
  std::size_t size() const { return records_.size(); }
  FxNodeView node(FxNodeId id) const;
  const std::string& name() const { return name_; }
  bool has_output() const { return !records_.empty() && records_.back().op == FxOp::kOutput; }

  // A graph with the same nodes (names kept) in `order`, references remapped;
  // nodes left out of `order` are dropped. Every reference must point to a
  // node placed earlier in `order` (passes reorder and dce through this).
  Result<FxGraph> rebuilt(const std::vector<FxNodeId>& order) const&;
  // The same for a graph about to be replaced (`g = std::move(g).rebuilt(o)`):
  // its arguments are moved, not copied, unless `order` places a node twice.
  // On an error the graph is left valid but unspecified.
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
    for_each_node_ref(args_of(records_.at(id)), fn);
  }
  // The first of uses(id), if any.
  std::optional<FxNodeId> first_use(FxNodeId id) const;

  // Same name and same nodes (names, targets, arguments), in the same order:
  // what makes to_text() equal, without writing it.
  friend bool operator==(const FxGraph& a, const FxGraph& b);

  // One line per node: `%name = op[target=T](args)`, args written as Python
  // would (None, True, 1.5, 'text', [a, b]).
  std::string to_text() const;

  // The bytes the graph holds on the heap (its node records, its argument
  // vector with what the arguments own, its interned texts), as containers
  // report their capacities: what the capture benchmark counts per node.
  std::size_t heap_bytes() const;

 private:
  // A node in the graph's storage: 24 bytes, no heap block of its own.
  struct Record {
    FxOp op = FxOp::kCallFunction;
    std::uint32_t target = 0;      // an interned text
    std::uint32_t name_base = 0;   // an interned text
    std::uint32_t name_count = 0;  // 0: the name is the base; k: `base_k`
    std::uint32_t args_begin = 0;  // into args_
    std::uint32_t args_count = 0;
  };
  static constexpr std::uint32_t kNoText = UINT32_MAX;

  std::span<const FxArg> args_of(const Record& r) const {
    return {args_.data() + r.args_begin, r.args_count};
  }
  Status check_args(std::span<const FxArg> args) const;
  // Room for one more node with `more_args` arguments; `op` and `target`
  // name it in the error.
  Status check_room(FxOp op, std::string_view target, std::size_t more_args) const;
  std::uint32_t intern(std::string_view text);
  // The name base of a call of `target`: fx_snake_case(target), remembered
  // by the target's text (a capture calls a few targets thousands of times).
  std::uint32_t snake_case_of(std::uint32_t target);
  void append_record(FxOp op, std::uint32_t target, std::uint32_t base, bool counted,
                     std::span<FxArg> moved_args);
  template <typename Fn>
  static void for_each_node_ref(std::span<const FxArg> args, Fn& fn) {
    for (const FxArg& a : args) {
      if (a.kind == FxArg::Kind::kNode) fn(a.node);
      if (a.nests()) for_each_node_ref(a.items(), fn);
    }
  }
  template <typename Self>
  static Result<FxGraph> rebuild(Self&& self, const std::vector<FxNodeId>& order);

  std::string name_;
  std::vector<Record> records_;
  std::vector<FxArg> args_;
  // Interned texts (targets and name bases), by id; a deque so that a text
  // stays where it is while others are added. The index is hashed: only
  // lookups reach output, never its order.
  std::deque<std::string> texts_;
  std::unordered_map<std::string, std::uint32_t, TextHash, std::equal_to<>> text_ids_;
  // By text id: how many nodes took that text as their name base, and the
  // name base of a call of that text as target (kNoText: not asked yet).
  std::vector<std::uint32_t> name_counts_;
  std::vector<std::uint32_t> snake_case_of_;
};

inline FxNodeView FxNodeRange::iterator::operator*() const {
  return g_->node(i_);
}
inline std::size_t FxNodeRange::size() const {
  return g_->size();
}
inline FxNodeView FxNodeRange::operator[](FxNodeId id) const {
  return g_->node(id);
}

// A node's arguments as to_text writes them, without the parentheses.
std::string fx_args_text(const FxGraph& graph, std::span<const FxArg> args);

// `args` with every node reference %k replaced by `by[k]` (nested lists,
// tuples and keywords too): the arguments of a graph copied into another,
// its numbering mapped to the values they stand for there.
std::vector<FxArg> substitute_nodes(std::span<const FxArg> args, const std::vector<FxArg>& by);

// The graph node for node, one line each, in the form a recorder writes for a
// real PyTorch graph (docs/trace-format.md §6.3), so that the two compare line
// by line: `%i = placeholder NAME`, `%i = TARGET(ARGS)`, `%i = output(ARGS)`.
// A node is `%k`, its position; floats are Python's repr; names are left out.
std::vector<std::string> fx_node_lines(const FxGraph& graph);

// torch.fx's snake case: "MulBackward0" -> "mul_backward0"; the last dotted
// component of a target only, or the op of "torch.ops.aten.mul.Tensor" ("mul").
std::string fx_snake_case(std::string_view target);

}  // namespace capsim
