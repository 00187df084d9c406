// The trace reader's fast path for event and action lines
// (traces/format/line_fast.hpp) against its general path: every line of every
// corpus trace, and lines made to be declined, read the same way (the same
// items, or the same error), and the fast path really reads most lines.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "tests/traces/trace_test_support.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/format/program_json.hpp"
#include "traces/format/trace_reader.hpp"
#include "traces/simulation/scenario_trace.hpp"

namespace capsim {
namespace {

struct Reading {
  std::vector<TraceItem> items;
  std::string error;  // the first error, "" for none
  std::size_t fast = 0;
};

Reading read_all(Result<std::unique_ptr<TraceReader>> opened, bool fast) {
  Reading out;
  if (!opened) {
    out.error = opened.error().message;
    return out;
  }
  TraceReader& r = **opened;
  r.set_fast_path(fast);
  for (;;) {
    Result<std::optional<TraceItem>> item = r.next();
    if (!item) {
      out.error = item.error().message;
      break;
    }
    if (!*item) break;
    out.items.push_back(std::move(**item));
  }
  out.fast = r.fast_lines();
  return out;
}

void check_same(const Reading& fast, const Reading& general) {
  CHECK(fast.error == general.error);
  REQUIRE(fast.items.size() == general.items.size());
  for (std::size_t i = 0; i < fast.items.size(); ++i) {
    const TraceItem &a = fast.items[i], &b = general.items[i];
    INFO("line ", b.line, ": ", b.text);
    CHECK(a.line == b.line);
    CHECK(a.type == b.type);
    CHECK(a.text == b.text);
    CHECK(a.event == b.event);
    CHECK(a.action_index == b.action_index);
    CHECK(action_to_json(a.action).dump() == action_to_json(b.action).dump());
  }
}

TEST_CASE("fast lines: every corpus trace reads as through the general path") {
  std::size_t files = 0, lines = 0, fast = 0;
  const std::string corpus = std::string(CAPSIM_SOURCE_DIR) + "/data/corpus";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus)) {
    if (entry.path().extension() != ".jsonl") continue;
    const std::string path = entry.path().string();
    INFO(path);
    const Reading a = read_all(TraceReader::open(path), true);
    const Reading b = read_all(TraceReader::open(path), false);
    check_same(a, b);
    CHECK(b.fast == 0);
    ++files;
    // The recorder's traces of real PyTorch (torch/) are mostly autograd
    // graphs, lists of lists the fast path declines by design; the ratio is
    // of the model's own traces, whose share does not move with the number
    // of releases recorded.
    if (path.find("/corpus/torch/") != std::string::npos) continue;
    for (const TraceItem& item : b.items) lines += item.type != TraceLineType::kFunction;
    fast += a.fast;
  }
  CHECK(files > 100);
  // Most events and actions take the fast path (the rest: digests, lists of
  // lists, x_, the rare action kinds).
  CHECK(fast * 10 > lines * 8);
}

TEST_CASE("fast lines: event lines it must decline read as through the general path") {
  auto lines = trace_scenario(*find_program_scenario("rerecord_if_static_input_address_changed"));
  REQUIRE(lines.ok());
  std::size_t at = 0;  // the first event line
  while (lines->at(at).find("\"type\":\"event\"") == std::string::npos) ++at;
  const std::string event = lines->at(at);
  const std::string head = event.substr(0, event.size() - 1);  // without its closing brace
  for (const std::string& variant : {
           head + ",\"x_note\":[[[1]]]}",            // an extension: skipped whatever it holds
           head + ",\"x_note\":1,\"x_note\":2}",     // a repeated key
           head + ",\"bogus\":1}",                   // an unknown field
           head + ",\"fid\":1.0}",                   // an integer written as a float
           head + ",\"fid\":18446744073709551615}",  // past int64
           head + ",\"fid\":-1}",                    // below the field's range
           std::string("{\"type\":\"event\",") + event.substr(1),  // type given twice
           event.substr(0, event.find("\"seq\":") + 6) + "99" +
               event.substr(event.find(",\"type\"")),  // seq out of order
           event + " ",                                // trailing white space
           event + " x",                               // trailing garbage
       }) {
    INFO(variant);
    std::vector<std::string> edited = *lines;
    edited.at(at) = variant;
    const std::string text = test::join_lines(edited);
    check_same(read_all(test::reader_of(text), true), read_all(test::reader_of(text), false));
  }
}

// Each line in `variants` in place of the first line of `lines` that holds
// `marker`: both paths read the edited trace the same way.
void check_variants(const std::vector<std::string>& lines, std::string_view marker,
                    const std::function<std::vector<std::string>(const std::string&)>& variants) {
  std::size_t at = 0;
  while (at < lines.size() && lines[at].find(marker) == std::string::npos) ++at;
  REQUIRE(at < lines.size());
  for (const std::string& variant : variants(lines[at])) {
    INFO(variant);
    std::vector<std::string> edited = lines;
    edited.at(at) = variant;
    const std::string text = test::join_lines(edited);
    check_same(read_all(test::reader_of(text), true), read_all(test::reader_of(text), false));
  }
}

// `line` with `field`'s value (up to the next ',' or '}') replaced by `value`.
std::string with_value(const std::string& line, const std::string& field,
                       const std::string& value) {
  const std::size_t key = line.find("\"" + field + "\":");
  REQUIRE(key != std::string::npos);
  const std::size_t begin = key + field.size() + 3;
  std::size_t end = begin, depth = 0;
  while (end < line.size() && (depth > 0 || (line[end] != ',' && line[end] != '}'))) {
    if (line[end] == '[') ++depth;
    if (line[end] == ']') --depth;
    ++end;
  }
  return line.substr(0, begin) + value + line.substr(end);
}

TEST_CASE("fast lines: action lines it must decline read as through the general path") {
  auto lines = trace_scenario(*find_program_scenario("rerecord_if_static_input_address_changed"));
  REQUIRE(lines.ok());
  const std::string long_name(kMaxJsonNameBytes + 1, 'n');
  check_variants(*lines, "\"action\":\"new_tensor\"", [&](const std::string& line) {
    const std::string head = line.substr(0, line.size() - 1);
    return std::vector<std::string>{
        head + ",\"fill\":1}",              // an integer fill: the general path reads it
        head + ",\"fill\":-0}",             // negative zero as an integer
        head + ",\"fill\":-0.0}",           // negative zero
        head + ",\"fill\":3.4028235e+38}",  // FLT_MAX's shortest text, above it as a double
        head + ",\"fill\":1e39}",           // past float32
        // float32 midpoints as doubles: the text decides (json_fields.hpp)
        head + ",\"fill\":1.000000059604644775390625000000000000000000000000000001}",
        head + ",\"fill\":1.0000000596046447753906249999999999999999999999999}",
        head + ",\"fill\":1.0000000596046448}",
        head + ",\"fill\":null}",
        head + ",\"offset\":9223372036854775807}",
        head + ",\"offset\":9223372036854775808}",  // past int64
        head + ",\"parameter\":1}",
        head + ",\"requires_grad\":true,\"x_note\":{}}",
        head + ",\"bogus\":1}",
        head + ",\"name\":\"again\"}",
        with_value(line, "name", "\"" + long_name + "\""),
        with_value(line, "name", "\"" + long_name.substr(1) + "\""),
        with_value(line, "name", "\"\\u00e9t\\u00e9\""),
        with_value(line, "name", "\"\\ud800\""),  // a lone surrogate
        with_value(line, "sizes", "[1,2,3,4,5,6,7,8,9]"),
        with_value(line, "sizes", "[-1]"),
        with_value(line, "sizes", "[4096,4097]"),  // past kMaxValueElements
        with_value(line, "sizes", "[1.0]"),
        with_value(line, "sizes", "4"),
        with_value(line, "index", "7"),
        with_value(line, "seq", "1"),
        with_value(line, "action", "\"new_tensors\""),
    };
  });
  check_variants(*lines, "\"action\":\"call\"", [&](const std::string& line) {
    const std::string head = line.substr(0, line.size() - 1);
    return std::vector<std::string>{
        head + ",\"int_key\":[1,-2]}",
        head + ",\"int_key\":[1.5]}",
        head + ",\"new_invocation\":false}",
        head + ",\"new_invocation\":null}",
        head + ",\"consume\":[\"x\"]}",
        head + ",\"consume\":[1]}",
        with_value(line, "args", "[]"),
        with_value(line, "args", "[\"a\",null]"),
        with_value(line, "outputs", "[\"\"]"),
        with_value(line, "function", "7"),
        "{\"type\":\"action\"," + line.substr(1),  // type given twice
    };
  });
}

TEST_CASE("float32 fields: a midpoint is read from its text, as strtof reads it") {
  const float one_up = std::nextafter(1.0f, 2.0f);
  const float denorm = std::numeric_limits<float>::denorm_min();
  struct Case {
    const char* text;
    float want;
  };
  // Each text's nearest double is exactly halfway between two floats, where
  // a double-then-float rounding takes the even one.
  const Case cases[] = {
      {"1.000000059604644775390625000000000000000000000000000001", one_up},
      {"1.0000000596046447753906249999999999999999999999999", 1.0f},
      {"1.0000000596046448", one_up},  // 17 digits, above the midpoint
      {"7.00649232162408535461864791644958065640130970938257885878534141944895541342930300743319"
       "094181060791015625000001e-46",
       denorm},       // just above half the smallest denormal
      {"1.5", 1.5f},  // no midpoint: unchanged
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Json j;
    REQUIRE(parse_trace_json(std::string("{\"fill\":") + c.text + "}", j));
    const Result<float> f = json_float32(j["fill"], "fill");
    REQUIRE(f.ok());
    CHECK(*f == c.want);
  }
  CHECK(float32_midpoint(1.0 + 0x1p-24));
  CHECK_FALSE(float32_midpoint(1.0));
  CHECK_FALSE(float32_midpoint(1.0 + 0x1p-25));
}

}  // namespace
}  // namespace capsim
