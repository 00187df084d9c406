// `capsim check --jobs N`: the same check in N forked worker processes.
//
// Threads cannot run properties side by side: RapidCheck keeps its implicit
// parameters in plain statics (rapidcheck/detail/ImplicitParam.hpp). So each
// worker is a fork that runs the selected properties whose position modulo N
// is its own (their regressions, cases and controls, exactly as one process
// would run them: a case is a function of the seed, the property and its
// index), and sends its report back through a pipe as JSON. The parent puts
// the outcomes back in the order one process gives (regressions by file
// name, properties and controls in catalogue order), so the report, the
// text, the JSON and the JUnit file are those of --jobs 1 but for the times.
#pragma once

#include <functional>
#include <span>

#include "model/result.hpp"
#include "properties/check_runner.hpp"

namespace capsim::cli {

inline constexpr int kMaxJobs = 64;

struct JobsOptions {
  int jobs = 1;
  // Each failure's trace is made in its worker (a CaseResult's `trace` is a
  // closure over the worker's memory) when the caller will save failures.
  bool ship_traces = false;
  std::function<bool()> should_stop;  // polled by each worker between cases
  std::function<double()> clock;      // each worker's times
};

// The check of `options` over `catalogue`, in options.jobs workers (2 to
// kMaxJobs). A worker that dies or sends what does not read is an error.
Result<CheckReport> run_check_in_workers(std::span<const Property> catalogue,
                                         const CheckOptions& options, const JobsOptions& jobs);

}  // namespace capsim::cli
