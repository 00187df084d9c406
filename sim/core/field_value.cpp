// The text printer of an event field's value (see field_value.hpp); the JSON printer is in
// traces/format/event_schema.cpp.
#include "sim/core/field_value.hpp"

#include <fmt/format.h>

#include "model/digest.hpp"

namespace capsim {

std::string format_list(const IntList& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out += ',';
    out += std::to_string(values[i]);
  }
  return out + "]";
}

std::string format_addresses(const AddressList& addresses) {
  std::string out = "[";
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (i != 0) out += ',';
    out += hex(addresses[i]);
  }
  return out + "]";
}

std::string format_text_list(const TextList& values) {
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

std::string format_index_lists(const IntLists& lists) {
  std::string out = "[";
  for (std::size_t i = 0; i < lists.size(); ++i) {
    if (i != 0) out += ',';
    out += format_list(lists[i]);
  }
  return out + "]";
}

namespace {
struct TextPrinter {
  std::string operator()(std::int64_t v) const { return std::to_string(v); }
  std::string operator()(const IntOrNone& v) const {
    return v.value ? std::to_string(*v.value) : std::string("None");
  }
  std::string operator()(bool v) const { return v ? "true" : "false"; }
  std::string operator()(const std::string& v) const { return v; }
  std::string operator()(const IntList& v) const { return format_list(v); }
  std::string operator()(const DevicePtr& v) const { return hex(v.value); }
  std::string operator()(const AddressList& v) const { return format_addresses(v); }
  std::string operator()(const TextList& v) const { return format_text_list(v); }
  std::string operator()(const IntLists& v) const { return format_index_lists(v); }
  std::string operator()(const Digest& v) const { return digest_hex(v.value); }
};
}  // namespace

std::string format_value(const FieldValue& value) {
  return std::visit(TextPrinter{}, value.storage());
}

}  // namespace capsim
