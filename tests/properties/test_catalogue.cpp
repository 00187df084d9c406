// The property catalogue as the test suite: every property of
// properties/catalogue.cpp holds on a sample of its cases, and every
// negative control fails and is shrunk, so that what `capsim check` runs and
// what the tests check can no longer differ. Each case is the catalogue's
// own (its generator, its check, its fault); the run's seed comes from
// RC_PARAMS ("seed=N"), which .ci/run derives from the commit, so every
// commit samples other cases and a failure reproduces as
// `capsim check --property NAME --seed N --case I`.
//
// What the catalogue does not hold (a generator's validity, the plain API's
// stale read, the compiled-autograd lowerings, fixed regressions) stays in
// prop_cudagraph_trees.cpp and prop_compiled_autograd.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "model/fault.hpp"
#include "properties/catalogue.hpp"
#include "properties/check_runner.hpp"

using namespace capsim;

namespace {

// The cases per property here; `capsim check` runs kDefaultCases (500) in
// `make test`, and .ci/run again on the commit's seed.
constexpr std::uint64_t kSampleCases = 100;

// The seed of RC_PARAMS ("seed=N" among space-separated settings), else 0.
std::uint64_t rc_params_seed() {
  const char* params = std::getenv("RC_PARAMS");
  if (params == nullptr) return 0;
  const std::string s(params);
  for (std::size_t at = s.find("seed="); at != std::string::npos; at = s.find("seed=", at + 1)) {
    if (at > 0 && s[at - 1] != ' ') continue;  // a longer key ending in "seed="
    return std::strtoull(s.c_str() + at + 5, nullptr, 10);
  }
  return 0;
}

// Runs the sound cases of the properties matching `pattern` and requires
// each to pass, printing a failure as `capsim check` would.
void sound_cases_pass(const std::string& pattern) {
  CheckOptions o;
  o.patterns = {pattern};
  o.cases = kSampleCases;
  o.seed = rc_params_seed();
  o.controls = false;
  o.regressions_dir.clear();
  const Result<CheckReport> report = run_check(o);
  REQUIRE_MESSAGE(report.ok(), report.error().message);
  REQUIRE_FALSE(report->properties.empty());
  for (const PropertyOutcome& p : report->properties) {
    CAPTURE(p.property->name);
    CHECK(p.cases_run == kSampleCases);
    CHECK_MESSAGE(!p.failed, "case " << p.case_index << " (seed " << o.seed
                                     << "): " << p.failure.message << "\n"
                                     << p.failure.counterexample);
  }
}

}  // namespace

TEST_CASE("catalogue: every property names its control's fault, a row of a real site") {
  std::set<Fault> seen;
  for (const Property& p : property_catalogue()) {
    CAPTURE(p.name);
    CHECK(p.fault != Fault::kNone);
    CHECK(fault_site(p.fault) != FaultSite::kNone);
    seen.insert(p.fault);
  }
  // Controls may share a fault (skip_copy_in breaks three properties), but the
  // catalogue must not lean on one or two.
  CHECK(seen.size() >= 7);
}

TEST_CASE("catalogue: the compiled-autograd properties hold") {
  sound_cases_pass("capture.*");
}
TEST_CASE("catalogue: the cudagraph-tree properties hold") {
  sound_cases_pass("cudagraphs.*");
}
TEST_CASE("catalogue: copy-ins are checked against the manager that recorded them") {
  // Seed 39669478193181, case 54 (found by CI on commit 24144527): the
  // optimizer is dropped, the World shuts its tree manager down, and the next
  // manager numbers its graphs from 0 again; the check used to hold the first
  // manager's graph 0 (2 grads copied) to the last manager's graph 0 (1 copy).
  CheckOptions o;
  o.patterns = {"cudagraphs.copies-only-non-static"};
  o.cases = kSampleCases;
  o.seed = 39669478193181;
  o.controls = false;
  o.regressions_dir.clear();
  const Result<CheckReport> report = run_check(o);
  REQUIRE_MESSAGE(report.ok(), report.error().message);
  REQUIRE(report->properties.size() == 1);
  CHECK(report->properties[0].cases_run == kSampleCases);
  CHECK_MESSAGE(!report->properties[0].failed, report->properties[0].failure.message);
}
TEST_CASE("catalogue: the optimizer properties hold") {
  sound_cases_pass("optimizer.*");
}
TEST_CASE("catalogue: the determinism properties hold") {
  sound_cases_pass("determinism.*");
}
TEST_CASE("catalogue: the trace properties hold") {
  sound_cases_pass("traces.*");
}

TEST_CASE("catalogue: the training-loop properties hold") {
  sound_cases_pass("loop.*");
}

TEST_CASE("catalogue: every control fails within the default case count, and shrinks") {
  CheckOptions o;
  o.properties = false;
  o.controls = true;
  o.seed = rc_params_seed();
  REQUIRE(o.cases == kDefaultCases);
  const Result<CheckReport> report = run_check(o);
  REQUIRE(report.ok());
  CHECK(report->controls.size() == property_catalogue().size());
  std::size_t shrunk = 0;
  for (const ControlOutcome& c : report->controls) {
    CAPTURE(c.property->name);
    CAPTURE(fault_name(c.property->fault));
    CHECK(c.caught());
    CHECK(c.case_index < kDefaultCases);
    // Shrinking reached a local minimum within its budget and left a
    // readable counterexample. A control caught at size 0 or 1 may have
    // nothing smaller to try (the legacy capture fails on the one-leaf
    // graph), so not every control takes a step; most must.
    CHECK_FALSE(c.failure.shrink_cut);
    CHECK_FALSE(c.failure.counterexample.empty());
    if (c.failure.shrink_steps > 0) ++shrunk;
  }
  CHECK(shrunk * 2 >= report->controls.size());
}

// The sound cases above can fail: the same run over a catalogue whose sound
// model has a bug no control names (`capsim check --inject`) is caught.
TEST_CASE("catalogue: with a bug injected, the properties it breaks fail") {
  const std::vector<Property> broken = catalogue_with_injected(Fault::kSkipFirstCopy);
  CheckOptions o;
  o.patterns = {"cudagraphs.copies-only-non-static", "capture.*"};
  o.cases = kSampleCases;
  o.controls = false;
  o.regressions_dir.clear();
  const Result<CheckReport> report = run_check(broken, o);
  REQUIRE(report.ok());
  REQUIRE(report->properties.size() == 4);
  for (const PropertyOutcome& p : report->properties) {
    CAPTURE(p.property->name);
    // Copy-in is the trees' business: compiled autograd does not see it.
    CHECK(p.failed == p.property->name.starts_with("cudagraphs."));
  }
}

// A control that breaks what a pinned release lacks cannot fail under it:
// `capsim check --torch classic` reports it not applicable, and the run is ok.
TEST_CASE("catalogue: a control the pinned profile cannot reach is not applicable") {
  const std::vector<Property> classic =
      catalogue_with(CaseSetting{Fault::kNone, TorchProfile::kClassic});
  CheckOptions o;
  o.patterns = {"cudagraphs.demoted-inputs-copied", "cudagraphs.partition-statics-mapped",
                "cudagraphs.replay-equals-eager"};
  o.cases = 40;
  o.properties = false;
  o.regressions_dir.clear();
  const Result<CheckReport> report = run_check(classic, o);
  REQUIRE(report.ok());
  REQUIRE(report->controls.size() == 3);
  for (const ControlOutcome& c : report->controls) {
    CAPTURE(c.property->name);
    CHECK(c.not_applicable == (c.property->name != "cudagraphs.replay-equals-eager"));
  }
  CHECK(report->ok());
  // Under 2.15 both apply.
  for (const Property& p : catalogue_with(CaseSetting{Fault::kNone, TorchProfile::k2_15})) {
    CHECK(p.control_applies);
  }
}
