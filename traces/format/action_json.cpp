// The JSON form of actions (program_json.hpp), made from sim/program/actions.def:
// one writer and one strict reader per field type, and per kind the fields in
// the table's order. A kind's writer leaves out an optional field equal to
// its default, and its reader takes an absent one as that default (and
// accepts it written out); a required field is always written and read.
#include <fmt/format.h>

#include <type_traits>
#include <utility>
#include <variant>

#include "model/check.hpp"
#include "traces/format/body_op_json.hpp"
#include "traces/format/imported_graph_json.hpp"
#include "traces/format/program_json.hpp"

namespace capsim {
namespace {

// --- Field types: writing ----------------------------------------------------
//
// `Members` is a Json object or JsonMembersText: both take `j[key] = value`.

template <typename Members, typename Field, typename T>
void put(Field, Members& j, const char* key, const T& v) {
  j[key] = v;  // names, flags, integers and their lists: as they are
}
template <typename Members, typename Field, typename T>
void put(Field, Members& j, const char* key, const std::optional<T>& v) {
  CAPSIM_CHECK(v.has_value(), "an optional field is written only when it holds a value");
  put(Field{}, j, key, *v);
}
template <typename Members>
void put(field::OptionalFloat32, Members& j, const char* key, const std::optional<float>& v) {
  CAPSIM_CHECK(v.has_value(), "an optional field is written only when it holds a value");
  j[key] = float_json(*v);
}
template <typename Members>
void put(field::DTypeName, Members& j, const char* key, DType v) {
  j[key] = std::string(dtype_name(v));
}
template <typename Members>
void put(field::OptimizerKindName, Members& j, const char* key, OptimizerKind v) {
  j[key] = std::string(optimizer_kind_name(v));
}
template <typename Members>
void put(field::CaptureModeName, Members& j, const char* key, CaptureMode v) {
  j[key] = std::string(capture_mode_name(v));
}
template <typename Members>
void put(field::Sgd, Members& j, const char* key, const SgdHyper& v) {
  j[key] = sgd_json(v);
}
template <typename Members>
void put(field::Adam, Members& j, const char* key, const AdamHyper& v) {
  j[key] = adam_json(v);
}

// --- Field types: reading ----------------------------------------------------

Status get(field::Name, ObjectReader& r, const char* key, std::string& out) {
  return assign(out, read_name(r, key));
}
Status get(field::OptionalName, ObjectReader& r, const char* key,
           std::optional<std::string>& out) {
  return assign(out, read_name(r, key));
}
template <std::size_t limit>
Status get(field::Names<limit>, ObjectReader& r, const char* key, std::vector<std::string>& out) {
  return assign(out, read_names(r, key, limit));
}
template <std::size_t limit>
Status get(field::Integers<limit>, ObjectReader& r, const char* key,
           std::vector<std::int64_t>& out) {
  CAPSIM_TRY(check_length(r, key, limit));
  return assign(out, r.integer_list(key));
}
Status get(field::Integer, ObjectReader& r, const char* key, std::int64_t& out) {
  return assign(out, r.integer(key));
}
Status get(field::Flag, ObjectReader& r, const char* key, bool& out) {
  return assign(out, r.boolean(key));
}
Status get(field::OptionalFlag, ObjectReader& r, const char* key, std::optional<bool>& out) {
  return assign(out, r.boolean(key));
}
Status get(field::OptionalFloat32, ObjectReader& r, const char* key, std::optional<float>& out) {
  return assign(out, r.float32(key));
}
Status get(field::Sizes, ObjectReader& r, const char* key, Dims& out) {
  return assign(out, read_sizes(r, key));
}
Status get(field::OptionalSizes, ObjectReader& r, const char* key, std::optional<Dims>& out) {
  return assign(out, read_strides(r, key));
}
Status get(field::DTypeName, ObjectReader& r, const char* key, DType& out) {
  CAPSIM_TRY_ASSIGN(const std::string name, r.string(key));
  using Enum = DType;
  return assign(out, from_name<Enum>(name, r.path_of(key), "dtype", {CAPSIM_DTYPES(CAPSIM_PAIR_)}));
}
Status get(field::OptimizerKindName, ObjectReader& r, const char* key, OptimizerKind& out) {
  CAPSIM_TRY_ASSIGN(const std::string name, r.string(key));
  return assign(out, optimizer_kind_from_name(name, r.path_of(key)));
}
Status get(field::CaptureModeName, ObjectReader& r, const char* key, CaptureMode& out) {
  CAPSIM_TRY_ASSIGN(const std::string name, r.string(key));
  using Enum = CaptureMode;
  return assign(out, from_name<Enum>(name, r.path_of(key), "capture mode",
                                     {CAPSIM_CAPTURE_MODES(CAPSIM_PAIR_)}));
}
// The hyper-parameters are an object under their own key (body_op_json.hpp).
Status get(field::Sgd, ObjectReader& r, const char*, SgdHyper& out) {
  return assign(out, read_sgd(r));
}
Status get(field::Adam, ObjectReader& r, const char*, AdamHyper& out) {
  return assign(out, read_adam(r));
}

// An optional field the line leaves out keeps its default.
template <typename Field, typename T>
Status get_field(ObjectReader& r, const char* key, T& out, field::Presence presence) {
  if (presence == field::Presence::kOptional && !r.has(key)) return {};
  return get(Field{}, r, key, out);
}

// --- The kinds ---------------------------------------------------------------

#define CAPSIM_ACTION(Type, name)                  \
  template <typename Members>                      \
  void write_fields(Members& j, const Type& a) {   \
    [[maybe_unused]] static const Type defaults{}; \
    (void)j;                                       \
    (void)a;
#define CAPSIM_FIELD(Type, FieldType, member, key, default_value, presence)        \
  if (field::written(CAPSIM_PRESENCE_##presence, a.member, defaults.member)) { \
    put(FieldType{}, j, key, a.member);                                         \
  }
#define CAPSIM_FIELD_WHEN(Type, FieldType, member, key, default_value, condition) \
  if (condition) put(FieldType{}, j, key, a.member);
#define CAPSIM_ACTION_END(Type) }
#include "sim/program/actions.def"
#undef CAPSIM_ACTION
#undef CAPSIM_FIELD
#undef CAPSIM_FIELD_WHEN
#undef CAPSIM_ACTION_END

#define CAPSIM_ACTION(Type, name)               \
  Status read_fields(ObjectReader& r, Type& a) { \
    (void)r;                                     \
    (void)a;
#define CAPSIM_FIELD(Type, FieldType, member, key, default_value, presence) \
  CAPSIM_TRY(get_field<FieldType>(r, key, a.member, CAPSIM_PRESENCE_##presence));
#define CAPSIM_FIELD_WHEN(Type, FieldType, member, key, default_value, condition) \
  if (condition) {                                                                \
    CAPSIM_TRY(get_field<FieldType>(r, key, a.member, field::Presence::kRequired)); \
  }
#define CAPSIM_ACTION_END(Type) \
  return {};                    \
  }
#include "sim/program/actions.def"
#undef CAPSIM_ACTION
#undef CAPSIM_FIELD
#undef CAPSIM_FIELD_WHEN
#undef CAPSIM_ACTION_END

// The kinds with codecs of their own (imported_graph_json.hpp).
void write_fields(Json& j, const DefineAutogradGraph& a) {
  write_recorded_graph(j, a);
}
Status read_fields(ObjectReader& r, DefineAutogradGraph& a) {
  return read_imported_graph(r, a);
}
void write_fields(Json& j, const CompiledBackward& a) {
  write_compiled_backward(j, a);
}
Status read_fields(ObjectReader& r, CompiledBackward& a) {
  return read_compiled_backward(r, a);
}

template <typename Kind>
constexpr bool kHasOwnCodec =
    std::is_same_v<Kind, DefineAutogradGraph> || std::is_same_v<Kind, CompiledBackward>;

}  // namespace

Json action_to_json(const Action& a) {
  Json j = Json::object();
  j["action"] = std::string(action_name(a));
  std::visit([&](const auto& x) { write_fields(j, x); }, a);
  return j;
}

bool append_action_members(JsonObjectText& object, const Action& a) {
  return std::visit(
      [&](const auto& x) {
        // The recorded graphs and compiled backwards have writers of their
        // own, over Json only; they are a few lines of a trace.
        if constexpr (kHasOwnCodec<std::decay_t<decltype(x)>>) {
          return false;
        } else {
          JsonMembersText j(object);
          j["action"] = action_name(a);
          write_fields(j, x);
          return true;
        }
      },
      a);
}

Result<Action> action_from_json(ObjectReader& r) {
  CAPSIM_TRY_ASSIGN(const std::string name, r.string("action"));
  static const std::vector<std::pair<std::string_view, std::size_t>> names = [] {
    std::vector<std::pair<std::string_view, std::size_t>> out;
    for (const Action& kind : action_kinds()) out.emplace_back(action_name(kind), kind.index());
    return out;
  }();
  CAPSIM_TRY_ASSIGN(const std::size_t index,
                    from_name<std::size_t>(name, r.path_of("action"), "action", names));
  Action action = action_kinds()[index];
  CAPSIM_TRY(std::visit([&](auto& x) { return read_fields(r, x); }, action));
  if (std::optional<FieldProblem> problem = action_fields_problem(action)) {
    return field_error(r.path_of(problem->key), problem->message);
  }
  CAPSIM_TRY(r.finish());
  return action;
}

}  // namespace capsim
