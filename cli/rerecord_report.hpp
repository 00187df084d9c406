// What a re-record's report adds for a person: which tensor moved, and which
// action moved it.
//
// A `record` event caused by a pointer mismatch names an input index and two
// addresses (as PyTorch's CheckInvariantStatus does). Someone reading
// `capsim scenario` wants the program's own words: the input is the call's
// argument `bias`, and action 10 (`reassign_data bias`) gave it new storage.
#pragma once

#include <optional>
#include <string>

#include "sim/core/events.hpp"
#include "sim/world/program.hpp"

namespace capsim::cli {

// "input 1 is 'bias'; it last got storage at action 10 (reassign_data)", or
// nothing when `event` is no re-record of a moved input or the program does
// not say (an argument no action binds).
std::optional<std::string> explain_rerecord(const Program& program, const Event& event);

}  // namespace capsim::cli
