// Property cases per second, one benchmark per catalogue entry, the way
// `capsim check` runs them: a case is the property's generator and check
// against the sound model at one (case seed, size); the sizes cycle 0, 1, ...,
// kDefaultMaxSize as the runner's do. The target table of docs/performance.md
// asks for at least 1,000 cases/s per property on one core, and for
// `reference.agrees` (the host mirror) to cost at most 3 times
// `cudagraphs.replay-equals-eager`; targets_report.cpp prints both from these
// figures.
//
//  - BM_PropertyCases/<name>: one iteration = one full cycle of sizes
//    (kDefaultMaxSize + 1 cases), each iteration with the next case indices,
//    so a longer run sees more seeds rather than the same cases again. The
//    seed is fixed (kBenchSeed): the same cases on every run. A failing case
//    stops the benchmark with the property's message (a model bug, not a
//    speed figure). `reference.agrees` runs beside the host mirror
//    (cuda_reference/host_backend.hpp), as `capsim check --backend host` does.
//  - BM_CheckDefault: one `capsim check` on its defaults (500 cases of every
//    property, every control, the saved regressions, seed 0) through
//    run_check on this one core, as `capsim check --jobs 1` runs it; the
//    issue asks for at most 10 s. Its report must be clean.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda_reference/host_backend.hpp"
#include "cuda_reference/reference_mirror.hpp"
#include "properties/catalogue.hpp"
#include "properties/check_runner.hpp"
#include "properties/reference_agrees.hpp"

namespace capsim {
namespace {

constexpr std::uint64_t kBenchSeed = 26;
constexpr std::uint64_t kCasesPerCycle = static_cast<std::uint64_t>(kDefaultMaxSize) + 1;

void BM_PropertyCases(benchmark::State& state, const Property* property) {
  std::uint64_t index = 0;
  for (auto _ : state) {
    for (std::uint64_t k = 0; k < kCasesPerCycle; ++k, ++index) {
      const CaseResult result = property->run(case_seed(kBenchSeed, property->name, index),
                                              case_size(index, kDefaultMaxSize), false);
      if (result.failed) {
        state.SkipWithError(result.message.c_str());
        return;
      }
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(index));
  state.counters["cases/s"] =
      benchmark::Counter(static_cast<double>(index), benchmark::Counter::kIsRate);
}

// The catalogue plus reference.agrees over the host mirror; registered once,
// so the properties outlive the benchmarks that point at them.
const std::vector<Property>& bench_catalogue() {
  static const std::vector<Property> catalogue = catalogue_with_reference(
      property_catalogue(),
      [](Fault fault) -> Result<std::unique_ptr<ReplayMirror>> {
        return std::unique_ptr<ReplayMirror>(
            std::make_unique<cuda::ReferenceMirror>(std::make_unique<cuda::HostBackend>(), fault));
      },
      "mirror fault skip_upload");
  return catalogue;
}

[[maybe_unused]] const int kRegistered = [] {
  for (const Property& p : bench_catalogue()) {
    benchmark::RegisterBenchmark(("BM_PropertyCases/" + std::string(p.name)).c_str(),
                                 BM_PropertyCases, &p)
        ->Unit(benchmark::kMillisecond);
  }
  return 0;
}();

void BM_CheckDefault(benchmark::State& state) {
  CheckOptions options;
  options.regressions_dir = CAPSIM_REGRESSIONS_DIR;
  for (auto _ : state) {
    const Result<CheckReport> report = run_check(options);
    if (!report || !report->ok()) {
      state.SkipWithError(report ? "capsim check on its defaults failed"
                                 : report.error().message.c_str());
      return;
    }
    state.counters["properties"] = static_cast<double>(report->properties.size());
    state.counters["controls"] = static_cast<double>(report->controls.size());
  }
}
BENCHMARK(BM_CheckDefault)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace capsim
