// Replay's comparison of a recorded event with the predicted one (see event_compare.hpp):
// addresses as ordinals of first appearance, captured graphs by canonical calls or node lines,
// and the first difference in words.
#include "traces/simulation/event_compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <vector>

#include "sim/compiled_autograd/fx_target_names.hpp"

namespace capsim {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A pointer as PyTorch prints it in a message: at least this many digits.
constexpr std::size_t kMinDecimalPointerDigits = 10;

}  // namespace

std::string AddressOrder::ordinal(std::uint64_t address) {
  const auto [it, fresh] = seen_.emplace(address, seen_.size());
  (void)fresh;
  return "#" + std::to_string(it->second);
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
  const TextList* targets = e.get_if<TextList>(F::targets);
  if (targets == nullptr) return std::nullopt;
  std::vector<std::vector<std::uint32_t>> uses;
  if (const IntLists* u = e.get_if<IntLists>(F::uses)) {
    for (const IntList& list : *u) {
      std::vector<std::uint32_t> refs;
      for (const std::int64_t i : list) {
        if (i < 0 || static_cast<std::uint64_t>(i) >= targets->size()) return std::nullopt;
        refs.push_back(static_cast<std::uint32_t>(i));
      }
      uses.push_back(std::move(refs));
    }
  }
  return canonical_calls(*targets, uses);
}

FieldValue EventComparison::comparable(const Event& e, const EventField& f,
                                       AddressOrder& order) const {
  if (f.key == F::targets || f.key == F::uses) {
    std::optional<CanonicalCalls> calls = captured_calls(e);
    if (!calls) return f.value;
    if (f.key == F::targets) return FieldValue(std::move(calls->targets));
    return FieldValue(int_lists(calls->uses));
  }
  if (!real_run_) return f.value;
  if (const DevicePtr* p = f.value.get_if<DevicePtr>()) return FieldValue(order.ordinal(p->value));
  if (const AddressList* list = f.value.get_if<AddressList>()) {
    TextList ordinals;
    for (const Address a : *list) ordinals.push_back(order.ordinal(a));
    return FieldValue(std::move(ordinals));
  }
  if (f.key == F::message)
    return FieldValue(order.translate_decimal(e.get<std::string>(F::message)));
  return f.value;
}

namespace {

// The first line where two node lists part, as "fx_nodes[i]", with both lines.
std::string node_difference(const TextList& predicted, const TextList& recorded,
                            std::string& detail) {
  std::size_t i = 0;
  while (i < predicted.size() && i < recorded.size() && predicted[i] == recorded[i]) ++i;
  const auto line = [i](const TextList& l) {
    return i < l.size() ? l[i] : std::string("(no node)");
  };
  detail = fmt::format("recorded: {} | predicted: {}", line(recorded), line(predicted));
  return fmt::format("fx_nodes[{}]", i);
}

}  // namespace

std::optional<std::string> EventComparison::first_difference(const Event& predicted,
                                                             const Event& recorded) {
  detail_.clear();
  if (predicted.kind != recorded.kind) return std::string("event");
  if (predicted.action != recorded.action) return std::string("action");
  // The common case of capsim's own traces: the same fields in the same
  // order. Equal values compare equal in canonical form too, and without a
  // real run no address becomes an ordinal, so nothing below could differ;
  // an extension field, which the model never predicts, takes the long way.
  if (!real_run_ && predicted.fields == recorded.fields &&
      std::none_of(recorded.fields.begin(), recorded.fields.end(),
                   [](const EventField& f) { return field_spec(f.key).extension(); })) {
    return std::nullopt;
  }
  // By key name, so that the first field left over is the same as ever.
  std::map<std::string_view, const EventField*> model;
  for (const EventField& f : predicted.fields) {
    if (!field_spec(f.key).extension()) model[field_key_name(f.key)] = &f;
  }
  // Node for node where the trace has the nodes, unless structural: then
  // the canonical calls, as for traces recorded before fx_nodes existed.
  const bool by_nodes = !structural_ && recorded.get_if<TextList>(F::fx_nodes) != nullptr;
  // A ca_graph's reason is the recorder's reading of PyTorch's cache-miss
  // line; the model says why it missed in its own ca_cache_miss instead.
  const bool observed_reason = recorded.kind == EventKind::kCaGraph;
  const auto skipped = [&](FieldKey k) {
    if (observed_reason && k == F::reason) return true;
    return by_nodes ? (k == F::targets || k == F::uses) : (structural_ && k == F::fx_nodes);
  };
  for (const FieldKey k : {F::targets, F::uses, F::fx_nodes}) {
    if (skipped(k)) model.erase(field_key_name(k));
  }
  for (const EventField& f : recorded.fields) {
    if (skipped(f.key)) continue;
    const std::string_view key = field_key_name(f.key);
    auto it = model.find(key);
    if (it == model.end()) return std::string(key);
    if (comparable(predicted, *it->second, model_) != comparable(recorded, f, trace_)) {
      const TextList* model_nodes = it->second->value.get_if<TextList>();
      const TextList* trace_nodes = f.value.get_if<TextList>();
      if (f.key == F::fx_nodes && model_nodes != nullptr && trace_nodes != nullptr) {
        return node_difference(*model_nodes, *trace_nodes, detail_);
      }
      return std::string(key);
    }
    model.erase(it);
  }
  // A real run compares what it observed; capsim's own traces every field.
  if (!real_run_ && !model.empty()) return std::string(model.begin()->first);
  return std::nullopt;
}

}  // namespace capsim
