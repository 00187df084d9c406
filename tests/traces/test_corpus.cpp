// The corpus (data/corpus/): every built-in scenario records to exactly the
// bytes committed there, and every recording replays with no divergence.
// Byte equality is the determinism check and the drift alarm: a deliberate
// model change regenerates the corpus (scripts/record-corpus.sh) in the same
// commit.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/traces/trace_test_support.hpp"
#include "traces/simulation/scenario_trace.hpp"

namespace capsim {
namespace {

const std::filesystem::path kCorpus = std::filesystem::path(CAPSIM_SOURCE_DIR) / "data/corpus";

// The scenarios whose replays report violations on purpose: in hazards/, out
// of the `data/corpus/*.jsonl` that README.md suggests replaying.
bool is_hazard(const std::string& name) {
  return name == "plain_api_param_reassigned" || name == "ca_basic_legacy";
}

std::filesystem::path corpus_file(const std::string& name) {
  return kCorpus / (is_hazard(name) ? "hazards" : "") / (name + ".jsonl");
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first line where two texts differ, for a readable failure.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(sa, la));
    const bool gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "identical";
    if (la != lb || ga != gb) {
      return "line " + std::to_string(line) + ":\n  corpus   " + (ga ? la : "(end)") +
             "\n  recorded " + (gb ? lb : "(end)");
    }
  }
}

TEST_CASE("corpus: every built-in scenario records to the committed bytes") {
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    CAPTURE(s.name);
    const auto lines = trace_scenario(s);
    REQUIRE(lines.ok());
    const std::string recorded = test::join_lines(*lines);
    const std::string committed = read_file(corpus_file(s.name));
    INFO("regenerate with scripts/record-corpus.sh if the model changed on purpose; ",
         first_difference(committed, recorded));
    CHECK(recorded == committed);
  }
}

TEST_CASE("corpus: it holds exactly the built-in scenarios") {
  std::set<std::string> expected, found;
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    expected.insert(std::filesystem::relative(corpus_file(s.name), kCorpus).string());
  }
  for (const auto& dir : {kCorpus, kCorpus / "hazards"}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".jsonl") {
        found.insert(std::filesystem::relative(entry.path(), kCorpus).string());
      }
    }
  }
  CHECK(found == expected);
}

TEST_CASE("corpus: recording twice gives identical bytes") {
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    CAPTURE(s.name);
    const auto a = trace_scenario(s);
    const auto b = trace_scenario(s);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(*a == *b);
  }
}

TEST_CASE("corpus: every recording replays; only the two hazards violate an invariant") {
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    CAPTURE(s.name);
    const auto lines = trace_scenario(s);
    REQUIRE(lines.ok());
    const auto report = test::replay_text(test::join_lines(*lines));
    REQUIRE(report.ok());
    CHECK_FALSE(report->divergence.has_value());
    CHECK(report->events_matched == report->events_recorded);
    if (s.name == "plain_api_param_reassigned") {
      // make_graphed_callables never re-records: the replay reads the old
      // param (spec invariant 23), and replay says so.
      REQUIRE(report->violations.size() == 2);
      CHECK(report->violations[0].invariant == "replay_equals_eager");
      CHECK(report->violations[1].invariant == "static_inputs_alive");
    } else if (s.name == "ca_basic_legacy") {
      // The capture before PR 144707 reads proxy metadata: the negative
      // control of no_proxy_metadata_reads (one violation per backward).
      REQUIRE(report->violations.size() == 1);
      CHECK(report->violations[0].invariant == "no_proxy_metadata_reads");
    } else {
      CHECK(report->violations.empty());
    }
  }
}

}  // namespace
}  // namespace capsim
