// The name tables of program.hpp: the serialised names of optimizer kinds
// and actions (docs/trace-format.md), which traces/, cli/ and properties/
// print and read.
#include "sim/world/program.hpp"

#include <algorithm>
#include <array>
#include <iterator>
#include <utility>
#include <variant>

namespace capsim {

std::string_view optimizer_kind_name(OptimizerKind kind) {
  switch (kind) {
#define CAPSIM_NAME_(e, name) \
  case OptimizerKind::e: return name;
    CAPSIM_OPTIMIZER_KINDS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

bool action_binds(const Action& action, const std::string& name) {
  if (const auto* t = std::get_if<NewTensor>(&action)) return t->name == name;
  if (const auto* r = std::get_if<ReassignData>(&action)) return r->name == name;
  if (const auto* c = std::get_if<Call>(&action)) {
    return std::find(c->outputs.begin(), c->outputs.end(), name) != c->outputs.end();
  }
  if (const auto* e = std::get_if<EagerCall>(&action)) {
    return std::find(e->outputs.begin(), e->outputs.end(), name) != e->outputs.end();
  }
  return false;
}

std::string_view action_name(const Action& action) {
  static constexpr std::string_view kNames[] = {"new_tensor",
                                                "mark_static",
                                                "call",
                                                "eager_call",
                                                "del",
                                                "read",
                                                "reassign_data",
                                                "mark_step_begin",
                                                "set_to_running_backward",
                                                "accumulate_grad",
                                                "create_optimizer",
                                                "optimizer_step",
                                                "zero_grad",
                                                "drop_optimizer",
                                                "reset",
                                                "run_capture_scenario",
                                                "autograd_graph",
                                                "compiled_backward",
                                                "backward",
                                                "clear_grads"};
  static_assert(std::size(kNames) == std::variant_size_v<Action>);
  return kNames[action.index()];
}

namespace {
template <std::size_t... I>
std::array<Action, sizeof...(I)> default_actions(std::index_sequence<I...>) {
  return {Action(std::in_place_index<I>)...};
}
}  // namespace

const std::array<Action, std::variant_size_v<Action>>& action_kinds() {
  static const auto kinds =
      default_actions(std::make_index_sequence<std::variant_size_v<Action>>{});
  return kinds;
}

}  // namespace capsim
