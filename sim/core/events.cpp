#include "sim/core/events.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace capsim {

std::string_view event_kind_name(EventKind kind) {
  switch (kind) {
#define CAPSIM_NAME_(e, name) \
  case EventKind::e: return name;
    CAPSIM_EVENT_KINDS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

std::optional<std::string_view> Event::field(std::string_view key) const {
  for (const EventField& f : fields) {
    if (f.key == key) return f.value;
  }
  return std::nullopt;
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
    line += fmt::format(" {}={}", f.key, quoted_if_needed(f.value));
  }
  return line;
}

std::size_t count_events(const std::vector<Event>& events, EventKind kind) {
  return static_cast<std::size_t>(
      std::count_if(events.begin(), events.end(), [&](const Event& e) { return e.kind == kind; }));
}

std::string format_addresses(const std::vector<std::uint64_t>& addresses) {
  std::string out = "[";
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (i != 0) out += ',';
    out += fmt::format("{:#x}", addresses[i]);
  }
  return out + "]";
}

std::string format_text_list(const std::vector<std::string>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out += ',';
    out += '"';
    for (const char c : values[i]) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (u < 0x20) {
        out += fmt::format("\\u{:04x}", u);
      } else {
        out += c;
      }
    }
    out += '"';
  }
  return out + "]";
}

}  // namespace capsim
