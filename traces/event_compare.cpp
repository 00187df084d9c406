#include "traces/event_compare.hpp"

#include <charconv>
#include <vector>

#include "sim/fx_target_names.hpp"
#include "traces/event_schema.hpp"

namespace capsim {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_hex_digit(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// A pointer as PyTorch prints it in a message: at least this many digits.
constexpr std::size_t kMinDecimalPointerDigits = 10;

}  // namespace

std::string AddressOrder::ordinal(std::uint64_t address) {
  const auto [it, fresh] = seen_.emplace(address, seen_.size());
  (void)fresh;
  return "#" + std::to_string(it->second);
}

std::string AddressOrder::translate_hex(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text.substr(i, 2) == "0x") {
      std::size_t end = i + 2;
      while (end < text.size() && is_hex_digit(text[end])) ++end;
      std::uint64_t value = 0;
      const auto [ptr, ec] = std::from_chars(text.data() + i + 2, text.data() + end, value, 16);
      if (ec == std::errc() && ptr == text.data() + end && end > i + 2) {
        out += ordinal(value);
        i = end;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

std::string AddressOrder::translate_decimal(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (is_digit(text[i]) && (i == 0 || !is_digit(text[i - 1]))) {
      std::size_t end = i;
      while (end < text.size() && is_digit(text[end])) ++end;
      std::uint64_t value = 0;
      const auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + end, value, 10);
      if (end - i >= kMinDecimalPointerDigits && ec == std::errc() && ptr == text.data() + end) {
        out += ordinal(value);
        i = end;
        continue;
      }
      out.append(text.substr(i, end - i));
      i = end;
      continue;
    }
    out += text[i++];
  }
  return out;
}

std::string EventComparison::comparable(const EventField& f, AddressOrder& order) const {
  if (f.key == "targets") {
    const Json list = Json::parse(f.value, nullptr, /*allow_exceptions=*/false);
    if (!list.is_array()) return f.value;
    std::vector<std::string> raw;
    for (const Json& t : list) {
      if (!t.is_string()) return f.value;
      raw.push_back(t.get<std::string>());
    }
    return format_text_list(canonical_call_targets(raw));
  }
  if (!real_run_) return f.value;
  const FieldSpec* spec = find_field_spec(f.key);
  if (spec == nullptr) return f.value;
  if (spec->type == FieldType::kAddress || spec->type == FieldType::kAddressList) {
    return order.translate_hex(f.value);
  }
  if (f.key == "message") return order.translate_decimal(f.value);
  return f.value;
}

std::optional<std::string> EventComparison::first_difference(const Event& predicted,
                                                             const Event& recorded) {
  if (predicted.kind != recorded.kind) return std::string("event");
  if (predicted.action != recorded.action) return std::string("action");
  std::map<std::string_view, const EventField*> model;
  for (const EventField& f : predicted.fields) {
    if (!is_diagnostic_field(f.key)) model[f.key] = &f;
  }
  for (const EventField& f : recorded.fields) {
    auto it = model.find(f.key);
    if (it == model.end()) return f.key;
    if (comparable(*it->second, model_) != comparable(f, trace_)) return f.key;
    model.erase(it);
  }
  // A real run compares what it observed; capsim's own traces every field.
  if (!real_run_ && !model.empty()) return std::string(model.begin()->first);
  return std::nullopt;
}

}  // namespace capsim
