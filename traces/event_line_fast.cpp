// The fast path for event lines (event_line_fast.hpp). Every function here
// returns nullopt (or false) where the general reader would do anything but
// read the same event: it never decides an error.
#include "traces/event_line_fast.hpp"

#include <simdjson.h>

#include <algorithm>
#include <array>

#include "model/check.hpp"

namespace capsim {

// Named, so that a unity build with trace_reader.cpp's and
// event_schema.cpp's helpers (tests/fuzz/run-libfuzzer.sh) sees no clash.
namespace fast_event_line {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// A line with more keys than this goes the general way (its set of seen keys
// is a sorted vector past 32; see DuplicateKeyWatch in trace_reader.cpp).
constexpr std::size_t kMaxKeys = 32;

std::optional<std::int64_t> integer(element e) {
  if (e.type() != element_type::INT64) return std::nullopt;  // a uint64 or a double: decline
  std::int64_t v = 0;
  if (e.get_int64().get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}

std::optional<std::int64_t> bounded(element e, IntRange range) {
  const std::optional<std::int64_t> v = integer(e);
  if (!v || !range.contains(*v)) return std::nullopt;
  return v;
}

std::optional<std::string_view> text(element e) {
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) return std::nullopt;
  return s;
}

// json_address's rule: "0x" and 1 to 16 lower-case hex digits.
std::optional<Address> address(element e) {
  const std::optional<std::string_view> s = text(e);
  if (!s || s->size() < 3 || s->size() > 18 || (*s)[0] != '0' || (*s)[1] != 'x') {
    return std::nullopt;
  }
  Address a = 0;
  for (const char c : s->substr(2)) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (digit < 0) return std::nullopt;
    a = a * 16 + static_cast<Address>(digit);
  }
  return a;
}

template <typename Item, typename Read>
std::optional<std::vector<Item>> list(element e, Read read) {
  simdjson::dom::array array;
  if (e.get_array().get(array) != simdjson::SUCCESS) return std::nullopt;
  std::vector<Item> out;
  out.reserve(array.size());
  for (element item : array) {
    std::optional<Item> v = read(item);
    if (!v) return std::nullopt;
    out.push_back(std::move(*v));
  }
  return out;
}

// json_to_value's reading of one field, for the types events use on hot
// paths; the rare ones (digests, lists of lists) go the general way.
std::optional<FieldValue> value(const FieldSpec& spec, element e) {
  switch (spec.type) {
    case FieldType::kInt:
      if (auto v = bounded(e, spec.range)) return FieldValue(*v);
      return std::nullopt;
    case FieldType::kIntOrNone:
      if (e.is_null()) return FieldValue(IntOrNone{});
      if (auto v = bounded(e, spec.range)) return FieldValue(IntOrNone{*v});
      return std::nullopt;
    case FieldType::kBool: {
      bool b = false;
      if (e.get_bool().get(b) != simdjson::SUCCESS) return std::nullopt;
      return FieldValue(b);
    }
    case FieldType::kText:
      if (auto s = text(e)) return FieldValue(std::string(*s));
      return std::nullopt;
    case FieldType::kIntList:
      if (auto l = list<std::int64_t>(e, [&](element x) { return bounded(x, spec.range); })) {
        return FieldValue(std::move(*l));
      }
      return std::nullopt;
    case FieldType::kAddress:
      if (auto a = address(e)) return FieldValue(DevicePtr{*a});
      return std::nullopt;
    case FieldType::kAddressList:
      if (auto l = list<Address>(e, address)) return FieldValue(std::move(*l));
      return std::nullopt;
    case FieldType::kTextList: {
      auto read = [](element x) -> std::optional<std::string> {
        if (auto s = text(x)) return std::string(*s);
        return std::nullopt;
      };
      if (auto l = list<std::string>(e, read)) return FieldValue(std::move(*l));
      return std::nullopt;
    }
    case FieldType::kIntLists:
    case FieldType::kDigest: return std::nullopt;
  }
  return std::nullopt;
}

struct KeyValue {
  std::string_view key;
  element value;
};

// The line's keys and values in its order, when it is an object of at most
// kMaxKeys keys, none repeated.
std::optional<std::vector<KeyValue>> members(element root) {
  simdjson::dom::object object;
  if (root.get_object().get(object) != simdjson::SUCCESS) return std::nullopt;
  std::vector<KeyValue> out;
  for (simdjson::dom::key_value_pair kv : object) {
    if (out.size() == kMaxKeys) return std::nullopt;
    for (const KeyValue& seen : out) {
      if (seen.key == kv.key) return std::nullopt;
    }
    out.push_back({kv.key, kv.value});
  }
  return out;
}

}  // namespace

std::optional<Event> read_event(simdjson::dom::parser& parser, std::string_view line,
                                std::uint64_t seq, std::size_t action, const TraceHeader& header) {
  element root;
  if (parser.parse(line.data(), line.size(), false).get(root) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  const std::optional<std::vector<KeyValue>> kvs = members(root);
  if (!kvs) return std::nullopt;
  const auto find = [&](std::string_view key) -> const element* {
    for (const KeyValue& kv : *kvs) {
      if (kv.key == key) return &kv.value;
    }
    return nullptr;
  };
  const element* s = find("seq");
  const element* t = find("type");
  const element* a = find("action");
  const element* k = find("event");
  if (!s || !t || !a || !k || integer(*s) != static_cast<std::int64_t>(seq) ||
      text(*t) != "event" || integer(*a) != static_cast<std::int64_t>(action)) {
    return std::nullopt;
  }
  const std::optional<std::string_view> kind_name = text(*k);
  const std::optional<EventKind> kind = kind_name ? event_kind_from_name(*kind_name) : std::nullopt;
  if (!kind || !header.observed(*kind)) return std::nullopt;

  Event event;
  event.kind = *kind;
  event.action = static_cast<std::uint32_t>(action);
  event.fields.reserve(kvs->size());
  for (const KeyValue& kv : *kvs) {
    if (kv.key == "seq" || kv.key == "type" || kv.key == "action" || kv.key == "event") continue;
    if (kv.key.starts_with("x_")) return std::nullopt;  // skipped there, whatever it holds
    const std::optional<FieldKey> field = field_key_from_name(kv.key);
    if (!field || find_field_use(*kind, *field) == nullptr) return std::nullopt;
    std::optional<FieldValue> v = value(field_spec(*field), kv.value);
    if (!v) return std::nullopt;
    event.fields.push_back({*field, std::move(*v)});
  }
  if (!header.observes_real_run()) {
    for (const EventFieldUse& u : event_fields_of(*kind)) {
      if (u.required && !find(field_key_name(u.field))) return std::nullopt;
    }
  }
  return event;
}

}  // namespace fast_event_line

struct FastEventReader::Impl {
  simdjson::dom::parser parser;
};

FastEventReader::FastEventReader() : impl_(std::make_unique<Impl>()) {}
FastEventReader::~FastEventReader() = default;

std::size_t FastEventReader::padding() {
  return simdjson::SIMDJSON_PADDING;
}

std::optional<Event> FastEventReader::read(std::string_view line, std::uint64_t seq,
                                           std::size_t action, const TraceHeader& header) {
  return fast_event_line::read_event(impl_->parser, line, seq, action, header);
}

}  // namespace capsim
