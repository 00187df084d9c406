// JSON text written straight into a string (see json_text.hpp).
#include "traces/format/json_text.hpp"

#include <fmt/format.h>

#include <array>

namespace capsim {

namespace {

// What dump() writes for a byte below 0x80: the short escapes, \u00XX
// (lower-case) for the other control characters, the byte itself otherwise.
void append_ascii(std::string& out, char c) {
  switch (c) {
    case '"': out += "\\\""; return;
    case '\\': out += "\\\\"; return;
    case '\b': out += "\\b"; return;
    case '\f': out += "\\f"; return;
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: break;
  }
  if (static_cast<unsigned char>(c) < 0x20) {
    fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
  } else {
    out += c;
  }
}

bool plain(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
}

}  // namespace

std::size_t utf8_sequence(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto tail = [&](std::size_t i, unsigned lo = 0x80, unsigned hi = 0xbf) {
    return i < s.size() && byte(i) >= lo && byte(i) <= hi;
  };
  const unsigned c = byte(0);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return tail(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const bool second = c == 0xe0 ? tail(1, 0xa0) : c == 0xed ? tail(1, 0x80, 0x9f) : tail(1);
    return second && tail(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const bool second = c == 0xf0 ? tail(1, 0x90) : c == 0xf4 ? tail(1, 0x80, 0x8f) : tail(1);
    return second && tail(2) && tail(3) ? 4 : 0;
  }
  return 0;
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  while (!s.empty()) {
    // Runs of plain characters, the common case, go in one append.
    std::size_t run = 0;
    while (run < s.size() && plain(s[run])) ++run;
    out.append(s.substr(0, run));
    s.remove_prefix(run);
    if (s.empty()) break;
    if (static_cast<unsigned char>(s.front()) < 0x80) {
      append_ascii(out, s.front());
      s.remove_prefix(1);
      continue;
    }
    const std::size_t n = utf8_sequence(s);
    out.append(n == 0 ? std::string_view("\xef\xbf\xbd") : s.substr(0, n));
    s.remove_prefix(n == 0 ? 1 : n);
  }
  out += '"';
}

std::string& JsonObjectText::key(std::string_view k) {
  if (!first_) out_ += ',';
  first_ = false;
  append_json_string(out_, k);
  out_ += ':';
  return out_;
}

void JsonObjectText::add(std::string_view k, std::int64_t v) {
  fmt::format_to(std::back_inserter(key(k)), "{}", v);
}

void JsonObjectText::add(std::string_view k, std::uint64_t v) {
  fmt::format_to(std::back_inserter(key(k)), "{}", v);
}

void JsonObjectText::add(std::string_view k, std::string_view v) {
  append_json_string(key(k), v);
}

void JsonMembersText::Member::operator=(const std::vector<std::string>& v) {
  std::string& out = object_.key(key_);
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    append_json_string(out, v[i]);
  }
  out += ']';
}

void JsonMembersText::Member::operator=(const std::vector<std::int64_t>& v) {
  std::string& out = object_.key(key_);
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", v[i]);
  }
  out += ']';
}

}  // namespace capsim
