// The check of the `cudagraphs.skips-as-documented.s1-runtime`, `.e5` and
// `.e9` properties: every run-time skip decision of a finished World against
// the run-time skip oracle (runtime_skip_oracle.hpp), call by call.
#pragma once

#include "properties/cudagraph_checks.hpp"
#include "properties/runtime_skip_programs.hpp"

namespace capsim {

// For each call of `g` in `program` (run in `world`): when the oracle says a
// logged run-time skip, the call's action has a `skip` event with that id and
// a fid, and runs eagerly with the oracle's reason (or, under
// cudagraph_or_error, raises `error id=E8 where=run` instead); when it says
// silent, the eager run without the event; when it says none (or that g was
// skipped at compile time), none of these. A `demote` event comes exactly
// where the oracle says the managed input is demoted. No other action has a
// run-time skip, an eager run for one, a run-time E8 or a demotion.
CheckResult check_runtime_skips_as_documented(const World& world, const RuntimeProgram& program);

}  // namespace capsim
