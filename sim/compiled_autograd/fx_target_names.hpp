// How a captured FX graph's call targets are named, across producers.
//
// capsim names a compiled-autograd graph's targets as its docs do
// (`ops.MulBackward0`, `validate_outputs`, `torch.add`); a recorder of real
// PyTorch writes `torch.fx.node._get_qualified_name` of each target
// (`torch._dynamo.compiled_autograd.ops.MulBackward0`), and PyTorch's printed
// code flattens the same name (`torch__dynamo_compiled_autograd_ops_MulBackward0`).
// `canonical_fx_target` maps all three to one name, and drops the targets that
// are plumbing rather than computation (tuple unpacking through getitem, and
// the unwrap of each size input), so that graphs from different producers
// compare structurally: the same calls in the same order. docs/fidelity.md
// lists the map.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/fx_graph.hpp"

namespace capsim {

// The canonical name of one target, or nullopt for a dropped one.
std::optional<std::string> canonical_fx_target(std::string_view target);

// The call_function targets of a graph, in graph order, canonical, dropped
// ones left out.
std::vector<std::string> canonical_call_targets(const FxGraph& graph);
std::vector<std::string> canonical_call_targets(const std::vector<std::string>& targets);

// A captured graph's calls and their dataflow, in canonical form: the kept
// calls (as canonical_call_targets), and per kept call the kept calls its
// arguments reach, directly or through dropped ones (a getitem of a
// validate_outputs reaches the validate_outputs), as sorted indices into the
// kept calls, each once. Argument positions and constants are not part of it:
// capsim and PyTorch pass the same values in different argument layouts.
struct CanonicalCalls {
  std::vector<std::string> targets;
  std::vector<std::vector<std::uint32_t>> uses;
  friend bool operator==(const CanonicalCalls&, const CanonicalCalls&) = default;
};
// `uses[i]`: the calls (indices into `targets`) that call i's arguments name.
// An index out of range or not earlier than i is ignored (bad input is the
// reader's to refuse; this only compares).
CanonicalCalls canonical_calls(const std::vector<std::string>& targets,
                               const std::vector<std::vector<std::uint32_t>>& uses);
// The same of an FxGraph (its placeholders are not calls).
CanonicalCalls canonical_calls(const FxGraph& graph);
// `uses` of an FxGraph as canonical_calls takes it, in raw call indices.
std::vector<std::vector<std::uint32_t>> call_uses(const FxGraph& graph);

}  // namespace capsim
