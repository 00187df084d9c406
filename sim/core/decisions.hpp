// The model's decisions by name: each id or reason that an event carries and
// `capsim explain` explains, from the one table of sim/core/decisions.def.
//
// Emitters name a Decision (`decision_key(Decision::kSkipMutatedInputs)`
// writes "S1"), never a string of their own, so an id cannot drift from its
// rule; explain, its tests and `capsim version --decisions --json` (which
// the recorder reads) list the table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sim/core/event_kinds.hpp"

namespace capsim {

struct Event;

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

// The decision of `kind` whose id or reason is `key`, or nullopt (a key of a
// newer release, or none of the table's).
std::optional<Decision> find_decision(EventKind kind, std::string_view key);
// The decision an event carries, read once so that its readers switch on the
// enum and compare no strings: its id (skip, error, warning) or reason
// (record, eager, compile, ca_cache_miss) looked up in the table; copy_in and
// demote by their kind. A record without a reason is the first at its point
// (no_child), a recompile without one a guard failure. A ca_graph capture is
// kCaFirstCapture at backward 0 and kCaCaptured after; its finer causes
// (accumulate_grad, distinct_backward) are explain's, which sees the run.
// nullopt for an event that carries no decision (a replay, a warmup, a first
// compile, a cache hit) or an id the table does not have.
std::optional<Decision> decision_of(const Event& e);

}  // namespace capsim
