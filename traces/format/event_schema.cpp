// The JSON printer and reader of event fields (see event_schema.hpp): one case per field type
// each way, every range checked on write as on read, and a fast text printer that writes what
// dump() would.
#include "traces/format/event_schema.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace capsim {

namespace {

Result<std::int64_t> bounded(std::int64_t v, IntRange range, const std::string& path) {
  if (range.contains(v)) return v;
  if (v < range.min) {
    return field_error(
        path, fmt::format("{} is below the limit of {} (docs/trace-format.md §8)", v, range.min));
  }
  if (v > range.max) {
    return field_error(
        path, fmt::format("{} is above the limit of {} (docs/trace-format.md §8)", v, range.max));
  }
  return v;
}

// An integer within the field's range; the message names the limit.
Result<std::int64_t> bounded_integer(const Json& v, const std::string& path, IntRange range) {
  CAPSIM_TRY_ASSIGN(const std::int64_t i, json_integer(v, path));
  return bounded(i, range, path);
}

Result<IntList> bounded_list(const Json& v, const std::string& path, IntRange range) {
  if (!v.is_array()) return field_error(path, "expected an array of integers");
  IntList out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    CAPSIM_TRY_ASSIGN(const std::int64_t x,
                      bounded_integer(v[i], fmt::format("{}[{}]", path, i), range));
    out.push_back(x);
  }
  return out;
}

Result<Digest> json_digest(const Json& v, const std::string& path) {
  const bool ok =
      v.is_string() && v.get_ref<const std::string&>().size() == 16 &&
      std::all_of(v.get_ref<const std::string&>().begin(), v.get_ref<const std::string&>().end(),
                  [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (!ok) return field_error(path, "expected a digest of 16 lower-case hex digits");
  std::uint64_t d = 0;
  for (const char c : v.get_ref<const std::string&>()) {
    d = d * 16 + static_cast<std::uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return Digest{d};
}

Result<FieldValue> json_to_value(const FieldSpec& spec, const Json& v, const std::string& path) {
  switch (spec.type) {
    case FieldType::kInt: {
      CAPSIM_TRY_ASSIGN(const std::int64_t i, bounded_integer(v, path, spec.range));
      return FieldValue(i);
    }
    case FieldType::kIntOrNone: {
      if (v.is_null()) return FieldValue(IntOrNone{});
      CAPSIM_TRY_ASSIGN(const std::int64_t i, bounded_integer(v, path, spec.range));
      return FieldValue(IntOrNone{i});
    }
    case FieldType::kBool:
      if (!v.is_boolean()) return field_error(path, "expected a boolean");
      return FieldValue(v.get<bool>());
    case FieldType::kText:
      if (!v.is_string()) return field_error(path, "expected a string");
      return FieldValue(v.get<std::string>());
    case FieldType::kIntList: {
      CAPSIM_TRY_ASSIGN(IntList l, bounded_list(v, path, spec.range));
      return FieldValue(std::move(l));
    }
    case FieldType::kAddress: {
      CAPSIM_TRY_ASSIGN(const Address a, json_address(v, path));
      return FieldValue(DevicePtr{a});
    }
    case FieldType::kAddressList: {
      if (!v.is_array()) return field_error(path, "expected an array of hex address strings");
      AddressList addresses;
      for (std::size_t i = 0; i < v.size(); ++i) {
        CAPSIM_TRY_ASSIGN(const Address a, json_address(v[i], fmt::format("{}[{}]", path, i)));
        addresses.push_back(a);
      }
      return FieldValue(std::move(addresses));
    }
    case FieldType::kDigest: {
      CAPSIM_TRY_ASSIGN(const Digest d, json_digest(v, path));
      return FieldValue(d);
    }
    case FieldType::kTextList: {
      if (!v.is_array()) return field_error(path, "expected an array of strings");
      TextList items;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) {
          return field_error(fmt::format("{}[{}]", path, i), "expected a string");
        }
        items.push_back(v[i].get<std::string>());
      }
      return FieldValue(std::move(items));
    }
    case FieldType::kIntLists: {
      if (!v.is_array()) return field_error(path, "expected an array of integer arrays");
      IntLists lists;
      for (std::size_t i = 0; i < v.size(); ++i) {
        CAPSIM_TRY_ASSIGN(IntList l,
                          bounded_list(v[i], fmt::format("{}[{}]", path, i), spec.range));
        lists.push_back(std::move(l));
      }
      return FieldValue(std::move(lists));
    }
  }
  return field_error(path, "unsupported field type");
}

// The JSON printer: one case per type, as json_to_value reads it back.
struct JsonPrinter {
  Json operator()(std::int64_t v) const { return v; }
  Json operator()(const IntOrNone& v) const { return v.value ? Json(*v.value) : Json(nullptr); }
  Json operator()(bool v) const { return v; }
  Json operator()(const std::string& v) const { return v; }
  Json operator()(const IntList& v) const { return Json(v); }
  Json operator()(const DevicePtr& v) const { return hex(v.value); }
  Json operator()(const AddressList& v) const {
    Json out = Json::array();
    for (const Address a : v) out.push_back(hex(a));
    return out;
  }
  Json operator()(const TextList& v) const { return Json(v); }
  Json operator()(const IntLists& v) const {
    Json out = Json::array();
    for (const IntList& l : v) out.push_back(Json(l));
    return out;
  }
  Json operator()(const Digest& v) const { return format_value(FieldValue(v)); }
};

// The text printer: the same values as JsonPrinter, written as dump() does.
struct TextPrinter {
  std::string& out;
  void number(std::int64_t v) const { fmt::format_to(std::back_inserter(out), "{}", v); }
  void list(const IntList& v) const {
    out += '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += ',';
      number(v[i]);
    }
    out += ']';
  }
  template <typename T, typename Each>
  void items(const std::vector<T>& v, Each each) const {
    out += '[';
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += ',';
      each(v[i]);
    }
    out += ']';
  }
  void operator()(std::int64_t v) const { number(v); }
  void operator()(const IntOrNone& v) const { v.value ? number(*v.value) : void(out += "null"); }
  void operator()(bool v) const { out += v ? "true" : "false"; }
  void operator()(const std::string& v) const { append_json_string(out, v); }
  void operator()(const IntList& v) const { list(v); }
  void operator()(const DevicePtr& v) const { append_json_string(out, hex(v.value)); }
  void operator()(const AddressList& v) const {
    items(v, [&](Address a) { append_json_string(out, hex(a)); });
  }
  void operator()(const TextList& v) const {
    items(v, [&](const std::string& t) { append_json_string(out, t); });
  }
  void operator()(const IntLists& v) const {
    items(v, [&](const IntList& l) { list(l); });
  }
  void operator()(const Digest& v) const { append_json_string(out, format_value(FieldValue(v))); }
};

// The writer's side of the limits: capsim never writes what a reader refuses.
Status check_ranges(const Event& event, const EventField& f) {
  const FieldSpec& spec = field_spec(f.key);
  const auto check = [&](std::int64_t v) -> Status {
    if (spec.range.contains(v)) return {};
    return make_error(fmt::format("event '{}' field '{}': {} is outside [{}, {}]",
                                  event_kind_name(event.kind), spec.key, v, spec.range.min,
                                  spec.range.max));
  };
  if (const auto* i = f.value.get_if<std::int64_t>()) return check(*i);
  if (const auto* o = f.value.get_if<IntOrNone>(); o != nullptr && o->value) {
    return check(*o->value);
  }
  if (const auto* l = f.value.get_if<IntList>()) {
    for (const std::int64_t v : *l) CAPSIM_TRY(check(v));
  }
  if (const auto* ls = f.value.get_if<IntLists>()) {
    for (const IntList& l : *ls) {
      for (const std::int64_t v : l) CAPSIM_TRY(check(v));
    }
  }
  return {};
}

bool is_envelope_key(std::string_view key) {
  return std::find(std::begin(kEventEnvelopeKeys), std::end(kEventEnvelopeKeys), key) !=
         std::end(kEventEnvelopeKeys);
}

}  // namespace

Result<Json> event_fields_to_json(const Event& event) {
  Json out = Json::object();
  for (const EventField& f : event.fields) {
    const FieldSpec& spec = field_spec(f.key);
    CAPSIM_CHECK(find_field_use(event.kind, f.key) != nullptr, "events were checked when emitted");
    if (spec.extension()) {
      out[std::string(spec.key)] = format_value(f.value);
      continue;
    }
    CAPSIM_TRY(check_ranges(event, f));
    out[std::string(spec.key)] = std::visit(JsonPrinter{}, f.value.storage());
  }
  return out;
}

Status append_event_fields(JsonObjectText& object, const Event& event) {
  for (const EventField& f : event.fields) {
    const FieldSpec& spec = field_spec(f.key);
    CAPSIM_CHECK(find_field_use(event.kind, f.key) != nullptr, "events were checked when emitted");
    if (spec.extension()) {
      append_json_string(object.key(spec.key), format_value(f.value));
      continue;
    }
    CAPSIM_TRY(check_ranges(event, f));
    std::visit(TextPrinter{object.key(spec.key)}, f.value.storage());
  }
  return {};
}

namespace {

// A captured graph's `uses` are indices into its `targets`: one past them
// names no call, and is refused as the line is read, whatever replay then
// compares (by fx_nodes, the default, `uses` would not be looked at).
Status check_uses_refer_to_targets(const std::vector<EventField>& fields) {
  const TextList* targets = nullptr;
  const IntLists* uses = nullptr;
  for (const EventField& f : fields) {
    if (f.key == F::targets) targets = f.value.get_if<TextList>();
    if (f.key == F::uses) uses = f.value.get_if<IntLists>();
  }
  if (uses == nullptr) return {};
  if (targets == nullptr)
    return field_error("uses", "given without 'targets', whose calls it indexes");
  if (uses->size() > targets->size()) {
    return field_error("uses", fmt::format("{} lists for {} targets (one per call)", uses->size(),
                                           targets->size()));
  }
  for (std::size_t i = 0; i < uses->size(); ++i) {
    for (std::size_t k = 0; k < (*uses)[i].size(); ++k) {
      const std::int64_t to = (*uses)[i][k];
      if (to < 0 || static_cast<std::uint64_t>(to) >= targets->size()) {
        return field_error(
            fmt::format("uses[{}][{}]", i, k),
            fmt::format("{} is not an index into 'targets' ({} calls)", to, targets->size()));
      }
    }
  }
  return {};
}

}  // namespace

Result<std::vector<EventField>> event_fields_from_json(EventKind kind, const Json& line,
                                                       bool partial) {
  std::vector<EventField> fields;
  for (auto it = line.begin(); it != line.end(); ++it) {
    const std::string& key = it.key();
    if (is_envelope_key(key) || key.starts_with("x_")) continue;
    const std::optional<FieldKey> field = field_key_from_name(key);
    if (!field || find_field_use(kind, *field) == nullptr) {
      return field_error(key, fmt::format("unknown field for event '{}' (extensions must start "
                                          "with \"x_\")",
                                          event_kind_name(kind)));
    }
    CAPSIM_TRY_ASSIGN(FieldValue value, json_to_value(field_spec(*field), *it, key));
    fields.push_back({*field, std::move(value)});
  }
  for (const EventFieldUse& u : event_fields_of(kind)) {
    const std::string_view name = field_key_name(u.field);
    if (u.required && !partial && !line.contains(name)) {
      return field_error(name,
                         fmt::format("missing (event '{}' requires it)", event_kind_name(kind)));
    }
  }
  CAPSIM_TRY(check_uses_refer_to_targets(fields));
  return fields;
}

}  // namespace capsim
