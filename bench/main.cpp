// capsim_bench's entry point: Google Benchmark's own, with the console
// reporter that ends on the target table of docs/performance.md
// (targets_report.hpp).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include "targets_report.hpp"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  capsim::bench::TargetsReporter reporter(isatty(STDOUT_FILENO) != 0
                                              ? benchmark::ConsoleReporter::OO_Color
                                              : benchmark::ConsoleReporter::OO_None);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
