// The schema of action lines (program_json.hpp's action_schema_json), made
// from sim/program/actions.def: what the recorder checks each action line it
// writes against (recorder/capsim_recorder/action_schema.json).
#include <string>
#include <string_view>

#include "traces/format/program_json.hpp"

namespace capsim {
namespace {

// The names an enum field may take; empty for the other types.
template <typename Field>
Json values_of() {
  Json names = Json::array();
  if constexpr (std::is_same_v<Field, field::DTypeName>) {
#define CAPSIM_NAME_(e, n, ...) names.push_back(n);
    CAPSIM_DTYPES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  } else if constexpr (std::is_same_v<Field, field::OptimizerKindName>) {
#define CAPSIM_NAME_(e, n) names.push_back(n);
    CAPSIM_OPTIMIZER_KINDS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  } else if constexpr (std::is_same_v<Field, field::CaptureModeName>) {
#define CAPSIM_NAME_(e, n) names.push_back(n);
    CAPSIM_CAPTURE_MODES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return names;
}

template <typename Field>
Json field_json(std::string_view key, std::string_view presence) {
  Json f = Json::object();
  f["key"] = std::string(key);
  f["presence"] = std::string(presence);
  Json values = values_of<Field>();
  if (values.empty()) {
    f["type"] = std::string(Field::schema);
  } else {
    f["type"] = "enum";
    f["values"] = std::move(values);
  }
  if constexpr (requires { Field::max; }) f["max_items"] = Field::max;
  return f;
}

}  // namespace

Json action_schema_json() {
  Json kinds = Json::object();
  Json* fields = nullptr;
#define CAPSIM_ACTION(Type, name)                    \
  kinds[name] = Json{{"fields", Json::array()}};     \
  fields = &kinds[name]["fields"];
#define CAPSIM_FIELD(Type, FieldType, member, key, default_value, presence) \
  fields->push_back(field_json<FieldType>(key, #presence));
#define CAPSIM_FIELD_WHEN(Type, FieldType, member, key, default_value, condition) \
  fields->push_back(field_json<FieldType>(key, "when " #condition));
// A kind with a codec of its own: capsim checks its fields when it reads it.
#define CAPSIM_EXTERNAL_ACTION(Type, name) kinds[name] = Json{{"fields", nullptr}};
#include "sim/program/actions.def"
#undef CAPSIM_ACTION
#undef CAPSIM_FIELD
#undef CAPSIM_FIELD_WHEN
#undef CAPSIM_EXTERNAL_ACTION
  Json out = Json::object();
  out["schema"] = "capsim action lines (sim/program/actions.def)";
  out["kinds"] = std::move(kinds);
  return out;
}

}  // namespace capsim
