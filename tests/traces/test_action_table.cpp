// The table of action kinds (sim/program/actions.def) and what is made from
// it: every kind's defaults round-trip through the JSON writer and reader,
// the text writer writes the Json writer's bytes, a field-to-field rule is
// refused at its field, and the schema the recorder checks against names
// every kind and every field a writer can write.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "traces/format/program_json.hpp"

namespace capsim {
namespace {

Result<Action> read_back(const Json& written) {
  const Json line = Json::parse(written.dump());
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(line, ""));
  return action_from_json(r);
}

// The external kinds (a recorded graph) have codecs of their own.
bool own_codec(const Json& schema_kind) {
  return schema_kind["fields"].is_null();
}

}  // namespace

TEST_CASE("action table: every kind at its defaults round-trips, in both writers") {
  const Json schema = action_schema_json();
  for (const Action& kind : action_kinds()) {
    CAPTURE(action_name(kind));
    if (own_codec(schema["kinds"][std::string(action_name(kind))])) continue;
    const Json written = action_to_json(kind);
    const Result<Action> back = read_back(written);
    REQUIRE(back.ok());
    CHECK(back->index() == kind.index());
    CHECK(action_to_json(*back).dump() == written.dump());
    std::string text;
    JsonObjectText object(text);
    REQUIRE(append_action_members(object, kind));
    object.close();
    CHECK(text == written.dump());
  }
}

TEST_CASE("action table: the schema lists every kind, in the table's order") {
  const Json schema = action_schema_json();
  std::vector<std::string> listed;
  for (const auto& [name, fields] : schema["kinds"].items()) listed.push_back(name);
  REQUIRE(listed.size() == action_kinds().size());
  for (std::size_t i = 0; i < listed.size(); ++i) {
    CHECK(listed[i] == action_name(action_kinds()[i]));
  }
  const Json& dtype = schema["kinds"]["new_tensor"]["fields"][2];
  CHECK(dtype["key"] == "dtype");
  CHECK(dtype["presence"] == "optional");
  CHECK(dtype["type"] == "enum");
  CHECK(dtype["values"][0] == "float32");
  CHECK(schema["kinds"]["call"]["fields"][1]["max_items"] == kMaxBodyInputs);
  CHECK(schema["kinds"]["create_optimizer"]["fields"][3]["presence"].get<std::string>().starts_with(
      "when "));
}

TEST_CASE("action table: every key a writer writes is in the schema, every required one written") {
  const Json schema = action_schema_json();
  NewTensor full{.name = "x",
                 .sizes = {2, 2},
                 .dtype = DType::kInt64,
                 .fill = 1.0f,
                 .offset = 1,
                 .strides = Dims{1, 2},
                 .parameter = true,
                 .requires_grad = true};
  Call call{.function = "f", .args = {"x"}, .outputs = {"y"}, .int_key = {3}};
  call.new_invocation = true;
  call.consume = {"x"};
  CreateOptimizer sgd{.name = "o", .kind = OptimizerKind::kSgd, .params = {"p"}};
  for (const Action& a : {Action(full), Action(call), Action(sgd), Action(CreateOptimizer{})}) {
    CAPTURE(action_name(a));
    const Json written = action_to_json(a);
    const Json& fields = schema["kinds"][std::string(action_name(a))]["fields"];
    std::set<std::string> keys;
    for (const Json& f : fields) {
      keys.insert(f["key"].get<std::string>());
      if (f["presence"] == "required") CHECK(written.contains(f["key"].get<std::string>()));
    }
    for (const auto& [key, value] : written.items()) {
      if (key != "action") CHECK(keys.count(key) == 1);
    }
    CHECK(read_back(written).ok());
  }
}

TEST_CASE("action table: a rule between fields is refused at its field") {
  NewTensor t{.name = "x", .sizes = {2, 2}, .strides = Dims{1}};
  const Result<Action> strides = read_back(action_to_json(t));
  REQUIRE_FALSE(strides.ok());
  CHECK(strides.error().message == "field 'strides': 1 entries for 2 sizes");
  NewTensor small{.name = "x", .sizes = {1}, .dtype = DType::kInt8, .fill = 300.0f};
  const Result<Action> fill = read_back(action_to_json(small));
  REQUIRE_FALSE(fill.ok());
  CHECK(fill.error().field == "fill");
}

}  // namespace capsim
