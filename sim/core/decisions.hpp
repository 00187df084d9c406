// The model's decisions by name: each id or reason that an event carries and
// `capsim explain` explains, from the one table of sim/core/decisions.def.
//
// Emitters name a Decision (`decision_key(Decision::kSkipMutatedInputs)`
// writes "S1"), never a string of their own, so an id cannot drift from its
// rule; explain, its tests and `capsim version --decisions --json` (which
// the recorder reads) list the table.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "sim/core/event_kinds.hpp"

namespace capsim {

enum class Decision : std::uint8_t {
#define CAPSIM_DECISION(e, kind, key, title, rule, fix) e,
#include "sim/core/decisions.def"
#undef CAPSIM_DECISION
};

struct DecisionInfo {
  Decision decision;
  EventKind kind;
  std::string_view key;  // the event's id or reason; "" when the kind says it all
  std::string_view title;
  std::string_view rule;
  std::string_view fix;  // "" when nothing needs fixing
};

// Every decision, in the table's order.
std::span<const DecisionInfo> decisions();
const DecisionInfo& decision_info(Decision d);
// The id or reason an emitter writes, as a field value.
std::string decision_key(Decision d);
// explain's name of the decision: "kind:key", or the kind alone
// ("error:E1", "record:no_child", "copy_in").
std::string decision_rule_key(const DecisionInfo& d);

}  // namespace capsim
