// The table of decisions (see decisions.hpp), expanded from decisions.def.
#include "sim/core/decisions.hpp"

#include <array>

#include "model/check.hpp"

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

std::string decision_rule_key(const DecisionInfo& d) {
  std::string out(event_kind_name(d.kind));
  if (!d.key.empty()) out.append(":").append(d.key);
  return out;
}

}  // namespace capsim
