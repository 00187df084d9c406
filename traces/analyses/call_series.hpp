// Call series: each compiled function's calls over a run, in order, with
// what each call copied into placeholders, the cudagraph pool's live bytes
// after it and the decisions it met (a recording, a re-recording, an eager
// fallback, an error). `capsim explain --html` charts them (cli/explain_charts.hpp),
// so that a re-record storm, a copy at every step or a pool that keeps
// growing shows at a glance.
//
// The copies and the decisions are the run's events (observed, for a trace);
// the pool's bytes are capsim's model of the pool (modelled_pool_bytes): no
// trace records them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/saturating_sum.hpp"
#include "traces/analyses/observed_run.hpp"

namespace capsim {

struct CallPoint {
  std::size_t action = 0;
  SaturatingSum copy_bytes;  // copy_in events' bytes, every partition's added up
  // The pool's live and reserved bytes after the call; none past the end of
  // the model's run.
  std::optional<PoolBytes> pool;
  bool recorded = false;    // a first recording at its point of the tree
  bool rerecorded = false;  // a recording where one already was (not no_child)
  bool eager = false;       // an eager fallback instead of a replay
  bool error = false;       // the call raised
};

struct FunctionCalls {
  std::string function;
  std::vector<CallPoint> calls;  // in action order, one per action
};

struct CallSeries {
  std::vector<FunctionCalls> functions;
  // Actions whose error no call owns (a read of an overwritten output, an
  // optimizer's step outside a compiled function), in order.
  std::vector<std::size_t> errors_outside_calls;
};

// The functions in the order the run first calls them. A call is a `call`
// action of a function line, or an action whose events name the function
// (a recorded optimizer step, a compiled backward's graph); a partition's
// events ("f.partition_0") count toward the function whose line it is. An
// error event that names no function goes to every function called in its
// action. A simulation that ended early has no calls past its end.
// `pool`: per action, as modelled_pool_bytes gives.
CallSeries calls_by_function(const ObservedRun& run, std::span<const PoolBytes> pool);

}  // namespace capsim
