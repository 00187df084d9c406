// The runner behind `capsim check`: which properties, which cases, which
// shard, and what each found.
//
// A case is a pure function of (seed, property name, case index): its seed is
// derived from those three and its size from the index alone, so a shard
// (`--shard K/N` runs the cases whose index is K modulo N) runs exactly the
// cases the unsharded run would, and a failure is reproduced by its seed and
// index whatever else ran. Each property stops at its first failing case,
// which is shrunk (property.hpp). A control runs the property against its
// broken model over the same case indices until it fails; a control that
// never fails is a defect of the catalogue, and the run fails.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "properties/property.hpp"
#include "sim/core/torch_profile.hpp"

namespace capsim {

// The default cases per property: a full `capsim check` (every property and
// every control) stays under 60 s on a 2-core machine (docs/performance.md).
inline constexpr std::uint64_t kDefaultCases = 500;
// A million cases of every property take hours on one core (about 600 cases
// a second in all); 2^32, the limit before, would have run for years. A
// longer campaign is many runs with other seeds or shards.
inline constexpr std::uint64_t kMaxCases = 1'000'000;
inline constexpr int kDefaultMaxSize = 100;
inline constexpr int kMaxMaxSize = 10000;
inline constexpr std::uint32_t kMaxShards = 1u << 16;

struct CheckOptions {
  std::vector<std::string> patterns;  // shell globs over property names; none: all
  std::uint64_t cases = kDefaultCases;
  std::uint64_t seed = 0;
  std::uint32_t shard = 0;  // run the cases whose index is `shard` modulo `shards`
  std::uint32_t shards = 1;
  int max_size = kDefaultMaxSize;  // sizes cycle 0, 1, ..., max_size, 0, ...
  bool properties = true;          // false: only the controls (a test of the catalogue)
  bool controls = true;
  // Only this case index (a reproduction): `cases` and the shard are ignored.
  std::optional<std::uint64_t> only_case;
  // The failure corpus (regressions.hpp), replayed before any case; "" for none.
  std::string regressions_dir;
  // The fault every sound case of the catalogue ran with (`--inject`; the
  // caller builds that catalogue, catalogue.hpp): kNone but for a
  // demonstration. Reports name it, so that a reproduction injects it too.
  Fault inject = Fault::kNone;
  // The torch profile every generated case ran under (`--torch`; none: each
  // case drew one). Reports name it too.
  std::optional<TorchProfile> torch;
};

// What one property's cases found: how many ran and, if one failed, that
// case (its index, seed and size) and what the shrunk input was.
struct CasesOutcome {
  const Property* property = nullptr;
  std::uint64_t cases_run = 0;
  bool failed = false;
  std::uint64_t case_index = 0;
  std::uint64_t case_seed = 0;
  int size = 0;
  CaseResult failure;
  std::uint64_t evaluations = 0;  // checks run, shrinking included
  double seconds = 0;             // wall time: reported, never compared
  ProbeCounts probes;             // sound cases only
};
struct PropertyOutcome : CasesOutcome {};
// A control's cases: a failure is the expected catch.
struct ControlOutcome : CasesOutcome {
  // Not run: the pinned profile lacks what the control breaks.
  bool not_applicable = false;
  bool caught() const { return failed; }
};

// One saved counterexample, checked again.
struct RegressionOutcome {
  const Property* property = nullptr;
  std::string file;
  bool failed = false;
  std::string message;  // the check's line when it failed
};

struct CheckReport {
  CheckOptions options;
  std::vector<RegressionOutcome> regressions;
  std::vector<PropertyOutcome> properties;
  std::vector<ControlOutcome> controls;
  bool interrupted = false;  // the run stopped early (`should_stop`)
  bool ok() const;
  // Cases per probe over every property.
  ProbeCounts probes() const;
  // The probes not marked rare that no case hit, by name.
  std::vector<std::string_view> missed_probes() const;
};

// The properties of `catalogue` whose names match any pattern (all when there
// is none), in catalogue order; an error names a pattern that matches nothing.
Result<std::vector<const Property*>> select_properties(std::span<const Property> catalogue,
                                                       const std::vector<std::string>& patterns);
// The same over property_catalogue().
Result<std::vector<const Property*>> select_properties(const std::vector<std::string>& patterns);

std::uint64_t case_seed(std::uint64_t seed, std::string_view property, std::uint64_t index);
int case_size(std::uint64_t index, int max_size);

// Hooks for the CLI: `on_case` after every case (for a progress bar), and
// `should_stop`, polled between cases (Ctrl-C). Both may be empty.
struct CheckHooks {
  std::function<void(const Property&, bool control, std::uint64_t done, std::uint64_t total)>
      on_case;
  std::function<void(const RegressionOutcome&)> on_regression;
  std::function<void(const PropertyOutcome&)> on_property;
  std::function<void(const ControlOutcome&)> on_control;
  std::function<bool()> should_stop;
  // Seconds on a monotonic clock, for the reported times; the library itself
  // reads no clock. Empty: every `seconds` stays 0.
  std::function<double()> clock;
};

// Replays the regressions of the selected properties of `catalogue`
// (property_catalogue() for the first form), then runs their cases, then
// their controls. A shard replays every regression, as a control runs every
// case: each is one program, and a shard must not skip a known failure.
Result<CheckReport> run_check(const CheckOptions& options, const CheckHooks& hooks = {});
Result<CheckReport> run_check(std::span<const Property> catalogue, const CheckOptions& options,
                              const CheckHooks& hooks = {});

}  // namespace capsim
