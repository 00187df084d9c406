// Recording: the trace of a built-in scenario, as `capsim record` writes it.
//
// The scenario's program runs in a fresh World with its own config and seed,
// and every event is kept (a capsim trace observes every kind). The bytes
// depend only on the scenario and the build: traces/corpus/ holds one file per
// scenario, and a test records them afresh and compares the bytes.
#pragma once

#include <string>
#include <vector>

#include "sim/scenarios.hpp"
#include "traces/trace_format.hpp"

namespace capsim {

TraceHeader scenario_header(const Scenario& scenario);
// The lines of the scenario's trace. Fails when the scenario's program is bad
// input (a bug in capsim) or uses a negative-control fault.
Result<std::vector<std::string>> record_scenario(const Scenario& scenario);

}  // namespace capsim
