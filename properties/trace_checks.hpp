// Trace properties as plain checks over one generated program.
//
// The round trip (record, write, read, replay) and the determinism of the
// written bytes, the checks of the catalogue's traces.round-trip and
// determinism.same-seed-same-bytes (which tests/properties/test_catalogue.cpp
// runs). Like cudagraph_checks, each returns nullopt when the property holds,
// else one line.
#pragma once

#include <string>
#include <vector>

#include "properties/cudagraph_checks.hpp"
#include "sim/core/sim_context.hpp"

namespace capsim {

// The trace lines of `generated` run in a World with `options` (the header
// is named `name`), or an error for bad input.
Result<std::vector<std::string>> generated_trace_lines(const GeneratedProgram& generated,
                                                       const WorldOptions& options,
                                                       const std::string& name);

// The trace text of `generated` run in a World with `fault` (none: the sound
// model), or an error for bad input.
Result<std::string> record_generated(const GeneratedProgram& generated, Fault fault);

// The trace recorded from a World with `recorded_with` replays in the sound
// model with no divergence and no invariant violation.
CheckResult check_trace_round_trip(const GeneratedProgram& generated, Fault recorded_with);

// Two recordings of the same program give identical bytes; `vary_seed` (the
// negative control) records the second with another seed.
CheckResult check_trace_bytes_deterministic(const GeneratedProgram& generated,
                                            bool vary_seed = false,
                                            Fault recorded_with = Fault::kNone);

}  // namespace capsim
