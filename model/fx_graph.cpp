// FxGraph (see fx_graph.hpp): building a graph with torch.fx's naming, uses and reordering
// (rebuilt), and the stable text form that properties compare.
#include "model/fx_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <type_traits>
#include <utility>

namespace capsim {

std::string_view fx_op_name(FxOp op) {
  switch (op) {
#define CAPSIM_NAME_(e, name) \
  case FxOp::e: return name;
    CAPSIM_FX_OPS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

std::string fx_snake_case(std::string_view target) {
  auto dot = target.rfind('.');
  // An ATen-style op, torch.ops.<namespace>.<op>.<overload>, is named after
  // the op, as make_fx names it ("mul", "add_", "accumulate_grad_").
  if (target.rfind("torch.ops.", 0) == 0 && dot != std::string_view::npos &&
      std::count(target.begin(), target.end(), '.') >= 4) {
    target = target.substr(0, dot);
    dot = target.rfind('.');
  }
  const std::string_view last = dot == std::string_view::npos ? target : target.substr(dot + 1);
  std::string out;
  for (std::size_t i = 0; i < last.size(); ++i) {
    const char c = last[i];
    const bool upper = std::isupper(static_cast<unsigned char>(c)) != 0;
    if (upper && i > 0 && std::islower(static_cast<unsigned char>(last[i - 1])) != 0) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out.empty() ? "node" : out;
}

std::string FxNodeView::name() const {
  std::string out;
  append_name(out);
  return out;
}

void FxNodeView::append_name(std::string& out) const {
  out += name_base;
  if (name_count == 0) return;
  out += '_';
  out += std::to_string(name_count);
}

FxNodeView FxGraph::node(FxNodeId id) const {
  CAPSIM_CHECK(id < records_.size(), "an fx node id within the graph");
  const Record& r = records_[id];
  return {r.op, texts_[r.target], args_of(r), texts_[r.name_base], r.name_count};
}

std::uint32_t FxGraph::intern(std::string_view text) {
  if (auto it = text_ids_.find(text); it != text_ids_.end()) return it->second;
  CAPSIM_CHECK(texts_.size() < kMaxFxNodes, "fx text limit reached");
  const auto id = static_cast<std::uint32_t>(texts_.size());
  texts_.emplace_back(text);
  text_ids_.emplace(texts_.back(), id);
  name_counts_.push_back(0);
  snake_case_of_.push_back(kNoText);
  return id;
}

std::uint32_t FxGraph::snake_case_of(std::uint32_t target) {
  if (snake_case_of_[target] == kNoText) {
    const std::uint32_t base = intern(fx_snake_case(texts_[target]));
    snake_case_of_[target] = base;
  }
  return snake_case_of_[target];
}

void FxGraph::append_record(FxOp op, std::uint32_t target, std::uint32_t base, bool counted,
                            std::span<FxArg> moved_args) {
  Record r{op,
           target,
           base,
           counted ? name_counts_[base]++ : 0,
           static_cast<std::uint32_t>(args_.size()),
           static_cast<std::uint32_t>(moved_args.size())};
  args_.insert(args_.end(), std::make_move_iterator(moved_args.begin()),
               std::make_move_iterator(moved_args.end()));
  records_.push_back(r);
}

Status FxGraph::check_room(FxOp op, std::string_view target, std::size_t more_args) const {
  // Formatted only on an error: every call of a capture asks.
  if (has_output()) {
    return make_error(
        fmt::format("fx graph '{}': {} {} after the output", name_, fx_op_name(op), target));
  }
  if (records_.size() >= kMaxFxNodes) {
    return make_error(fmt::format("fx graph '{}': more than {} nodes", name_, kMaxFxNodes));
  }
  if (more_args > kMaxFxArgs - args_.size()) {
    return make_error(
        fmt::format("fx graph '{}': more than {} arguments in all", name_, kMaxFxArgs));
  }
  return {};
}

FxNodeId FxGraph::placeholder(const std::string& name) {
  CAPSIM_CHECK(check_room(FxOp::kPlaceholder, name, 0).ok(), "room for a placeholder");
  const std::uint32_t text = intern(name);
  append_record(FxOp::kPlaceholder, text, text, true, {});
  return static_cast<FxNodeId>(records_.size() - 1);
}

Status FxGraph::check_args(std::span<const FxArg> args) const {
  for (const FxArg& a : args) {
    if (a.kind == FxArg::Kind::kNode && a.node >= records_.size()) {
      return make_error(fmt::format(
          "fx graph '{}': argument refers to node {}, which does not exist", name_, a.node));
    }
    if (a.nests()) CAPSIM_TRY(check_args(a.items()));
  }
  return {};
}

Result<FxNodeId> FxGraph::call_function_moving(std::string_view target, std::span<FxArg> args) {
  CAPSIM_TRY(check_room(FxOp::kCallFunction, target, args.size()));
  CAPSIM_TRY(check_args(args));
  const std::uint32_t text = intern(target);
  append_record(FxOp::kCallFunction, text, snake_case_of(text), true, args);
  return static_cast<FxNodeId>(records_.size() - 1);
}

Status FxGraph::replace_arg(FxNodeId id, std::size_t index, FxArg value) {
  if (id >= records_.size() || index >= records_[id].args_count) {
    return make_error(fmt::format("fx graph '{}': node {} has no argument {}", name_, id, index));
  }
  CAPSIM_TRY(check_args({&value, 1}));
  args_[records_[id].args_begin + index] = std::move(value);
  return {};
}

Status FxGraph::output(std::vector<FxArg> args) {
  if (has_output()) return make_error(fmt::format("fx graph '{}': a second output", name_));
  CAPSIM_TRY(check_room(FxOp::kOutput, "output", args.size()));
  CAPSIM_TRY(check_args(args));
  // "output" names the output without taking a count, as torch.fx does.
  const std::uint32_t text = intern("output");
  append_record(FxOp::kOutput, text, text, false, args);
  return {};
}

namespace {
Status remap(FxArg& a, const std::vector<std::optional<FxNodeId>>& to) {
  if (a.kind == FxArg::Kind::kNode) {
    if (!to[a.node]) return make_error(fmt::format("fx graph: a use of node {} before it", a.node));
    a.node = *to[a.node];
  }
  if (a.nests()) {
    for (FxArg& item : a.mutable_items()) CAPSIM_TRY(remap(item, to));
  }
  return {};
}
}  // namespace

std::vector<FxNodeId> FxGraph::uses(FxNodeId id) const {
  std::vector<FxNodeId> out;
  for_each_use(id, [&out](FxNodeId u) { out.push_back(u); });
  return out;
}

namespace {
std::optional<FxNodeId> first_node_ref(std::span<const FxArg> args) {
  for (const FxArg& a : args) {
    if (a.kind == FxArg::Kind::kNode) return a.node;
    if (a.nests()) {
      if (const std::optional<FxNodeId> n = first_node_ref(a.items())) return n;
    }
  }
  return std::nullopt;
}
}  // namespace

std::optional<FxNodeId> FxGraph::first_use(FxNodeId id) const {
  return first_node_ref(args_of(records_.at(id)));
}

// Both rebuilds: the records in `order`, each node's arguments appended to
// the new graph's vector (moved from a graph about to be replaced, copied
// from one that stays) and remapped; the interned texts and name counts
// carried, so that names stay and later nodes continue the counts.
template <typename Self>
Result<FxGraph> FxGraph::rebuild(Self&& self, const std::vector<FxNodeId>& order) {
  constexpr bool kMove = !std::is_const_v<std::remove_reference_t<Self>>;
  FxGraph g(self.name_);
  g.records_.reserve(order.size());
  g.args_.reserve(self.args_.size());
  std::vector<std::optional<FxNodeId>> to(self.records_.size());
  for (FxNodeId old : order) {
    Record r = self.records_.at(old);
    const auto begin = static_cast<std::uint32_t>(g.args_.size());
    for (std::uint32_t k = 0; k < r.args_count; ++k) {
      auto& a = self.args_[r.args_begin + k];
      if constexpr (kMove) {
        g.args_.push_back(std::move(a));
      } else {
        g.args_.push_back(a);
      }
      CAPSIM_TRY(remap(g.args_.back(), to));
    }
    r.args_begin = begin;
    to[old] = static_cast<FxNodeId>(g.records_.size());
    g.records_.push_back(r);
  }
  if constexpr (kMove) {
    g.texts_ = std::move(self.texts_);
    g.text_ids_ = std::move(self.text_ids_);
    g.name_counts_ = std::move(self.name_counts_);
    g.snake_case_of_ = std::move(self.snake_case_of_);
  } else {
    g.texts_ = self.texts_;
    g.text_ids_ = self.text_ids_;
    g.name_counts_ = self.name_counts_;
    g.snake_case_of_ = self.snake_case_of_;
  }
  return g;
}

Result<FxGraph> FxGraph::rebuilt(const std::vector<FxNodeId>& order) && {
  // Capture rebuilds its graph once (reordering accumulate_grad_ and dropping
  // dead nodes); copying every node's arguments made that a tenth of a
  // capture. A node placed twice must be copied, not moved twice.
  std::vector<bool> placed(records_.size(), false);
  for (FxNodeId old : order) {
    if (old >= records_.size() || placed[old]) return std::as_const(*this).rebuilt(order);
    placed[old] = true;
  }
  return rebuild(std::move(*this), order);
}

Result<FxGraph> FxGraph::rebuilt(const std::vector<FxNodeId>& order) const& {
  return rebuild(*this, order);
}

bool operator==(const FxGraph& a, const FxGraph& b) {
  if (a.name_ != b.name_ || a.size() != b.size()) return false;
  for (FxNodeId id = 0; id < a.size(); ++id) {
    const FxNodeView x = a.node(id), y = b.node(id);
    const bool same_name =
        (x.name_base == y.name_base && x.name_count == y.name_count) || x.name() == y.name();
    if (x.op != y.op || x.target != y.target || !same_name ||
        !std::equal(x.args.begin(), x.args.end(), y.args.begin(), y.args.end())) {
      return false;
    }
  }
  return true;
}

std::size_t FxGraph::heap_bytes() const {
  constexpr std::size_t kSso = 15;  // libstdc++'s in-object capacity
  std::size_t bytes = records_.capacity() * sizeof(Record) + args_.capacity() * sizeof(FxArg) +
                      (name_counts_.capacity() + snake_case_of_.capacity()) * sizeof(std::uint32_t);
  for (const FxArg& a : args_) bytes += a.heap_bytes();
  for (const std::string& t : texts_) {
    // The deque's copy and the index's key.
    bytes += 2 * (sizeof(std::string) + (t.capacity() > kSso ? t.capacity() + 1 : 0));
  }
  return bytes;
}

namespace {
// How a form writes a node reference and a float.
struct ArgStyle {
  bool node_by_position = false;  // %3 rather than %name
  bool python_floats = false;     // 1.0 rather than 1
};

std::string python_float(double f) {
  std::string s = fmt::format("{}", f);
  if (s.find_first_of(".eninf") == std::string::npos) s += ".0";
  return s;
}

void write_arg(const FxGraph& g, const FxArg& a, std::string& out, ArgStyle style = {}) {
  switch (a.kind) {
    case FxArg::Kind::kNone: out += "None"; return;
    case FxArg::Kind::kNode:
      out += '%';
      if (style.node_by_position) {
        out += std::to_string(a.node);
      } else {
        g.node(a.node).append_name(out);
      }
      return;
    case FxArg::Kind::kInt: out += std::to_string(a.i); return;
    case FxArg::Kind::kFloat:
      // Shortest round-trip form, as Python's repr: stable and exact.
      out += style.python_floats ? python_float(a.f) : fmt::format("{}", a.f);
      return;
    case FxArg::Kind::kBool: out += a.b ? "True" : "False"; return;
    case FxArg::Kind::kString:
      out += '\'';
      out += a.text();
      out += '\'';
      return;
    case FxArg::Kind::kList:
    case FxArg::Kind::kTuple: {
      const bool tuple = a.kind == FxArg::Kind::kTuple;
      out += tuple ? '(' : '[';
      for (std::size_t i = 0; i < a.items().size(); ++i) {
        if (i != 0) out += ", ";
        write_arg(g, a.items()[i], out, style);
      }
      if (tuple && a.items().size() == 1) out += ',';
      out += tuple ? ')' : ']';
      return;
    }
    case FxArg::Kind::kVerbatim: out += a.text(); return;
    case FxArg::Kind::kKeyword:
      out += a.text();
      out += '=';
      write_arg(g, a.items().at(0), out, style);
      return;
  }
}

std::string args_text(const FxGraph& g, std::span<const FxArg> args, ArgStyle style) {
  std::string out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i != 0) out += ", ";
    write_arg(g, args[i], out, style);
  }
  return out;
}
}  // namespace

std::vector<FxArg> substitute_nodes(std::span<const FxArg> args, const std::vector<FxArg>& by) {
  std::vector<FxArg> out;
  out.reserve(args.size());
  for (const FxArg& a : args) {
    if (a.kind == FxArg::Kind::kNode) {
      CAPSIM_CHECK(a.node < by.size(), "a substituted reference has a value");
      out.push_back(by[a.node]);
    } else if (a.nests()) {
      FxArg copy = a;
      copy.mutable_items() = substitute_nodes(a.items(), by);
      out.push_back(std::move(copy));
    } else {
      out.push_back(a);
    }
  }
  return out;
}

std::vector<std::string> fx_node_lines(const FxGraph& graph) {
  const ArgStyle style{true, true};
  std::vector<std::string> lines;
  lines.reserve(graph.size());
  for (FxNodeId i = 0; i < graph.size(); ++i) {
    const FxNodeView n = graph.node(i);
    if (n.op == FxOp::kPlaceholder) {
      lines.push_back(fmt::format("%{} = placeholder {}", i, n.target));
    } else {
      const std::string_view target =
          n.op == FxOp::kOutput ? std::string_view("output") : std::string_view(n.target);
      lines.push_back(fmt::format("%{} = {}({})", i, target, args_text(graph, n.args, style)));
    }
  }
  return lines;
}

std::string fx_args_text(const FxGraph& graph, std::span<const FxArg> args) {
  return args_text(graph, args, {});
}

std::string FxGraph::to_text() const {
  std::string out = fmt::format("graph {}:\n", name_);
  for (const FxNodeView n : nodes()) {
    const std::string args = fx_args_text(*this, n.args);
    if (n.op == FxOp::kOutput) {
      out += fmt::format("    return ({})\n", args);
    } else {
      out +=
          fmt::format("    %{} = {}[target={}]({})\n", n.name(), fx_op_name(n.op), n.target, args);
    }
  }
  return out;
}

}  // namespace capsim
