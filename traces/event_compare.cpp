#include "traces/event_compare.hpp"

#include <charconv>
#include <vector>

#include "sim/autograd/fx_target_names.hpp"
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

std::optional<CanonicalCalls> captured_calls(const Event& e) {
  const std::optional<std::string_view> targets = e.field("targets");
  if (!targets) return std::nullopt;
  const Json t = Json::parse(*targets, nullptr, /*allow_exceptions=*/false);
  if (!t.is_array()) return std::nullopt;
  std::vector<std::string> raw;
  for (const Json& x : t) {
    if (!x.is_string()) return std::nullopt;
    raw.push_back(x.get<std::string>());
  }
  std::vector<std::vector<std::uint32_t>> uses;
  if (const std::optional<std::string_view> u = e.field("uses")) {
    const Json j = Json::parse(*u, nullptr, /*allow_exceptions=*/false);
    if (!j.is_array()) return std::nullopt;
    for (const Json& list : j) {
      std::vector<std::uint32_t> refs;
      for (const Json& i : list) {
        if (!i.is_number_unsigned() || i.get<std::uint64_t>() >= raw.size()) return std::nullopt;
        refs.push_back(static_cast<std::uint32_t>(i.get<std::uint64_t>()));
      }
      uses.push_back(std::move(refs));
    }
  }
  return canonical_calls(raw, uses);
}

std::string EventComparison::comparable(const Event& e, const EventField& f,
                                        AddressOrder& order) const {
  if (f.key == "targets" || f.key == "uses") {
    const std::optional<CanonicalCalls> calls = captured_calls(e);
    if (!calls) return f.value;
    return f.key == "targets" ? format_text_list(calls->targets) : format_index_lists(calls->uses);
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
    if (comparable(predicted, *it->second, model_) != comparable(recorded, f, trace_)) {
      return f.key;
    }
    model.erase(it);
  }
  // A real run compares what it observed; capsim's own traces every field.
  if (!real_run_ && !model.empty()) return std::string(model.begin()->first);
  return std::nullopt;
}

}  // namespace capsim
