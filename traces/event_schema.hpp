// The schema of event lines in a capsim trace (docs/trace-format.md §Events).
//
// Simulators keep event fields as key/value text (sim/core/events.hpp), which is
// what the printer shows. On disk every field has a JSON type: counts are
// integers, index lists are integer arrays, addresses are hex strings, flags
// are booleans. This file is the one table that says, for each event kind,
// which fields it may carry, which it must carry and of what type; the writer
// and the reader both go through it, so a field the table does not list can
// neither be written nor read.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "sim/core/events.hpp"
#include "traces/json_fields.hpp"

namespace capsim {

// X(enumerator, name, json form)
#define CAPSIM_FIELD_TYPES(X)                                               \
  X(kInt, "int", "integer")                                                 \
  X(kIntOrNone, "int_or_none", "integer, or null for Python's None")        \
  X(kBool, "bool", "boolean")                                               \
  X(kText, "text", "string")                                                \
  X(kIntList, "int_list", "array of integers")                              \
  X(kAddress, "address", "hex string \"0x...\", a device address in bytes") \
  X(kAddressList, "address_list", "array of hex address strings")           \
  X(kTextList, "text_list", "array of strings")                             \
  X(kIntLists, "int_lists", "array of integer arrays")                      \
  X(kDigest, "digest", "16 lower-case hex digits: FNV-1a 64 over float32 bytes")
enum class FieldType : std::uint8_t {
#define CAPSIM_ENUM_(e, name, json) e,
  CAPSIM_FIELD_TYPES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view field_type_name(FieldType type);
std::string_view field_type_json(FieldType type);

// The values an integer field, or each integer of a list field, may take. A
// value outside is refused where it is read, with the field named: consumers
// size work by these numbers (a tree drawing's path by `depth`, a Chrome
// export's slices by `steps`), so no claim of a trace may reach them
// unbounded (docs/trace-format.md §8).
struct IntRange {
  std::int64_t min;
  std::int64_t max;
};
inline constexpr IntRange kAnyInt{INT64_MIN, INT64_MAX};  // symint values: sizes nothing
inline constexpr IntRange kIdRange{0, (std::int64_t{1} << 31) - 1};
inline constexpr IntRange kNodeIdRange{-((std::int64_t{1} << 31) - 1), (std::int64_t{1} << 31) - 1};
inline constexpr IntRange kDepthRange{0, std::int64_t{1} << 16};  // a tree holds 2^16 nodes
inline constexpr IntRange kIndexRange{0, std::int64_t{1} << 20};
inline constexpr IntRange kStepsRange{0, std::int64_t{1} << 20};  // model/step_program.hpp
inline constexpr IntRange kCountRange{0, std::int64_t{1} << 32};
inline constexpr IntRange kBytesRange{0, std::int64_t{1} << 50};

struct FieldSpec {
  std::string_view key;
  FieldType type;
  std::string_view meaning;  // one line, for docs/trace-format.md
  IntRange range = kAnyInt;  // integer types only
};

struct EventFieldUse {
  std::string_view key;
  bool required;
};

// Every field key any event may carry, in a fixed order.
std::span<const FieldSpec> event_field_specs();
const FieldSpec* find_field_spec(std::string_view key);
// The fields an event kind may carry, in the order the simulator writes them.
std::span<const EventFieldUse> event_fields_of(EventKind kind);
std::optional<EventKind> event_kind_from_name(std::string_view name);

// Fields that are capsim's own diagnostics rather than observations (the
// verify_replays comparison): never written to a trace, never compared.
bool is_diagnostic_field(std::string_view key);

// The typed JSON form of an event's fields, in the event's own order; drops
// diagnostic fields. Fails (a bug in capsim) on a field the schema does not
// allow for the kind or whose text does not parse as its type.
Result<Json> event_fields_to_json(const Event& event);
// The envelope keys of an event line, which are not fields.
inline constexpr std::string_view kEventEnvelopeKeys[] = {"seq", "type", "action", "event"};

// Reads the fields of an event line back into text fields, in the line's
// order, so that fields -> json -> fields is the identity. Skips the envelope
// keys and "x_" extensions; refuses a field the kind does not allow, a value
// of the wrong type and a missing required field.
// `partial` (a recorder of a real run) lifts the check for required fields.
Result<std::vector<EventField>> event_fields_from_json(EventKind kind, const Json& line,
                                                       bool partial = false);

}  // namespace capsim
