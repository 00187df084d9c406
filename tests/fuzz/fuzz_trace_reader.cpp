// Fuzz target for the trace reader and replay (libFuzzer's entry point).
//
// The bytes are a trace file. They are read line by line to the end or to the
// first error, then, when the header reads, replayed in a fresh World, and
// the outcome is put through what `capsim replay` and `capsim replay --json`
// print. Whatever the bytes, none of this may crash, hang, leak or throw: bad
// input is an Error, a divergence is a report. Two cross-checks turn silent
// disagreements into crashes: replay reads the same lines as the reader, so a
// trace the reader refuses must fail the replay too, and a replay that
// finishes has read exactly the lines the reader read.
//
// Built two ways: with clang's -fsanitize=fuzzer (tests/fuzz/run-libfuzzer.sh)
// and, with any compiler, under fuzz_driver_main.cpp, which feeds it the
// corpus and deterministic mutations of it (capsim_fuzz_replay).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tests/fuzz/fuzz_support.hpp"
#include "traces/format/trace_reader.hpp"
#include "traces/simulation/resimulation.hpp"

namespace {

using capsim::Error;
using capsim::Json;
using capsim::ResimulationReport;
using capsim::Result;
using capsim::TraceReader;

using capsim::fuzz::open_over;

[[noreturn]] void fail(const char* what) {
  capsim::fuzz::fail("fuzz_trace_reader", what);
}

// What the CLI does with an outcome: the one-line summary, and the --json
// document (nlohmann's dump throws on invalid UTF-8, so every string that
// reaches a report or an error message must be valid UTF-8).
void print_like_the_cli(const Result<ResimulationReport>& report) {
  Json all = Json::array();
  if (!report) {
    Json j = Json::object();
    j["file"] = "fuzz.jsonl";
    j["error"] = report.error().message;
    all.push_back(std::move(j));
  } else {
    (void)capsim::report_summary(*report);
    all.push_back(capsim::report_to_json(*report));
  }
  (void)all.dump(2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);

  auto reader = open_over(bytes);
  if (!reader) {
    print_like_the_cli(reader.error());
    return 0;
  }
  bool read_all = false;
  for (;;) {
    auto item = (*reader)->next();
    if (!item) {
      print_like_the_cli(item.error());
      break;
    }
    if (!item->has_value()) {
      read_all = true;
      break;
    }
  }

  auto second = open_over(bytes);
  if (!second) fail("the header read once but not twice");
  capsim::ResimulationOptions options;
  options.memory_budget_bytes = capsim::fuzz::kFuzzMemoryBudget;
  const Result<ResimulationReport> report = capsim::resimulate_trace(**second, options);
  if (report.ok() && !read_all) fail("replay succeeded on a trace the reader refuses");
  if (report.ok() && report->lines != (*reader)->lines_read()) {
    fail("replay read another number of lines than the reader");
  }
  print_like_the_cli(report);
  return 0;
}
