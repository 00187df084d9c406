// How replay compares a recorded event with the event the model predicted.
//
// Two events match when their kinds, action indices and fields are equal,
// fields compared as sets. Two refinements make traces from other producers
// comparable:
//  - a captured graph's `targets` compare in canonical names, plumbing
//    dropped, and its `uses` as the canonical dataflow between those calls
//    (sim/compiled_autograd/fx_target_names.hpp): structurally, for every producer;
//  - a real run (producer `pytorch`) writes the fields it could observe and
//    real pointers. Only the recorded event's fields are compared, and every
//    address (hex fields, and the decimal pointers in PyTorch's message texts)
//    is replaced by its ordinal in order of first appearance, counted
//    separately on each side: what is compared is "the same pointer again"
//    against "a new pointer", never the numbers (docs/fidelity.md);
//  - a captured graph's `fx_nodes` compare line by line, and the first
//    difference names the node: "fx_nodes[17]". An event with `fx_nodes` is
//    compared by them alone; with `structural`, by `targets` and `uses`
//    alone (the fallback a trace opts into, docs/fidelity.md).
// Ordinals are assigned while comparing, in event order and, within an event,
// in the recorded event's field order, so both sides count the same fields.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "sim/compiled_autograd/fx_target_names.hpp"
#include "sim/core/events.hpp"

namespace capsim {

// A ca_graph event's captured calls in canonical form, from its `targets`
// and `uses` (sim/compiled_autograd/fx_target_names.hpp); nullopt when it has no
// targets or a use names no call (replay then compares them as they are).
std::optional<CanonicalCalls> captured_calls(const Event& e);

// Addresses in order of first appearance: the first is #0, a new one #1, ...
class AddressOrder {
 public:
  std::string ordinal(std::uint64_t address);
  // Every decimal number of 10 or more digits (a pointer as PyTorch prints
  // it) in a free text.
  std::string translate_decimal(std::string_view text);

 private:
  std::map<std::uint64_t, std::size_t> seen_;
};

class EventComparison {
 public:
  explicit EventComparison(bool real_run, bool structural = false)
      : real_run_(real_run), structural_(structural) {}
  // The first field where the events differ ("event", "action", a key, or
  // "fx_nodes[i]"), or nullopt when they match.
  std::optional<std::string> first_difference(const Event& predicted, const Event& recorded);
  // For an fx_nodes difference, the two lines ("recorded: ... | predicted:
  // ..."); else empty.
  const std::string& detail() const { return detail_; }

 private:
  // The value as compared: canonical calls, and a real run's addresses as
  // ordinals.
  FieldValue comparable(const Event& e, const EventField& f, AddressOrder& order) const;

  bool real_run_;
  bool structural_;
  std::string detail_;
  AddressOrder model_;
  AddressOrder trace_;
};

}  // namespace capsim
