// The target table of docs/performance.md, filled from one run's benchmarks.
//
// capsim_bench's console output lists each benchmark; this reporter does the
// same and, at the end, prints each target as a figure against its floor
// from the same run (docs/performance.md, "Targets"), so that no ratio mixes
// two runs of a noisy machine. A row whose benchmarks were filtered out or
// failed says "not run" instead of guessing.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace capsim::bench {

// What the targets need of one benchmark: the median CPU seconds per
// iteration over its repetitions, and its counters (the last repetition's).
struct Measured {
  double cpu_seconds = 0;
  std::map<std::string, double> counters;
  std::optional<double> counter(const std::string& name) const;
};

// The runs seen so far, by benchmark name (without aggregate suffixes).
class MeasuredRuns {
 public:
  void add(const benchmark::BenchmarkReporter::Run& run);
  const Measured* find(const std::string& name) const;

 private:
  std::map<std::string, std::vector<double>> cpu_seconds_;
  std::map<std::string, Measured> measured_;
};

enum class Verdict { kMet, kNotMet, kInfo, kNotRun };

// One line of the table.
struct TargetRow {
  std::string figure;
  std::string measured;  // the figure, with its unit
  std::string floor;     // what it is compared against, with its value
  std::string ratio;     // measured / floor, or "" where there is none
  std::string target;
  Verdict verdict = Verdict::kNotRun;
};

std::vector<TargetRow> target_rows(const MeasuredRuns& runs);
// The rows as a Markdown table, ready for docs/performance.md.
std::string format_target_table(const std::vector<TargetRow>& rows);

// The console reporter plus the table, printed when the run ends.
class TargetsReporter : public benchmark::ConsoleReporter {
 public:
  explicit TargetsReporter(OutputOptions options) : ConsoleReporter(options) {}
  void ReportRuns(const std::vector<Run>& reports) override;
  void Finalize() override;

 private:
  MeasuredRuns runs_;
};

}  // namespace capsim::bench
