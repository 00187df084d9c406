// Property: one entry of the catalogue that `capsim check` runs.
//
// A property is a statement about the model that must hold for every input a
// generator can make, plus the negative control that proves it can fail: the
// same check against a deliberately broken model, which must be caught: one
// row of CAPSIM_FAULTS (model/fault.hpp), named by the property's `fault`. The runner
// (check_runner.hpp) owns seeds, sizes, shards and case counts; a property
// owns its generator, its check and how a counterexample reads. Generation and
// shrinking are RapidCheck's: `make_case` draws an rc::Shrinkable from a case
// seed and, on a failure, walks its shrinks greedily, as RapidCheck's own
// runner does, but one case at a time, so that a case is a pure function of
// (case seed, size) whatever the shard.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/fault.hpp"
#include "model/result.hpp"
#include "properties/probes.hpp"

namespace capsim {

// The limit on shrink evaluations for one failing case: a shrink that has not
// converged by then reports what it has (and says so). 2000 was too tight: the
// pool-accounting control under seed 81024495944315 (commit 49b0fc4's CI)
// converges at 2,168; an evaluation costs well under a millisecond.
inline constexpr std::uint32_t kMaxShrinkEvaluations = 5000;

// What one case found: nothing, or a failure with its shrunk counterexample.
struct CaseResult {
  bool failed = false;
  std::string message;         // the check's line for the shrunk input
  std::string counterexample;  // the shrunk input, readable (a program)
  std::uint32_t shrink_steps = 0;
  std::uint32_t evaluations = 0;  // checks run for this case, shrinking included
  bool shrink_cut = false;        // kMaxShrinkEvaluations was reached
  // The shrunk input's run as trace lines (docs/trace-format.md), for
  // `--save-failures`; empty when the property's inputs are not programs.
  std::function<Result<std::vector<std::string>>()> trace;
  // The coverage probes the case's first (unshrunk) input hit; sound runs only.
  ProbeSet probes;
};

// One case: the input drawn from `case_seed` at `size`, checked against the
// sound model, or against the property's broken one when `control` is set.
using CaseFunction = std::function<CaseResult(std::uint64_t case_seed, int size, bool control)>;

struct Regression;

// A saved counterexample (regressions.hpp), checked again in the sound model:
// nullopt when the property now holds for it, else one line.
using RegressionCheck = std::function<std::optional<std::string>(const Regression&)>;

struct Property {
  std::string_view name;       // stable: "cudagraphs.replay-equals-eager"
  std::string_view statement;  // one line
  std::string_view spec;       // where it comes from: "cudagraph-trees.md §10.6"
  std::string_view generator;  // what the inputs are
  std::string_view control;    // the broken model that must make it fail, in words
  Fault fault = Fault::kNone;  // that model's row of CAPSIM_FAULTS
  // What only some releases do that the control breaks ("" for every
  // release), and whether the case setting's pinned profile has it: a
  // control that cannot fail under `--torch P` is reported not applicable.
  std::string_view control_needs = {};
  bool control_applies = true;
  CaseFunction run = {};
  // Empty for properties whose inputs are not programs.
  RegressionCheck regression = {};
};

// A check: nullopt when the property holds for `input`, else one line.
template <typename T>
using PropertyCheck = std::function<std::optional<std::string>(const T& input, bool control)>;
// The same, which also reports the coverage probes its run hit into `probes`
// when that is not null (the first evaluation of a sound case only).
template <typename T>
using ProbedCheck =
    std::function<std::optional<std::string>(const T& input, bool control, ProbeSet* probes)>;

// The run of an input as trace lines, against the sound model or, for a
// control, the broken one.
template <typename T>
using TraceOf = std::function<Result<std::vector<std::string>>(const T& input, bool control)>;

// Binds a RapidCheck generator, a check, a printer and (optionally) a trace
// writer into a CaseFunction.
template <typename T>
CaseFunction make_probed_case(rc::Gen<T> gen, ProbedCheck<T> probed,
                              std::function<std::string(const T&)> describe,
                              TraceOf<T> trace_of = {}) {
  return [gen = std::move(gen), probed = std::move(probed), describe = std::move(describe),
          trace_of = std::move(trace_of)](std::uint64_t case_seed, int size, bool control) {
    CaseResult result;
    rc::Shrinkable<T> current = gen(rc::Random(case_seed), size);
    ++result.evaluations;
    std::optional<std::string> failure =
        probed(current.value(), control, control ? nullptr : &result.probes);
    if (!failure) return result;
    auto check = [&probed](const T& input, bool c) { return probed(input, c, nullptr); };
    result.failed = true;
    // Greedy: take the first shrink that still fails, and start again from
    // it, until no shrink fails (a local minimum) or the budget is spent.
    for (bool progressed = true; progressed;) {
      progressed = false;
      rc::Seq<rc::Shrinkable<T>> shrinks = current.shrinks();
      while (rc::Maybe<rc::Shrinkable<T>> next = shrinks.next()) {
        if (result.evaluations >= kMaxShrinkEvaluations) {
          result.shrink_cut = true;
          break;
        }
        ++result.evaluations;
        std::optional<std::string> f = check(next->value(), control);
        if (!f) continue;
        current = std::move(*next);
        failure = std::move(f);
        ++result.shrink_steps;
        progressed = true;
        break;
      }
    }
    result.message = std::move(*failure);
    T shrunk = current.value();
    result.counterexample = describe(shrunk);
    if (trace_of) {
      result.trace = [trace_of, shrunk = std::move(shrunk), control] {
        return trace_of(shrunk, control);
      };
    }
    return result;
  };
}

// The same for a check that reports no probes.
template <typename T>
CaseFunction make_case(rc::Gen<T> gen, PropertyCheck<T> check,
                       std::function<std::string(const T&)> describe, TraceOf<T> trace_of = {}) {
  return make_probed_case<T>(
      std::move(gen),
      [check = std::move(check)](const T& input, bool control, ProbeSet*) {
        return check(input, control);
      },
      std::move(describe), std::move(trace_of));
}

}  // namespace capsim
