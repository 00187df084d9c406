// Program: the user actions a World runs (docs/architecture.md, "sim/").
//
// A program is what a training or inference loop does, reduced to the steps
// that matter for capture semantics: make tensors and parameters, call compiled
// functions (each call of a torch.compile-wrapped callable is a new
// invocation), run eager code, accumulate grads, step and zero optimizers,
// reassign `.data`, mark steps, drop references, read values, run backwards
// (eager or through compiled autograd) and run a compiled-autograd scenario.
// Names refer to Python objects; an object keeps its identity (and its static
// mark and its .grad) when its `.data` is reassigned, as in PyTorch. The kinds
// and their fields are sim/program/actions.def's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/compiled_autograd/imported_graph.hpp"
#include "sim/core/function_def.hpp"
#include "sim/program/action_fields.hpp"

namespace capsim {

// The structs of actions.def's kinds: each field a member of its field
// type's C++ type, with its default. A kind's comment is in the table.
#define CAPSIM_ACTION(Type, name) struct Type {
#define CAPSIM_FIELD(Type, FieldType, member, key, default_value, presence) \
  FieldType::type member = default_value;
#define CAPSIM_FIELD_WHEN(Type, FieldType, member, key, default_value, condition) \
  FieldType::type member = default_value;
#define CAPSIM_ACTION_END(Type) \
  }                             \
  ;
#include "sim/program/actions.def"
#undef CAPSIM_ACTION
#undef CAPSIM_FIELD
#undef CAPSIM_FIELD_WHEN
#undef CAPSIM_ACTION_END

namespace detail {
template <typename First, typename... Kinds>
struct VariantOfRest {
  using type = std::variant<Kinds...>;
};
}  // namespace detail

// Every kind of the table, in its order.
using Action = detail::VariantOfRest<void
#define CAPSIM_ACTION(Type, name) , Type
#define CAPSIM_EXTERNAL_ACTION(Type, name) , Type
#include "sim/program/actions.def"
#undef CAPSIM_ACTION
#undef CAPSIM_EXTERNAL_ACTION
                                     >::type;

// The name a kind has in traces ("new_tensor").
template <typename Kind>
constexpr std::string_view action_kind_name();
#define CAPSIM_ACTION(Type, name)                       \
  template <>                                           \
  constexpr std::string_view action_kind_name<Type>() { \
    return name;                                        \
  }
#define CAPSIM_EXTERNAL_ACTION(Type, name) CAPSIM_ACTION(Type, name)
#include "sim/program/actions.def"
#undef CAPSIM_ACTION
#undef CAPSIM_EXTERNAL_ACTION

// The kind's name (action_kind_name).
std::string_view action_name(const Action& action);
// One action of each kind with its fields at their defaults, in the table's
// order: what a reader that picks the kind by its name starts from.
const std::array<Action, std::variant_size_v<Action>>& action_kinds();
// A rule between an action's fields that no field type states alone: the
// key of the field it refuses and why. Every reader checks it once the fields
// are read (NewTensor: strides one per size, and a fill its dtype can hold,
// in PyTorch's words), and refuses the line or, the fast reader, declines it.
struct FieldProblem {
  std::string_view key;
  std::string message;
};
std::optional<FieldProblem> action_fields_problem(const Action& action);

// Whether `action` gives the name `name` a new tensor: a new tensor, a
// reassigned .data, or a call (compiled or eager) that binds it as an output.
bool action_binds(const Action& action, const std::string& name);

struct Program {
  std::vector<FunctionDef> functions;
  std::vector<Action> actions;
};

// The limit on actions in one program held in memory (a Program, a
// `capsim simulate` file): each costs a few hundred bytes there.
inline constexpr std::size_t kMaxActions = std::size_t{1} << 22;
// The limit on action indices in one run. A trace replays one action at a
// time and keeps none, so its limit is its line limit (kMaxTraceLines in
// traces/format/trace_format.hpp; every action is a line): a 10^7-event trace has
// about 10^7 actions.
inline constexpr std::size_t kMaxRunActions = std::size_t{1} << 26;
static_assert(kMaxActions <= kMaxRunActions);

}  // namespace capsim
