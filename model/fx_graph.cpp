// FxGraph (see fx_graph.hpp): building a graph with torch.fx's naming, uses and reordering
// (rebuilt), and the stable text form that properties compare.
#include "model/fx_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
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

std::string FxGraph::unique_name(const std::string& base) {
  auto it = name_counts_.find(base);
  if (it == name_counts_.end()) it = name_counts_.emplace(base, 0).first;
  const std::uint32_t n = it->second++;
  if (n == 0) return base;
  std::string name = base;
  name += '_';
  name += std::to_string(n);
  return name;
}

const std::string& FxGraph::snake_case_of(std::string_view target) {
  auto it = snake_case_of_.find(target);
  if (it == snake_case_of_.end()) {
    it = snake_case_of_.emplace(std::string(target), fx_snake_case(target)).first;
  }
  return it->second;
}

FxNodeId FxGraph::placeholder(const std::string& name) {
  CAPSIM_CHECK(!has_output(), "placeholder after the output");
  CAPSIM_CHECK(nodes_.size() < kMaxFxNodes, "fx node limit reached");
  nodes_.push_back({FxOp::kPlaceholder, unique_name(name), name, {}});
  return static_cast<FxNodeId>(nodes_.size() - 1);
}

Status FxGraph::check_args(const std::vector<FxArg>& args) const {
  for (const FxArg& a : args) {
    if (a.kind == FxArg::Kind::kNode && a.node >= nodes_.size()) {
      return make_error(fmt::format(
          "fx graph '{}': argument refers to node {}, which does not exist", name_, a.node));
    }
    if (a.nests()) CAPSIM_TRY(check_args(a.items()));
  }
  return {};
}

Result<FxNodeId> FxGraph::call_function(std::string_view target, std::vector<FxArg> args) {
  if (has_output()) {
    return make_error(
        fmt::format("fx graph '{}': call_function {} after the output", name_, target));
  }
  if (nodes_.size() >= kMaxFxNodes) {
    return make_error(fmt::format("fx graph '{}': more than {} nodes", name_, kMaxFxNodes));
  }
  CAPSIM_TRY(check_args(args));
  std::string name = unique_name(snake_case_of(target));
  nodes_.push_back({FxOp::kCallFunction, std::move(name), std::string(target), std::move(args)});
  return static_cast<FxNodeId>(nodes_.size() - 1);
}

Status FxGraph::replace_arg(FxNodeId id, std::size_t index, FxArg value) {
  if (id >= nodes_.size() || index >= nodes_[id].args.size()) {
    return make_error(fmt::format("fx graph '{}': node {} has no argument {}", name_, id, index));
  }
  CAPSIM_TRY(check_args({value}));
  nodes_[id].args[index] = std::move(value);
  return {};
}

Status FxGraph::output(std::vector<FxArg> args) {
  if (has_output()) return make_error(fmt::format("fx graph '{}': a second output", name_));
  CAPSIM_TRY(check_args(args));
  nodes_.push_back({FxOp::kOutput, "output", "output", std::move(args)});
  return {};
}

namespace {
Status remap(std::vector<FxArg>& args, const std::vector<std::optional<FxNodeId>>& to) {
  for (FxArg& a : args) {
    if (a.kind == FxArg::Kind::kNode) {
      if (!to[a.node])
        return make_error(fmt::format("fx graph: a use of node {} before it", a.node));
      a.node = *to[a.node];
    }
    if (a.nests()) CAPSIM_TRY(remap(a.mutable_items(), to));
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
std::optional<FxNodeId> first_node_ref(const std::vector<FxArg>& args) {
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
  return first_node_ref(nodes_.at(id).args);
}

Result<FxGraph> FxGraph::rebuilt(const std::vector<FxNodeId>& order) && {
  // Capture rebuilds its graph once (reordering accumulate_grad_ and dropping
  // dead nodes); copying every node's name and arguments made that a tenth of
  // a capture.
  std::vector<bool> placed(nodes_.size(), false);
  for (FxNodeId old : order) {
    if (old >= nodes_.size() || placed[old]) return std::as_const(*this).rebuilt(order);
    placed[old] = true;
  }
  FxGraph g(name_);
  std::vector<std::optional<FxNodeId>> to(nodes_.size());
  for (FxNodeId old : order) {
    FxNode n = std::move(nodes_[old]);
    CAPSIM_TRY(remap(n.args, to));
    to[old] = static_cast<FxNodeId>(g.nodes_.size());
    g.nodes_.push_back(std::move(n));
  }
  g.name_counts_ = std::move(name_counts_);
  return g;
}

Result<FxGraph> FxGraph::rebuilt(const std::vector<FxNodeId>& order) const& {
  FxGraph g(name_);
  std::vector<std::optional<FxNodeId>> to(nodes_.size());
  for (FxNodeId old : order) {
    FxNode n = nodes_.at(old);
    CAPSIM_TRY(remap(n.args, to));
    to[old] = static_cast<FxNodeId>(g.nodes_.size());
    g.nodes_.push_back(std::move(n));
  }
  g.name_counts_ = name_counts_;
  return g;
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
      out += style.node_by_position ? std::to_string(a.node) : g.nodes()[a.node].name;
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

std::string args_text(const FxGraph& g, const std::vector<FxArg>& args, ArgStyle style) {
  std::string out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i != 0) out += ", ";
    write_arg(g, args[i], out, style);
  }
  return out;
}
}  // namespace

std::vector<FxArg> substitute_nodes(const std::vector<FxArg>& args, const std::vector<FxArg>& by) {
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
  lines.reserve(graph.nodes().size());
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    const FxNode& n = graph.nodes()[i];
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

std::string fx_args_text(const FxGraph& graph, const std::vector<FxArg>& args) {
  return args_text(graph, args, {});
}

std::string FxGraph::to_text() const {
  std::string out = fmt::format("graph {}:\n", name_);
  for (const FxNode& n : nodes_) {
    const std::string args = fx_args_text(*this, n.args);
    if (n.op == FxOp::kOutput) {
      out += fmt::format("    return ({})\n", args);
    } else {
      out += fmt::format("    %{} = {}[target={}]({})\n", n.name, fx_op_name(n.op), n.target, args);
    }
  }
  return out;
}

}  // namespace capsim
