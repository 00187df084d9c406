// Events: everything observable that a simulator does, in the order it did it.
//
// A World appends one Event per observable step (a warmup, a recording, a
// replay, a copy-in, a checkpoint, an eager fallback and its reason, a
// modelled PyTorch error with its exact text, a value read by the program,
// compiled autograd's cache decisions and captures...).
// Tests count and inspect them; the printer renders one line each; traces
// store them. Fields are ordered (key, typed value) pairs: the order is the
// emitter's, so that the text form is stable and needs no per-kind printer,
// and every event holds to its kind's row of sim/core/event_fields.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/check.hpp"
#include "sim/core/event_fields.hpp"
#include "sim/core/event_kinds.hpp"
#include "sim/core/field_value.hpp"

namespace capsim {

struct EventField {
  FieldKey key;
  FieldValue value;
  friend bool operator==(const EventField&, const EventField&) = default;
};

struct Event {
  EventKind kind = EventKind::kCompile;
  std::uint32_t action = 0;  // index of the program action that caused it
  std::vector<EventField> fields;

  // The value of `key`, or null if the event does not carry it.
  const FieldValue* find(FieldKey key) const;
  bool has(FieldKey key) const { return find(key) != nullptr; }
  // The field as its table type, or null if absent. Asking for another type
  // than the table's is a bug in capsim (every event was checked when it was
  // emitted or read).
  template <typename T>
  const T* get_if(FieldKey key) const {
    const FieldValue* v = find(key);
    if (v == nullptr) return nullptr;
    const T* typed = v->get_if<T>();
    CAPSIM_CHECK(typed != nullptr, "a field is read as its table type");
    return typed;
  }
  // A field every event of the kind carries (or that the caller has seen).
  template <typename T>
  const T& get(FieldKey key) const {
    const T* typed = get_if<T>(key);
    CAPSIM_CHECK(typed != nullptr, "a field read with get() is present");
    return *typed;
  }
  // A text field's value, to compare with a literal: e.text(F::what) == "dropped".
  std::optional<std::string_view> text(FieldKey key) const;
  // An integer field read as a count (bytes, copies, a depth, a graph id):
  // 0 when absent, as a real run's trace may leave it out, and when negative.
  std::uint64_t count(FieldKey key) const;
  // The field as the text printer writes it (format_value), for a label.
  std::optional<std::string> printed(FieldKey key) const;
  friend bool operator==(const Event&, const Event&) = default;
};

// The limit on events one World holds at once (emitted, not yet taken with
// take_events). Input can reach it (a long program run by a command that
// keeps its events), so the World refuses the action that passes it, as bad
// input; SimContext::emit asserts at twice the limit, which no one action
// reaches (an action's events are bounded by its own input's limits).
inline constexpr std::size_t kMaxEvents = std::size_t{1} << 24;

// What is wrong with an event of `kind` with these fields, if anything: a
// key its kind does not carry, or twice, a value of another type than the
// table's, a required key missing. Ranges are the writer's to check
// (traces/format/event_schema.hpp): a number out of range is refused as output, not
// a broken contract.
std::optional<std::string> event_shape_error(EventKind kind, std::span<const EventField> fields);
// event_shape_error(...) == nullopt, with mask operations and no text: the
// check every emitted event passes.
bool event_shape_holds(EventKind kind, std::span<const EventField> fields);
// Aborts, naming the kind and the field, unless the event holds to its row.
void check_event_shape(EventKind kind, std::span<const EventField> fields);

// One line: "#<action> <kind> key=value ...". Values with spaces, quotes or
// newlines are quoted with C escapes, so every event is exactly one line.
std::string format_event(const Event& event);

std::size_t count_events(const std::vector<Event>& events, EventKind kind);

}  // namespace capsim
