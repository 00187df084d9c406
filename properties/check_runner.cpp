// The check runner (see check_runner.hpp).
#include "properties/check_runner.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <exception>
#include <span>

#include "model/digest.hpp"
#include "model/rng.hpp"
#include "properties/catalogue.hpp"
#include "properties/regressions.hpp"

namespace capsim {

namespace {

// A case that throws (RapidCheck's GenerationFailure, a std::bad_alloc) is a
// failure with that text, not a crash of the runner.
CaseResult run_case(const Property& p, std::uint64_t seed, int size, bool control) {
  try {
    return p.run(seed, size, control);
  } catch (const std::exception& e) {
    CaseResult r;
    r.failed = true;
    r.evaluations = 1;
    r.message = fmt::format("exception: {}", e.what());
    return r;
  }
}

bool stop_requested(const CheckHooks& hooks) {
  return hooks.should_stop && hooks.should_stop();
}

// The case indices first, first + step, ... below end.
struct CaseRange {
  std::uint64_t first = 0;
  std::uint64_t step = 1;
  std::uint64_t end = 0;
  std::uint64_t size() const { return first < end ? (end - first + step - 1) / step : 0; }
};

// Runs `p`'s cases in `range` (its control when `control`) until the first
// failure. Returns false when a stop request cut it short.
bool run_cases(const Property& p, const CheckOptions& options, const CaseRange& range, bool control,
               const CheckHooks& hooks, CasesOutcome& out) {
  out.property = &p;
  // The library reads no clock (architecture: determinism); the CLI passes one.
  const double start = hooks.clock ? hooks.clock() : 0.0;
  bool finished = true;
  for (std::uint64_t i = range.first; i < range.end; i += range.step) {
    if (stop_requested(hooks)) {
      finished = false;
      break;
    }
    const std::uint64_t seed = case_seed(options.seed, p.name, i);
    const int size = case_size(i, options.max_size);
    CaseResult r = run_case(p, seed, size, control);
    ++out.cases_run;
    out.evaluations += r.evaluations;
    if (!control) out.probes.add(r.probes);
    if (hooks.on_case) hooks.on_case(p, control, out.cases_run, range.size());
    if (r.failed) {
      out.failed = true;
      out.case_index = i;
      out.case_seed = seed;
      out.size = size;
      out.failure = std::move(r);
      break;
    }
  }
  out.seconds = hooks.clock ? hooks.clock() - start : 0.0;
  return finished;
}

// The limits on options that need no catalogue. Checked before the patterns,
// so that their messages come first.
Status check_option_limits(const CheckOptions& options) {
  if (options.shards == 0 || options.shards > kMaxShards || options.shard >= options.shards) {
    return make_error(fmt::format("--shard {}/{}: needs 0 <= K < N <= {}", options.shard,
                                  options.shards, kMaxShards));
  }
  if (options.cases == 0 || options.cases > kMaxCases) {
    return make_error(fmt::format("--cases {}: needs 1 to {}", options.cases, kMaxCases));
  }
  if (options.max_size < 0 || options.max_size > kMaxMaxSize) {
    return make_error(fmt::format("--max-size {}: needs 0 to {}", options.max_size, kMaxMaxSize));
  }
  return {};
}

// The case indices the properties run, and those the controls run.
struct CaseRanges {
  CaseRange shard;
  CaseRange all;
};

// The ranges for `options`; an error names a --case out of range.
Result<CaseRanges> case_ranges(const CheckOptions& options) {
  const bool one = options.only_case.has_value();
  const std::uint64_t only = options.only_case.value_or(0);
  if (one && only >= kMaxCases) {
    return make_error(fmt::format("--case {}: needs 0 to {}", only, kMaxCases - 1));
  }
  // This shard's cases; controls run over every case index, not only this
  // shard's (each stops at its first catch, so they cost little, and a
  // control must not pass merely because a shard is small).
  const CaseRange shard_cases =
      one ? CaseRange{only, 1, only + 1} : CaseRange{options.shard, options.shards, options.cases};
  const CaseRange all_cases = one ? shard_cases : CaseRange{0, 1, options.cases};
  return CaseRanges{shard_cases, all_cases};
}

// Replays one saved counterexample of `p`. A regression that throws is a
// failure with that text, as a case is (run_case).
RegressionOutcome replay_regression(const Property& p, const Regression& r) {
  RegressionOutcome out;
  out.property = &p;
  out.file = r.file;
  std::optional<std::string> failure;
  try {
    failure = p.regression(r);
  } catch (const std::exception& e) {
    failure = fmt::format("exception: {}", e.what());
  }
  out.failed = failure.has_value();
  out.message = failure.value_or("");
  return out;
}

// Replays the saved counterexamples of the selected properties into
// `report`, setting `interrupted` when a stop request cuts it short.
Status replay_regressions(std::span<const Property> catalogue,
                          const std::vector<const Property*>& selected, const CheckOptions& options,
                          const CheckHooks& hooks, CheckReport& report) {
  CAPSIM_TRY_ASSIGN(const std::vector<Regression> saved,
                    load_regressions(options.regressions_dir, catalogue));
  for (const Regression& r : saved) {
    const auto it = std::find_if(selected.begin(), selected.end(),
                                 [&r](const Property* p) { return p->name == r.property; });
    if (it == selected.end()) continue;
    if (stop_requested(hooks)) {
      report.interrupted = true;
      return {};
    }
    RegressionOutcome out = replay_regression(**it, r);
    if (hooks.on_regression) hooks.on_regression(out);
    report.regressions.push_back(std::move(out));
  }
  return {};
}

// Runs the cases in `range` of each selected property (its control when
// `control`), appending each outcome to `outcomes` after `on_outcome` sees
// it. Returns false when a stop request cut it short; the property cut short
// is left out: it did not run.
template <typename Outcome>
bool run_each_property(const std::vector<const Property*>& selected, const CheckOptions& options,
                       const CaseRange& range, bool control, const CheckHooks& hooks,
                       const std::function<void(const Outcome&)>& on_outcome,
                       std::vector<Outcome>& outcomes) {
  for (const Property* p : selected) {
    Outcome out;
    if constexpr (std::is_same_v<Outcome, ControlOutcome>) {
      if (control && !p->control_applies) {
        out.property = p;
        out.not_applicable = true;
        if (on_outcome) on_outcome(out);
        outcomes.push_back(std::move(out));
        continue;
      }
    }
    if (!run_cases(*p, options, range, control, hooks, out)) return false;
    if (on_outcome) on_outcome(out);
    outcomes.push_back(std::move(out));
  }
  return true;
}

}  // namespace

bool CheckReport::ok() const {
  if (interrupted) return false;
  for (const RegressionOutcome& r : regressions) {
    if (r.failed) return false;
  }
  for (const PropertyOutcome& p : properties) {
    if (p.failed) return false;
  }
  for (const ControlOutcome& c : controls) {
    if (!c.caught() && !c.not_applicable) return false;
  }
  return true;
}

ProbeCounts CheckReport::probes() const {
  ProbeCounts all;
  for (const PropertyOutcome& p : properties) all.add(p.probes);
  return all;
}

std::vector<std::string_view> CheckReport::missed_probes() const {
  const ProbeCounts all = probes();
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < kProbeCount; ++i) {
    if (!kProbes[i].rare && all.cases[i] == 0) out.push_back(kProbes[i].name);
  }
  return out;
}

Result<std::vector<const Property*>> select_properties(const std::vector<std::string>& patterns) {
  return select_properties(property_catalogue(), patterns);
}

Result<std::vector<const Property*>> select_properties(std::span<const Property> catalogue,
                                                       const std::vector<std::string>& patterns) {
  std::vector<const Property*> out;
  for (const std::string& pattern : patterns) {
    bool matched = false;
    for (const Property& p : catalogue) {
      matched |= ::fnmatch(pattern.c_str(), std::string(p.name).c_str(), 0) == 0;
    }
    if (!matched) {
      return make_error(
          fmt::format("--property '{}': matches no property (see capsim check --list)", pattern));
    }
  }
  for (const Property& p : catalogue) {
    bool selected = patterns.empty();
    for (const std::string& pattern : patterns) {
      selected |= ::fnmatch(pattern.c_str(), std::string(p.name).c_str(), 0) == 0;
    }
    if (selected) out.push_back(&p);
  }
  return out;
}

std::uint64_t case_seed(std::uint64_t seed, std::string_view property, std::uint64_t index) {
  // splitmix64 advances its state by a fixed odd constant per draw, so
  // starting `index` steps further is the index-th draw of one stream per
  // (seed, property).
  const std::uint64_t stream = fnv1a64(std::as_bytes(std::span(property)), seed);
  return Rng(stream + index * 0x9e3779b97f4a7c15ull).next();
}

int case_size(std::uint64_t index, int max_size) {
  CAPSIM_CHECK(max_size >= 0);
  return static_cast<int>(index % (static_cast<std::uint64_t>(max_size) + 1));
}

Result<CheckReport> run_check(const CheckOptions& options, const CheckHooks& hooks) {
  return run_check(property_catalogue(), options, hooks);
}

Result<CheckReport> run_check(std::span<const Property> catalogue, const CheckOptions& options,
                              const CheckHooks& hooks) {
  CAPSIM_TRY(check_option_limits(options));
  CAPSIM_TRY_ASSIGN(const std::vector<const Property*> selected,
                    select_properties(catalogue, options.patterns));
  CheckReport report;
  report.options = options;
  CAPSIM_TRY_ASSIGN(const CaseRanges ranges, case_ranges(options));

  if (!options.regressions_dir.empty() && options.properties) {
    CAPSIM_TRY(replay_regressions(catalogue, selected, options, hooks, report));
    if (report.interrupted) return report;
  }
  if (options.properties && !run_each_property(selected, options, ranges.shard, false, hooks,
                                               hooks.on_property, report.properties)) {
    report.interrupted = true;
    return report;
  }
  if (options.controls && !run_each_property(selected, options, ranges.all, true, hooks,
                                             hooks.on_control, report.controls)) {
    report.interrupted = true;
    return report;
  }
  return report;
}

}  // namespace capsim
