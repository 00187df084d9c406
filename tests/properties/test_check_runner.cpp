// The runner behind `capsim check` (properties/check_runner.hpp), on small
// hand-made properties whose behaviour is known, and on the real catalogue:
// shards partition the cases, a failure shrinks and reproduces from its case
// index alone, a control that is not caught fails the run, and every control
// of the catalogue is caught within the default case count.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "properties/catalogue.hpp"
#include "properties/check_runner.hpp"
#include "properties/regressions.hpp"

namespace capsim {
namespace {

// A property that records every (case seed, size) it is asked for and passes.
Property recording_property(std::string_view name, std::multiset<std::uint64_t>& seeds,
                            std::map<std::uint64_t, int>& sizes) {
  Property p;
  p.name = name;
  p.statement = "records its cases";
  p.control = "fails at once";
  p.run = [&seeds, &sizes](std::uint64_t seed, int size, bool control) {
    CaseResult r;
    r.evaluations = 1;
    if (control) {
      r.failed = true;
      r.message = "control";
      return r;
    }
    seeds.insert(seed);
    sizes[seed] = size;
    return r;
  };
  return p;
}

// Fails for any vector holding an element >= 50; its smallest counterexample
// is [50]. The control is the same check with the threshold at 101, which
// nothing reaches: a control that is never caught.
Property threshold_property() {
  Property p;
  p.name = "test.no-large-element";
  p.statement = "no element is 50 or more";
  p.control = "a threshold nothing reaches";
  p.run = make_case<std::vector<int>>(
      rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 100)),
      [](const std::vector<int>& v, bool control) -> std::optional<std::string> {
        const int limit = control ? 101 : 50;
        for (int x : v) {
          if (x >= limit) return "found " + std::to_string(x);
        }
        return std::nullopt;
      },
      [](const std::vector<int>& v) {
        std::string out = "[";
        for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
        return out + "]";
      });
  return p;
}

CheckOptions options(std::uint64_t cases, std::uint32_t shard = 0, std::uint32_t shards = 1) {
  CheckOptions o;
  o.cases = cases;
  o.seed = 42;
  o.shard = shard;
  o.shards = shards;
  o.controls = false;
  return o;
}

TEST_CASE("check runner: the shards together run exactly the unsharded cases") {
  std::multiset<std::uint64_t> all, sharded;
  std::map<std::uint64_t, int> all_sizes, shard_sizes;
  const std::vector<Property> one{recording_property("test.a", all, all_sizes)};
  REQUIRE(run_check(one, options(50)).ok());
  const std::vector<Property> other{recording_property("test.a", sharded, shard_sizes)};
  for (std::uint32_t k = 0; k < 4; ++k) REQUIRE(run_check(other, options(50, k, 4)).ok());
  CHECK(all.size() == 50);
  CHECK(std::set<std::uint64_t>(all.begin(), all.end()).size() == 50);  // distinct seeds
  CHECK(sharded == all);
  CHECK(shard_sizes == all_sizes);
}

TEST_CASE("check runner: case seeds depend on the seed, the property and the index") {
  CHECK(case_seed(1, "a.b", 0) == case_seed(1, "a.b", 0));
  CHECK(case_seed(1, "a.b", 0) != case_seed(2, "a.b", 0));
  CHECK(case_seed(1, "a.b", 0) != case_seed(1, "a.c", 0));
  CHECK(case_seed(1, "a.b", 0) != case_seed(1, "a.b", 1));
  CHECK(case_size(0, 100) == 0);
  CHECK(case_size(101, 100) == 0);
  CHECK(case_size(7, 3) == 3);
}

TEST_CASE("check runner: a failure is shrunk and reproduced by its case index alone") {
  const std::vector<Property> catalogue{threshold_property()};
  const Result<CheckReport> report = run_check(catalogue, options(100));
  REQUIRE(report.ok());
  REQUIRE(report->properties.size() == 1);
  const PropertyOutcome& p = report->properties[0];
  REQUIRE(p.failed);
  CHECK_FALSE(report->ok());
  CHECK(p.failure.counterexample == "[50]");
  CHECK(p.failure.message == "found 50");
  CHECK(p.failure.shrink_steps > 0);
  CHECK(p.cases_run == p.case_index + 1);  // it stopped at the first failure

  CheckOptions again = options(100);
  again.only_case = p.case_index;
  const Result<CheckReport> reproduced = run_check(catalogue, again);
  REQUIRE(reproduced.ok());
  const PropertyOutcome& q = reproduced->properties[0];
  REQUIRE(q.failed);
  CHECK(q.cases_run == 1);
  CHECK(q.case_seed == p.case_seed);
  CHECK(q.failure.counterexample == p.failure.counterexample);
  CHECK(q.failure.evaluations == p.failure.evaluations);
}

TEST_CASE("check runner: a control that is never caught fails the run") {
  const std::vector<Property> catalogue{threshold_property()};
  CheckOptions o = options(20);
  o.properties = false;
  o.controls = true;
  const Result<CheckReport> report = run_check(catalogue, o);
  REQUIRE(report.ok());
  REQUIRE(report->controls.size() == 1);
  CHECK_FALSE(report->controls[0].caught());
  CHECK(report->controls[0].cases_run == 20);
  CHECK_FALSE(report->ok());
}

TEST_CASE("check runner: bad options and globs are errors; a stop request interrupts") {
  std::multiset<std::uint64_t> seeds;
  std::map<std::uint64_t, int> sizes;
  const std::vector<Property> catalogue{recording_property("test.a", seeds, sizes)};
  CheckOptions o = options(10);
  o.patterns = {"nothing.*"};
  CHECK(run_check(catalogue, o).error().message ==
        "--property 'nothing.*': matches no property (see capsim check --list)");
  o.patterns = {"test.*"};
  CHECK(run_check(catalogue, o).ok());
  CHECK(run_check(catalogue, options(10, 4, 4)).error().message ==
        "--shard 4/4: needs 0 <= K < N <= 65536");
  CHECK_FALSE(run_check(catalogue, options(0)).ok());

  CheckHooks hooks;
  int polls = 0;
  hooks.should_stop = [&polls] { return ++polls > 3; };
  const Result<CheckReport> cut = run_check(catalogue, options(10), hooks);
  REQUIRE(cut.ok());
  CHECK(cut->interrupted);
  CHECK_FALSE(cut->ok());
  CHECK(cut->properties.empty());  // a property cut short is left out
}

TEST_CASE("check catalogue: stable unique names, each with a statement, spec and control") {
  std::set<std::string_view> names;
  for (const Property& p : property_catalogue()) {
    CAPTURE(p.name);
    CHECK(names.insert(p.name).second);
    CHECK(p.name.find('.') != std::string_view::npos);
    CHECK_FALSE(p.statement.empty());
    CHECK_FALSE(p.spec.empty());
    CHECK_FALSE(p.generator.empty());
    CHECK_FALSE(p.control.empty());
    CHECK(find_property(p.name) == &p);
  }
  CHECK(names.size() >= 9);
}

TEST_CASE("check runner: probes count the cases that hit them; unhit common probes are missed") {
  Property p;
  p.name = "test.probes";
  p.statement = "hits the record probe on even cases";
  p.control = "none";
  std::uint64_t calls = 0;
  p.run = [&calls](std::uint64_t, int, bool) {
    CaseResult r;
    r.evaluations = 1;
    if (calls++ % 2 == 0) r.probes.set(static_cast<std::size_t>(CoverageProbe::kRecord));
    return r;
  };
  const std::vector<Property> one{p};
  const Result<CheckReport> report = run_check(one, options(10));
  REQUIRE(report.ok());
  CHECK(report->probes().cases[static_cast<std::size_t>(CoverageProbe::kRecord)] == 5);
  const auto missed = report->missed_probes();
  CHECK(std::count(missed.begin(), missed.end(), "record") == 0);
  CHECK(std::count(missed.begin(), missed.end(), "replay") == 1);
  CHECK(std::count(missed.begin(), missed.end(), "re-record-limit") == 0);  // rare
}

// The whole default run (about 10 s optimised): skipped under the sanitizers,
// where it would cost minutes and find nothing that the sound build's run
// does not (the probes count paths, not memory errors).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST_CASE("check catalogue: the default run reaches every coverage probe not marked rare" *
          doctest::skip(kSanitized)) {
  CheckOptions o;
  o.controls = false;
  REQUIRE(o.cases == kDefaultCases);
  const Result<CheckReport> report = run_check(o);
  REQUIRE(report.ok());
  CHECK(report->ok());
  for (std::string_view missed : report->missed_probes()) {
    CAPTURE(missed);
    CHECK_MESSAGE(false, "a coverage probe was never hit by the default run");
  }
}

TEST_CASE("check regressions: the corpus loads, replays first and passes; bad names are errors") {
  const std::string corpus = std::string(CAPSIM_SOURCE_DIR) + "/properties/regressions";
  const Result<std::vector<Regression>> saved = load_regressions(corpus, property_catalogue());
  REQUIRE(saved.ok());
  REQUIRE_FALSE(saved->empty());
  CheckOptions o = options(1);
  o.regressions_dir = corpus;
  const Result<CheckReport> report = run_check(o);
  REQUIRE(report.ok());
  CHECK(report->regressions.size() == saved->size());
  for (const RegressionOutcome& r : report->regressions) {
    CAPTURE(r.file);
    CHECK_FALSE(r.failed);
  }
  // Only the selected properties' regressions run.
  o.patterns = {"capture.*"};
  const Result<CheckReport> none = run_check(o);
  REQUIRE(none.ok());
  CHECK(none->regressions.empty());

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "capsim-test-regressions";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::filesystem::path(corpus) / saved->front().file,
                             dir / "no-such-property.x.jsonl");
  const auto bad_name = load_regressions(dir.string(), property_catalogue());
  REQUIRE_FALSE(bad_name.ok());
  CHECK(bad_name.error().message.find("no-such-property.x.jsonl") != std::string::npos);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "capture.equals-eager.x.jsonl") << "{}\n";
  const auto not_programs = load_regressions(dir.string(), property_catalogue());
  REQUIRE_FALSE(not_programs.ok());
  CHECK(not_programs.error().message.find("does not replay regressions") != std::string::npos);
  std::filesystem::remove_all(dir);
  CHECK(load_regressions(dir.string(), property_catalogue())->empty());  // no folder: none
}

}  // namespace
}  // namespace capsim
