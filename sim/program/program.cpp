// The name tables of program.hpp: the serialised names of optimizer kinds
// and actions (docs/trace-format.md), which traces/, cli/ and properties/
// print and read.
#include "sim/program/program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>
#include <variant>

#include "model/dtype_values.hpp"

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

std::optional<FieldProblem> action_fields_problem(const Action& action) {
  const auto* t = std::get_if<NewTensor>(&action);
  if (t == nullptr) return std::nullopt;
  if (t->strides && t->strides->size() != t->sizes.size()) {
    return FieldProblem{
        "strides", fmt::format("{} entries for {} sizes", t->strides->size(), t->sizes.size())};
  }
  // A fill the dtype cannot hold: PyTorch's RuntimeError, in its words.
  if (t->fill) {
    if (Status fits = check_fill_fits(t->dtype, *t->fill); !fits) {
      return FieldProblem{"fill", fits.error().message};
    }
  }
  return std::nullopt;
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
  return std::visit(
      [](const auto& a) { return action_kind_name<std::decay_t<decltype(a)>>(); }, action);
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
