// docs/trace-format.md is the normative spec of the format: it must name
// every line type, action kind, body op, event kind and event field the code
// reads and writes, so that a producer can be written from it alone. This
// test fails when the schema grows and the spec does not.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <variant>

#include "sim/core/function_def.hpp"
#include "sim/program/program.hpp"
#include "traces/format/event_schema.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim {
namespace {

std::string spec_text() {
  std::ifstream in(std::filesystem::path(CAPSIM_SOURCE_DIR) / "docs/trace-format.md");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool documents(const std::string& spec, std::string_view name) {
  return spec.find("`" + std::string(name) + "`") != std::string::npos;
}

TEST_CASE("trace format docs: every kind and field is documented") {
  const std::string spec = spec_text();
  REQUIRE_FALSE(spec.empty());
#define CAPSIM_CHECK_LINE_(e, name) CHECK_MESSAGE(documents(spec, name), "line type ", name);
  CAPSIM_TRACE_LINE_TYPES(CAPSIM_CHECK_LINE_)
#undef CAPSIM_CHECK_LINE_
#define CAPSIM_CHECK_EVENT_(e, name) CHECK_MESSAGE(documents(spec, name), "event ", name);
  CAPSIM_EVENT_KINDS(CAPSIM_CHECK_EVENT_)
#undef CAPSIM_CHECK_EVENT_
#define CAPSIM_CHECK_OP_(e, name, arity, in_place) \
  CHECK_MESSAGE(documents(spec, name), "op ", name);
  CAPSIM_BODY_OPS(CAPSIM_CHECK_OP_)
#undef CAPSIM_CHECK_OP_
  for (const FieldSpec& f : event_field_specs()) {
    CHECK_MESSAGE(documents(spec, f.key), "event field ", f.key);
  }
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    for (const Action& a : {Action(std::in_place_index<I>)...}) {
      CHECK_MESSAGE(documents(spec, action_name(a)), "action ", action_name(a));
    }
  }
  (std::make_index_sequence<std::variant_size_v<Action>>{});
}

}  // namespace
}  // namespace capsim
