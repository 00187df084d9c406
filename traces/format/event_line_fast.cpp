// The fast path's event payloads (line_fast.hpp): each field read into its
// typed value by event_schema's rules. Every function here returns nullopt
// where the general reader would do anything but read the same event: it
// never decides an error.
#include <limits>

#include "traces/format/event_schema.hpp"
#include "traces/format/fast_json.hpp"

namespace capsim::fast_line {
namespace {

// Event lists have no length limit of their own (the line's does).
constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

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
      if (auto l = list<std::int64_t>(e, kUnbounded,
                                      [&](element x) { return bounded(x, spec.range); })) {
        return FieldValue(std::move(*l));
      }
      return std::nullopt;
    case FieldType::kAddress:
      if (auto a = address(e)) return FieldValue(DevicePtr{*a});
      return std::nullopt;
    case FieldType::kAddressList:
      if (auto l = list<Address>(e, kUnbounded, address)) return FieldValue(std::move(*l));
      return std::nullopt;
    case FieldType::kTextList: {
      auto read = [](element x) -> std::optional<std::string> {
        if (auto s = text(x)) return std::string(*s);
        return std::nullopt;
      };
      if (auto l = list<std::string>(e, kUnbounded, read)) return FieldValue(std::move(*l));
      return std::nullopt;
    }
    case FieldType::kIntLists:
    case FieldType::kDigest: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Event> read_event(Members& m, EventKind kind, std::size_t action, bool real_run) {
  Event event;
  event.kind = kind;
  event.action = static_cast<std::uint32_t>(action);
  event.fields.reserve(m.size());
  const EventFieldMasks& masks = event_field_masks(kind);
  FieldMask seen;
  for (std::size_t i = 0; i < m.size(); ++i) {
    const KeyValue& kv = m.at(i);
    if (kv.key == "seq" || kv.key == "type" || kv.key == "action" || kv.key == "event") continue;
    if (kv.key.starts_with("x_")) return std::nullopt;  // skipped there, whatever it holds
    const std::optional<FieldKey> field = field_key_from_name(kv.key);
    if (!field || !masks.allowed.test(*field)) return std::nullopt;
    std::optional<FieldValue> v = value(field_spec(*field), m.take_at(i));
    if (!v) return std::nullopt;
    seen.set(*field);
    event.fields.push_back({*field, std::move(*v)});
  }
  // Every field of the line is in `seen` (the envelope's are not fields).
  if (!real_run && !seen.contains(masks.required)) return std::nullopt;
  if (!m.all_taken()) return std::nullopt;
  return event;
}

}  // namespace capsim::fast_line
