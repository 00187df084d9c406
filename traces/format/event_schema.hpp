// The JSON form of event fields in a capsim trace (docs/trace-format.md §6).
//
// The table of fields and of which kind carries which lives with the
// simulators (sim/core/event_fields.hpp); this file is the JSON printer and
// reader of those typed values. On disk every field has a JSON type: counts
// are integers, index lists are integer arrays, addresses are hex strings,
// flags are booleans. The writer and the reader both go through the table,
// so a field it does not list can neither be written nor read.
#pragma once

#include <string_view>
#include <vector>

#include "sim/core/events.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/format/json_text.hpp"

namespace capsim {

// The typed JSON form of an event's fields, in the event's own order. An
// "x_" extension is written as its text form, which readers skip. Fails on
// an integer outside its field's range (docs/trace-format.md §8): capsim
// never writes what a reader would refuse.
Result<Json> event_fields_to_json(const Event& event);
// The same members, written straight into `object` with the same bytes as
// event_fields_to_json's dump, for writers of millions of events (the Chrome
// export), where a Json value per event was most of the cost.
Status append_event_fields(JsonObjectText& object, const Event& event);
// The envelope keys of an event line, which are not fields.
inline constexpr std::string_view kEventEnvelopeKeys[] = {"seq", "type", "action", "event"};

// Reads the fields of an event line into typed fields, in the line's order,
// so that fields -> json -> fields is the identity. Skips the envelope keys
// and "x_" extensions; refuses a field the kind does not carry, a value of
// the wrong type or out of range, and a missing required field.
// `partial` (a recorder of a real run) lifts the check for required fields.
Result<std::vector<EventField>> event_fields_from_json(EventKind kind, const Json& line,
                                                       bool partial = false);

}  // namespace capsim
