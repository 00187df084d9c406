// capsim_bench's entry point: Google Benchmark's own, with the console
// reporter that ends on the target table of docs/performance.md
// (targets_report.hpp), and `--quick`: the run to take before every stop.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "targets_report.hpp"

namespace {

// `--quick` leaves out the rows that take minutes or gigabytes (the replays
// and exports through a pipe, up to 10^7 events; the 10^6-node captures;
// `capsim check` on one core), and three 10^6-event figures no target reads
// (the reader's general path, the nlohmann floor, the On-Demand walk), and
// times the rest briefly, so that the whole run stays under a minute on the
// 2-core machine; the table marks what it left out "not run". A filter or
// minimum time given beside it wins.
constexpr std::string_view kQuickFilter =
    "--benchmark_filter=-(BM_ReplayStream/|BM_ExportStream/|"
    "BM_CompiledAutograd_[a-z]+/[a-z]+/1000000|BM_CheckDefault|BM_ReadTraceGeneralPath|"
    "BM_ParseTraceLinesNlohmann|BM_ParseTraceLinesOnDemand)";
constexpr std::string_view kQuickMinTime = "--benchmark_min_time=0.05";

bool has_flag(const std::vector<char*>& args, std::string_view prefix) {
  return std::any_of(args.begin(), args.end(),
                     [&](const char* a) { return std::string_view(a).starts_with(prefix); });
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  const auto quick = std::find_if(args.begin(), args.end(),
                                  [](const char* a) { return std::string_view(a) == "--quick"; });
  std::string filter(kQuickFilter), min_time(kQuickMinTime);
  if (quick != args.end()) {
    args.erase(quick);
    if (!has_flag(args, "--benchmark_filter")) args.push_back(filter.data());
    if (!has_flag(args, "--benchmark_min_time")) args.push_back(min_time.data());
  }
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  capsim::bench::TargetsReporter reporter(isatty(STDOUT_FILENO) != 0
                                              ? benchmark::ConsoleReporter::OO_Color
                                              : benchmark::ConsoleReporter::OO_None);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
