// The JSON printer and reader of typed event fields (traces/format/event_schema.hpp):
// each type has one JSON form, fields -> JSON -> fields is the identity, the
// writer refuses what a reader would refuse, and extensions ride as text.
#include <doctest/doctest.h>

#include "sim/scenarios/scenarios.hpp"
#include "tests/traces/trace_test_support.hpp"
#include "traces/format/event_schema.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/simulation/scenario_trace.hpp"

namespace capsim {
namespace {

// The fields of `e` through JSON and back.
std::vector<EventField> round_trip(const Event& e, std::string& json) {
  const Result<Json> j = event_fields_to_json(e);
  REQUIRE(j.ok());
  json = j->dump();
  const Result<std::vector<EventField>> back = event_fields_from_json(e.kind, *j);
  REQUIRE(back.ok());
  return *back;
}

TEST_CASE("event schema: every field type has one JSON form and reads back") {
  const Event record{EventKind::kRecord,
                     0,
                     {{F::function, "f"},
                      {F::graph, 2},
                      {F::parent, IntOrNone{}},
                      {F::static_, IntList{0, 2}},
                      {F::steps, 4},
                      {F::static_ptrs, AddressList{0x7f0000000000}},
                      {F::old_ptr, DevicePtr{0x7f0000000400}}}};
  std::string json;
  CHECK(round_trip(record, json) == record.fields);
  CHECK(json == R"({"function":"f","graph":2,"parent":null,"static":[0,2],"steps":4,)"
                R"("static_ptrs":["0x7f0000000000"],"old_ptr":"0x7f0000000400"})");
  const Event graph{EventKind::kCaGraph,
                    0,
                    {{F::backward, 1},
                     {F::captured, false},
                     {F::targets, TextList{"aten.mm", "q\"uote"}},
                     {F::uses, IntLists{{}, {0}}}}};
  CHECK(round_trip(graph, json) == graph.fields);
  CHECK(json ==
        R"({"backward":1,"captured":false,"targets":["aten.mm","q\"uote"],"uses":[[],[0]]})");
  const Event read{EventKind::kRead,
                   0,
                   {{F::name, "y"}, {F::numel, 8}, {F::digest, Digest{0x79586523551516e5}}}};
  CHECK(round_trip(read, json) == read.fields);
  CHECK(json == R"({"name":"y","numel":8,"digest":"79586523551516e5"})");
}

// The Chrome export writes fields with the text printer; its bytes must be
// the JSON printer's, or a file would change with the writer that made it.
std::string printed_as_text(const Event& e) {
  std::string out;
  JsonObjectText object(out);
  REQUIRE(append_event_fields(object, e).ok());
  object.close();
  return out;
}

TEST_CASE("event schema: the text printer writes the JSON printer's bytes") {
  const Event odd{EventKind::kCaGraph,
                  0,
                  {{F::backward, 3},
                   {F::captured, true},
                   {F::targets, TextList{"", "tab\there", "\x01\x1f\x7f", "é—𝄞", "\\\""}},
                   {F::uses, IntLists{}}}};
  CHECK(printed_as_text(odd) == event_fields_to_json(odd)->dump());
  const Event device{EventKind::kDevice,
                     0,
                     {{F::baked, 1},
                      {F::baked_digest, Digest{1}},
                      {F::digest, Digest{~0ULL}},
                      {F::x_buffer_ids, IntList{3, 7}}}};
  CHECK(printed_as_text(device) == event_fields_to_json(device)->dump());
  const Event warmup{EventKind::kWarmup,
                     0,
                     {{F::fid, 0}, {F::function, "f"}, {F::node, -2147483647}, {F::depth, 0}}};
  CHECK(printed_as_text(warmup) == event_fields_to_json(warmup)->dump());
  // Every event of every built-in scenario: all kinds, all field types.
  std::size_t events = 0;
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    Result<std::vector<std::string>> lines = trace_scenario(s);
    REQUIRE(lines.ok());
    Result<std::unique_ptr<TraceReader>> reader = test::reader_of(test::join_lines(*lines));
    REQUIRE(reader.ok());
    for (;;) {
      Result<std::optional<TraceItem>> item = (*reader)->next();
      REQUIRE(item.ok());
      if (!*item) break;
      // Action and function lines are written as text too: dump()'s bytes.
      if ((*item)->type == TraceLineType::kAction || (*item)->type == TraceLineType::kFunction) {
        CHECK(Json::parse((*item)->text).dump() == (*item)->text);
      }
      if ((*item)->type != TraceLineType::kEvent) continue;
      ++events;
      CAPTURE((*item)->text);
      CHECK(printed_as_text((*item)->event) == event_fields_to_json((*item)->event)->dump());
      // The whole line as event_line wrote it (as text): dump()'s bytes too.
      CHECK(Json::parse((*item)->text).dump() == (*item)->text);
    }
  }
  CHECK(events > 1000);
  // Out of range: the same refusal as the JSON printer's.
  const Event steps{EventKind::kRecord, 0, {{F::function, "f"}, {F::steps, -1}}};
  std::string out;
  JsonObjectText object(out);
  CHECK(!append_event_fields(object, steps).ok());
}

TEST_CASE("event schema: an extension is written as its text and skipped on reading") {
  const Event device{EventKind::kDevice,
                     0,
                     {{F::baked, 1},
                      {F::baked_digest, Digest{1}},
                      {F::digest, Digest{2}},
                      {F::x_buffer_ids, IntList{3, 7}}}};
  std::string json;
  const std::vector<EventField> back = round_trip(device, json);
  CHECK(json == R"({"baked":1,"baked_digest":"0000000000000001","digest":"0000000000000002",)"
                R"("x_buffer_ids":"[3,7]"})");
  CHECK(back.size() == 3);
}

TEST_CASE("event schema: the writer refuses a number out of its field's range") {
  const Event warmup{
      EventKind::kWarmup, 0, {{F::fid, 0}, {F::function, "f"}, {F::node, -1}, {F::depth, 1 << 17}}};
  const Result<Json> j = event_fields_to_json(warmup);
  REQUIRE_FALSE(j.ok());
  CHECK(j.error().message == "event 'warmup' field 'depth': 131072 is outside [0, 65536]");
  const Event listed{
      EventKind::kSkip, 0, {{F::id, "S1"}, {F::inputs, IntList{-1}}, {F::message, "m"}}};
  CHECK_FALSE(event_fields_to_json(listed).ok());
}

TEST_CASE("event schema: the reader refuses each type's wrong JSON, naming the field") {
  const auto error = [](EventKind kind, const char* line) {
    const Result<std::vector<EventField>> r = event_fields_from_json(kind, Json::parse(line));
    return r.ok() ? std::string() : r.error().message;
  };
  CHECK(error(EventKind::kOutput, R"({"name":"y","ptr":"0x7F00"})") ==
        "field 'ptr': expected lower-case hex digits, got \"0x7F00\"");
  CHECK(error(EventKind::kRead, R"({"name":"y","numel":8,"digest":"79586523551516e"})") ==
        "field 'digest': expected a digest of 16 lower-case hex digits");
  CHECK(error(EventKind::kCaGraph, R"({"backward":0,"captured":"true"})") ==
        "field 'captured': expected a boolean");
  CHECK(error(EventKind::kCaGraph, R"({"backward":0,"captured":true,"uses":[[0],3]})") ==
        "field 'uses[1]': expected an array of integers");
  CHECK(error(EventKind::kReplay, R"({"function":"f","matches_eager":true})")
            .starts_with("field 'matches_eager': unknown field for event 'replay'"));
  CHECK(error(EventKind::kCopyIn, R"({"function":"f","copies":1})") ==
        "field 'bytes': missing (event 'copy_in' requires it)");
}

}  // namespace
}  // namespace capsim
