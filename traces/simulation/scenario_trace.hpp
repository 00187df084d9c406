// Recording: the trace of a built-in scenario, as `capsim record` writes it.
//
// The scenario's program runs in a fresh World with its own config and seed,
// and every event is kept (a capsim trace observes every kind). The bytes
// depend only on the scenario and the build: data/corpus/ holds one file per
// scenario, and a test records them afresh and compares the bytes.
#pragma once

#include <string>
#include <vector>

#include "model/replay_mirror.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim {

TraceHeader scenario_header(const ProgramScenario& scenario);
// The lines of the scenario's trace. Fails when the scenario's program is bad
// input (a bug in capsim) or uses a negative-control fault.
Result<std::vector<std::string>> trace_scenario(const ProgramScenario& scenario);

// The same, with `mirror` (the CUDA reference backend) running every graph
// beside the model: the trace's producer is `capsim-cuda` and a `device`
// event after each record and replay carries what the mirror read back (its
// baked pointers, the digest of what the graph wrote, the driver's buffer
// ids). Fails when the mirror disagrees with the model.
Result<std::vector<std::string>> trace_scenario_on(const ProgramScenario& scenario,
                                                   ReplayMirror& mirror);

}  // namespace capsim
