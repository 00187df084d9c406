// The check of the `cudagraphs.skips-as-documented.*` properties: every
// compile-time skip decision of a finished World against the skip oracle
// (skip_oracle.hpp), call by call.
#pragma once

#include "properties/cudagraph_checks.hpp"
#include "sim/core/cudagraph_config.hpp"

namespace capsim {

// For each compiled call of `program` (run in `world` under `config`): when
// the oracle says the compile skips with a logged id, the call's action has
// no tree function of that graph, any compile-time `skip` event it has names
// that id, and the call ran eagerly (`eager reason=compile_time_skip`, or an
// E8 under cudagraph_or_error); when it says silent, no skip event and
// `eager reason=silent_skip`; when it says none, neither a compile-time skip
// event nor either eager reason. No other action has a compile-time skip.
CheckResult check_skips_as_documented(const World& world, const Program& program,
                                      const CudagraphConfig& config);

}  // namespace capsim
