// Events are typed: one table (sim/core/event_fields.hpp) says which fields a
// kind carries and of what type, and an event that breaks its row is a bug
// caught where it is emitted. The text printer has one form per type.
#include <doctest/doctest.h>

#include "sim/core/events.hpp"
#include "tests/support/in_child.hpp"

namespace capsim {
namespace {

TEST_CASE("events: every field type has one text form") {
  const Event record{EventKind::kRecord,
                     3,
                     {{F::fid, 0},
                      {F::function, "f"},
                      {F::graph, 2},
                      {F::parent, IntOrNone{1}},
                      {F::static_, IntList{0, 2}},
                      {F::managed, IntList{}},
                      {F::steps, 4},
                      {F::static_ptrs, AddressList{0x7f0000000000, 0x7f0000000200}},
                      {F::reason, "static_input_idx_mismatch"},
                      {F::old_ptr, DevicePtr{0x7f0000000400}}}};
  CHECK(format_event(record) ==
        "#3 record fid=0 function=f graph=2 parent=1 static=[0,2] managed=[] steps=4 "
        "static_ptrs=[0x7f0000000000,0x7f0000000200] reason=static_input_idx_mismatch "
        "old_ptr=0x7f0000000400");
  const Event root{
      EventKind::kRecord, 0, {{F::function, "f"}, {F::parent, IntOrNone{}}, {F::steps, 1}}};
  CHECK(format_event(root) == "#0 record function=f parent=None steps=1");
  const Event graph{EventKind::kCaGraph,
                    1,
                    {{F::backward, 0},
                     {F::captured, true},
                     {F::targets, TextList{"aten.mm", "say \"hi\""}},
                     {F::uses, IntLists{{}, {0, 0}}}}};
  CHECK(format_event(graph) ==
        R"(#1 ca_graph backward=0 captured=true targets="[\"aten.mm\",\"say \\\"hi\\\"\"]" )"
        R"(uses=[[],[0,0]])");
  const Event device{EventKind::kDevice,
                     2,
                     {{F::baked, 3},
                      {F::baked_digest, Digest{0xabc}},
                      {F::digest, Digest{0xcbf29ce484222325}},
                      {F::x_buffer_ids, IntList{41, 42}}}};
  CHECK(format_event(device) ==
        "#2 device baked=3 baked_digest=0000000000000abc digest=cbf29ce484222325 "
        "x_buffer_ids=[41,42]");
}

TEST_CASE("events: a reader gets each field as its table type") {
  const Event e{EventKind::kCopyIn, 0, {{F::function, "f"}, {F::copies, 2u}, {F::bytes, 64}}};
  CHECK(e.get<std::int64_t>(F::copies) == 2);
  CHECK(e.text(F::function) == "f");
  CHECK(e.get_if<std::int64_t>(F::graph) == nullptr);
  CHECK_FALSE(e.has(F::graph));
  CHECK(e.text(F::reason) == std::nullopt);
  CHECK(e.count(F::bytes) == 64);
  CHECK(e.count(F::graph) == 0);                                             // absent
  CHECK(Event{EventKind::kWarmup, 0, {{F::node, -3}}}.count(F::node) == 0);  // negative
  CHECK(e.printed(F::copies) == "2");
  CHECK(e.printed(F::graph) == std::nullopt);
  // Asking for another type than the table's is a broken contract.
  const auto [status, err] = testing::in_child([&] { (void)e.get_if<bool>(F::copies); });
  CHECK(WIFSIGNALED(status));
  CHECK(err.find("a field is read as its table type") != std::string::npos);
}

TEST_CASE("events: the shape check names what breaks a kind's row") {
  using V = std::vector<EventField>;
  // The mask check that emit runs must agree with the one that names the
  // fault, on every case below.
  auto event_shape_error = [](EventKind kind, const V& fields) {
    std::optional<std::string> error = capsim::event_shape_error(kind, fields);
    CHECK(event_shape_holds(kind, fields) == !error.has_value());
    return error;
  };
  CHECK(event_shape_error(EventKind::kCopyIn,
                          V{{F::function, "f"}, {F::copies, 1}, {F::bytes, 4}}) == std::nullopt);
  CHECK(event_shape_error(EventKind::kCopyIn, V{{F::function, "f"}, {F::copies, 1}}) ==
        "event 'copy_in' lacks its field 'bytes'");
  CHECK(event_shape_error(EventKind::kCopyIn,
                          V{{F::function, "f"}, {F::copies, 1}, {F::bytes, 4}, {F::depth, 0}}) ==
        "event 'copy_in' does not carry field 'depth'");
  CHECK(event_shape_error(EventKind::kCopyIn,
                          V{{F::function, "f"}, {F::copies, "1"}, {F::bytes, 4}}) ==
        "event 'copy_in' field 'copies' is a text, not a int");
  CHECK(event_shape_error(EventKind::kOutput, V{{F::name, "y"}, {F::ptr, 0x7f00u}}) ==
        "event 'output' field 'ptr' is a int, not a address");
  CHECK(event_shape_error(EventKind::kPathEnd, V{{F::reason, "a"}, {F::reason, "b"}}) ==
        "event 'path_end' carries field 'reason' twice");
  CHECK(event_shape_error(EventKind::kPathEnd, V{}) == "event 'path_end' lacks its field 'reason'");
  // The last field key in the table: the masks reach past the first word.
  CHECK(event_shape_error(EventKind::kDevice, V{{F::baked, 1},
                                                {F::baked_digest, Digest{1}},
                                                {F::digest, Digest{2}},
                                                {F::x_buffer_ids, IntList{}}}) == std::nullopt);
}

TEST_CASE("events: emitting an event that breaks its row aborts, naming it") {
  const auto [status, err] = testing::in_child([] {
    check_event_shape(EventKind::kReplay,
                      std::vector<EventField>{{F::function, "f"}, {F::depth, 1}});
  });
  CHECK(WIFSIGNALED(status));
  CHECK(err.find("event 'replay' does not carry field 'depth'") != std::string::npos);
}

TEST_CASE("events: the table's keys and enumerators agree") {
  for (const FieldSpec& spec : event_field_specs()) {
    CHECK(field_key_from_name(spec.key) == spec.field);
    CHECK(field_key_name(spec.field) == spec.key);
    CHECK(spec.extension() == spec.key.starts_with("x_"));
  }
  CHECK(field_key_name(F::static_) == "static");
  CHECK(field_key_from_name("matches_eager") == std::nullopt);
}

}  // namespace
}  // namespace capsim
