// Events (see events.hpp): field lookup, the check of an event against its kind's row of
// event_fields.hpp, and the one-line text form.
#include "sim/core/events.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace capsim {

const FieldValue* Event::find(FieldKey key) const {
  for (const EventField& f : fields) {
    if (f.key == key) return &f.value;
  }
  return nullptr;
}

std::optional<std::string_view> Event::text(FieldKey key) const {
  const std::string* s = get_if<std::string>(key);
  if (s == nullptr) return std::nullopt;
  return std::string_view(*s);
}

std::uint64_t Event::count(FieldKey key) const {
  const std::int64_t* v = get_if<std::int64_t>(key);
  return v != nullptr && *v > 0 ? static_cast<std::uint64_t>(*v) : 0;
}

std::optional<std::string> Event::printed(FieldKey key) const {
  const FieldValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  return format_value(*v);
}

std::optional<std::string> event_shape_error(EventKind kind, std::span<const EventField> fields) {
  const std::string_view kind_name = event_kind_name(kind);
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const FieldSpec& spec = field_spec(fields[i].key);
    if (find_field_use(kind, fields[i].key) == nullptr) {
      return fmt::format("event '{}' does not carry field '{}'", kind_name, spec.key);
    }
    if (fields[i].value.type() != spec.type) {
      return fmt::format("event '{}' field '{}' is a {}, not a {}", kind_name, spec.key,
                         field_type_name(fields[i].value.type()), field_type_name(spec.type));
    }
    for (std::size_t k = 0; k < i; ++k) {
      if (fields[k].key == fields[i].key) {
        return fmt::format("event '{}' carries field '{}' twice", kind_name, spec.key);
      }
    }
  }
  for (const EventFieldUse& use : event_fields_of(kind)) {
    const bool present = std::any_of(fields.begin(), fields.end(),
                                     [&](const EventField& f) { return f.key == use.field; });
    if (use.required && !present) {
      return fmt::format("event '{}' lacks its field '{}'", kind_name, field_key_name(use.field));
    }
  }
  return std::nullopt;
}

bool event_shape_holds(EventKind kind, std::span<const EventField> fields) {
  const EventFieldMasks& masks = event_field_masks(kind);
  FieldMask seen;
  for (const EventField& f : fields) {
    if (!masks.allowed.test(f.key) || seen.test(f.key)) return false;
    if (f.value.type() != field_spec(f.key).type) return false;
    seen.set(f.key);
  }
  return seen.contains(masks.required);
}

void check_event_shape(EventKind kind, std::span<const EventField> fields) {
  if (event_shape_holds(kind, fields)) return;
  if (const std::optional<std::string> error = event_shape_error(kind, fields)) {
    detail::check_failed(__FILE__, __LINE__,
                         "an event holds to its kind's row of "
                         "sim/core/event_fields.hpp",
                         error->c_str());
  }
}

namespace {
std::string quoted_if_needed(std::string_view value) {
  const bool plain = !value.empty() && std::none_of(value.begin(), value.end(), [](char c) {
    return c == ' ' || c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '=';
  });
  if (plain) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}
}  // namespace

std::string format_event(const Event& event) {
  std::string line = fmt::format("#{} {}", event.action, event_kind_name(event.kind));
  for (const EventField& f : event.fields) {
    line += fmt::format(" {}={}", field_key_name(f.key), quoted_if_needed(format_value(f.value)));
  }
  return line;
}

std::size_t count_events(const std::vector<Event>& events, EventKind kind) {
  return static_cast<std::size_t>(
      std::count_if(events.begin(), events.end(), [&](const Event& e) { return e.kind == kind; }));
}

}  // namespace capsim
