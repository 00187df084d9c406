// Properties of traces over random programs (issue 5): for every generated
// program, record -> write -> read -> replay finds no divergence and no
// violation, and writing is deterministic. Negative control: a trace recorded
// from a deliberately broken World (one that copies no inputs at replay) must
// diverge when the correct model replays it.
#include <doctest/doctest.h>

#include <sstream>

#include "properties/cudagraph_checks.hpp"
#include "properties/cudagraph_programs_rc.hpp"
#include "tests/support/rc_doctest.hpp"
#include "traces/replay.hpp"
#include "traces/trace_format.hpp"

using namespace capsim;
using capsim::testing::rc_expect_failure;
using capsim::testing::rc_prop;

namespace {

// The trace text of `g` run in a World with `fault`.
std::string record_text(const GeneratedProgram& g, TreeFault fault) {
  WorldOptions options;
  options.fault = fault;
  Status status;
  auto world = run_generated(g, options, status);
  RC_ASSERT(status.ok());
  TraceHeader header;
  header.name = "generated";
  header.seed = g.seed;
  header.config = options.config;
  auto lines = trace_lines(header, g.program, world->events());
  if (!lines) RC_FAIL(lines.error().message);
  std::string text;
  for (const std::string& l : *lines) text += l + "\n";
  return text;
}

ReplayReport replay_text(const std::string& text) {
  auto reader = TraceReader::open(std::make_unique<std::istringstream>(text), "generated.jsonl");
  if (!reader) RC_FAIL(reader.error().message);
  auto report = replay_trace(**reader, ReplayOptions{});
  if (!report) RC_FAIL(report.error().message);
  return *report;
}

void round_trip(TreeFault recorded_with) {
  const GeneratedProgram g = lower(*rc_gen::program());
  const std::string text = record_text(g, recorded_with);
  const ReplayReport report = replay_text(text);
  RC_CLASSIFY(report.events_recorded > 20, "more than 20 events");
  if (report.divergence) {
    RC_FAIL("line " + std::to_string(report.divergence->line) + " field '" +
            report.divergence->field + "'\n  recorded  " + report.divergence->recorded +
            "\n  predicted " + report.divergence->predicted);
  }
  if (!report.violations.empty()) RC_FAIL(report_summary(report));
  RC_ASSERT(report.events_matched == report.events_recorded);
}

}  // namespace

TEST_CASE("traces: record, write, read and replay match with no divergence") {
  rc_prop("round trip", [] { round_trip(TreeFault::kNone); });
  rc_expect_failure("a trace of a World that copies no inputs diverges from the model",
                    [] { round_trip(TreeFault::kSkipCopyIn); });
}

TEST_CASE("traces: writing is deterministic") {
  rc_prop("two recordings give identical bytes", [] {
    const GeneratedProgram g = lower(*rc_gen::program());
    RC_ASSERT(record_text(g, TreeFault::kNone) == record_text(g, TreeFault::kNone));
  });
}
