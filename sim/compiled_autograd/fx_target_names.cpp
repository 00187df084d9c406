// Canonical FX target names across producers (see fx_target_names.hpp): the module prefixes
// dropped, the plumbing calls left out, and each remaining call's uses.
#include "sim/compiled_autograd/fx_target_names.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace capsim {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Module prefixes whose functions capsim names without them, in both the
// qualified and the flattened (printed code) spelling. Order matters: the
// first match wins, and `ops.` is kept for node ops.
constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kPrefixes{{
    {"torch._dynamo.compiled_autograd.ops.validate_outputs", "validate_outputs"},
    {"torch__dynamo_compiled_autograd_ops_validate_outputs", "validate_outputs"},
    // C++ nodes keep their namespace in PyTorch's op name.
    {"torch._dynamo.compiled_autograd.ops.torch::autograd::", "ops."},
    {"torch._dynamo.compiled_autograd.ops.", "ops."},
    {"torch__dynamo_compiled_autograd_ops_", "ops."},
    {"torch._dynamo.compiled_autograd.", ""},
    {"torch__dynamo_compiled_autograd_", ""},
    {"torch._dynamo.external_utils.", ""},
    {"torch__dynamo_external_utils_", ""},
}};

}  // namespace

std::optional<std::string> canonical_fx_target(std::string_view target) {
  std::string name(target);
  for (const auto& [prefix, replacement] : kPrefixes) {
    if (starts_with(name, prefix)) {
      name = std::string(replacement) + name.substr(prefix.size());
      break;
    }
  }
  // Plumbing: list and tuple unpacking, and the unwrap of a size input.
  if (name == "operator.getitem" || name == "_operator.getitem" || name == "getitem" ||
      name == "unwrap_maybe_dynamic_int") {
    return std::nullopt;
  }
  // torch.add reached through its C binding.
  if (name == "torch._VariableFunctionsClass.add" || name == "_VariableFunctionsClass.add") {
    return std::string("torch.add");
  }
  // The final-callbacks stub is a static method; its qualified name drops
  // the class.
  if (name == "_exec_final_callbacks_stub") {
    return std::string("FakeCompiledAutogradEngine._exec_final_callbacks_stub");
  }
  // AccumulateGrad: PyTorch 2.11 calls a Python wrapper of the inductor op.
  if (name == "call_accumulate_grad")
    return std::string("torch.ops.inductor.accumulate_grad_.default");
  return name;
}

std::vector<std::string> canonical_call_targets(const std::vector<std::string>& targets) {
  std::vector<std::string> out;
  out.reserve(targets.size());
  for (const std::string& t : targets) {
    if (auto c = canonical_fx_target(t)) out.push_back(std::move(*c));
  }
  return out;
}

std::vector<std::string> canonical_call_targets(const FxGraph& graph) {
  std::vector<std::string> raw;
  for (const FxNodeView n : graph.nodes()) {
    if (n.op == FxOp::kCallFunction) raw.emplace_back(n.target);
  }
  return canonical_call_targets(raw);
}

CanonicalCalls canonical_calls(const std::vector<std::string>& targets,
                               const std::vector<std::vector<std::uint32_t>>& uses) {
  CanonicalCalls out;
  // Per raw call: its canonical index if kept; else the kept calls it reaches.
  std::vector<std::optional<std::uint32_t>> kept(targets.size());
  std::vector<std::vector<std::uint32_t>> reaches(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    std::vector<std::uint32_t> deps;
    if (i < uses.size()) {
      for (std::uint32_t u : uses[i]) {
        if (u >= i) continue;
        if (kept[u]) {
          deps.push_back(*kept[u]);
        } else {
          deps.insert(deps.end(), reaches[u].begin(), reaches[u].end());
        }
      }
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    if (auto name = canonical_fx_target(targets[i])) {
      kept[i] = static_cast<std::uint32_t>(out.targets.size());
      out.targets.push_back(std::move(*name));
      out.uses.push_back(std::move(deps));
    } else {
      reaches[i] = std::move(deps);
    }
  }
  return out;
}

std::vector<std::vector<std::uint32_t>> call_uses(const FxGraph& graph) {
  std::vector<std::optional<std::uint32_t>> call_index(graph.nodes().size());
  std::vector<std::vector<std::uint32_t>> out;
  for (FxNodeId id = 0; id < graph.nodes().size(); ++id) {
    if (graph.nodes()[id].op != FxOp::kCallFunction) continue;
    std::vector<std::uint32_t> refs;
    for (FxNodeId u : graph.uses(id)) {
      if (!call_index[u]) continue;
      if (std::find(refs.begin(), refs.end(), *call_index[u]) == refs.end()) {
        refs.push_back(*call_index[u]);
      }
    }
    call_index[id] = static_cast<std::uint32_t>(out.size());
    out.push_back(std::move(refs));
  }
  return out;
}

CanonicalCalls canonical_calls(const FxGraph& graph) {
  std::vector<std::string> targets;
  for (const FxNodeView n : graph.nodes()) {
    if (n.op == FxOp::kCallFunction) targets.emplace_back(n.target);
  }
  return canonical_calls(targets, call_uses(graph));
}

}  // namespace capsim
