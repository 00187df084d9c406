// The table of decisions (see decisions.hpp), expanded from decisions.def.
#include "sim/core/decisions.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "model/check.hpp"
#include "sim/core/events.hpp"

namespace capsim {

namespace {

constexpr DecisionInfo kDecisions[] = {
#define CAPSIM_DECISION(e, kind, key, title, rule, fix) \
  {Decision::e, EventKind::kind, key, title, rule, fix},
#include "sim/core/decisions.def"
#undef CAPSIM_DECISION
};

// The table is in enum order, so a Decision indexes it.
constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < std::size(kDecisions); ++i) {
    if (static_cast<std::size_t>(kDecisions[i].decision) != i) return false;
  }
  return true;
}
static_assert(in_enum_order());

}  // namespace

std::span<const DecisionInfo> decisions() {
  return kDecisions;
}

const DecisionInfo& decision_info(Decision d) {
  const auto i = static_cast<std::size_t>(d);
  CAPSIM_CHECK(i < std::size(kDecisions), "a Decision of the table");
  return kDecisions[i];
}

std::string decision_key(Decision d) {
  return std::string(decision_info(d).key);
}

std::optional<Decision> find_decision(EventKind kind, std::string_view key) {
  // Sorted once by (kind, key): a lookup per event read, not a scan of the table.
  using Entry = std::pair<std::pair<EventKind, std::string_view>, Decision>;
  static const std::vector<Entry> sorted = [] {
    std::vector<Entry> out;
    for (const DecisionInfo& d : kDecisions) out.push_back({{d.kind, d.key}, d.decision});
    std::sort(out.begin(), out.end());
    return out;
  }();
  const std::pair<EventKind, std::string_view> wanted{kind, key};
  const auto it = std::lower_bound(sorted.begin(), sorted.end(), wanted,
                                   [](const Entry& e, const auto& w) { return e.first < w; });
  if (it == sorted.end() || it->first != wanted) return std::nullopt;
  return it->second;
}

std::optional<Decision> decision_of(const Event& e) {
  const auto keyed = [&](FieldKey field, std::string_view absent) {
    return find_decision(e.kind, e.text(field).value_or(absent));
  };
  switch (e.kind) {
    case EventKind::kRecord: return keyed(F::reason, "no_child");
    case EventKind::kSkip:
    case EventKind::kError:
    case EventKind::kWarning: return keyed(F::id, "");
    case EventKind::kEager:
    case EventKind::kCaCacheMiss: return keyed(F::reason, "");
    case EventKind::kCompile:
      if (!e.has(F::recompile)) return std::nullopt;
      return keyed(F::reason, "guard_failure");
    case EventKind::kCopyIn: return Decision::kCopyIn;
    case EventKind::kDemote: return Decision::kDemoteManagedInput;
    case EventKind::kCaGraph: {
      const bool* captured = e.get_if<bool>(F::captured);
      if (captured == nullptr || !*captured) return std::nullopt;
      const std::int64_t* backward = e.get_if<std::int64_t>(F::backward);
      return backward != nullptr && *backward > 0 ? Decision::kCaCaptured
                                                  : Decision::kCaFirstCapture;
    }
    default: return std::nullopt;
  }
}

std::string decision_rule_key(const DecisionInfo& d) {
  std::string out(event_kind_name(d.kind));
  if (!d.key.empty()) out.append(":").append(d.key);
  return out;
}

}  // namespace capsim
