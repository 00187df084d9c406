// A real script's trace: the largest of the third-party corpus
// (data/third_party, docs/third-party.md), a CPU run of PyTorch's
// time-sequence-prediction example recorded by the recorder, read four ways,
// each against the bare parse of its bytes (the floor):
//
//  - BM_ThirdPartyParse: every line through simdjson's DOM parser, nothing else.
//  - BM_ThirdPartyReplay: `capsim replay` (resimulate_file: every event compared).
//  - BM_ThirdPartyAsOnAGpu: the trace read, then simulated with CUDA graphs on
//    (`explain --as-on-a-gpu`'s run).
//  - BM_ThirdPartyExplain: the trace read and every decision explained.
//
// Unlike the synthetic trace of bench_traces.cpp, its functions are real FX
// graphs of generic ops, and most of its bytes are function lines, not events.
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "traces/analyses/explain.hpp"
#include "traces/analyses/observed_run.hpp"
#include "traces/simulation/resimulation.hpp"

namespace capsim {
namespace {

const std::string kTrace = std::string(CAPSIM_SOURCE_DIR) +
                           "/data/third_party/2.11.0/time_sequence_prediction.plain.jsonl";

void set_bytes(benchmark::State& state) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(kTrace, ec);
  if (ec) return;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.counters["trace_bytes"] = static_cast<double>(bytes);
}

void BM_ThirdPartyParse(benchmark::State& state) {
  simdjson::dom::parser parser;
  for (auto _ : state) {
    std::ifstream in(kTrace, std::ios::binary);
    if (!in) return state.SkipWithError("the third-party trace is missing");
    std::string line;
    while (std::getline(in, line)) {
      line.reserve(line.size() + simdjson::SIMDJSON_PADDING);
      simdjson::dom::element root;
      if (parser.parse(line.data(), line.size(), false).get(root) != simdjson::SUCCESS) {
        return state.SkipWithError("simdjson refused a line");
      }
      benchmark::DoNotOptimize(root);
    }
  }
  set_bytes(state);
}
BENCHMARK(BM_ThirdPartyParse)->Unit(benchmark::kMillisecond);

void BM_ThirdPartyReplay(benchmark::State& state) {
  for (auto _ : state) {
    const Result<ResimulationReport> report = resimulate_file(kTrace, ResimulationOptions{});
    if (!report) return state.SkipWithError(report.error().message.c_str());
    if (!report->ok()) return state.SkipWithError(report_summary(*report).c_str());
  }
  set_bytes(state);
}
BENCHMARK(BM_ThirdPartyReplay)->Unit(benchmark::kMillisecond);

void BM_ThirdPartyAsOnAGpu(benchmark::State& state) {
  for (auto _ : state) {
    const Result<ObservedRun> run = observe_file(kTrace);
    if (!run) return state.SkipWithError(run.error().message.c_str());
    const Result<ObservedRun> gpu = as_on_a_gpu(*run);
    if (!gpu) return state.SkipWithError(gpu.error().message.c_str());
    benchmark::DoNotOptimize(gpu->events.size());
  }
  set_bytes(state);
}
BENCHMARK(BM_ThirdPartyAsOnAGpu)->Unit(benchmark::kMillisecond);

void BM_ThirdPartyExplain(benchmark::State& state) {
  for (auto _ : state) {
    const Result<ObservedRun> run = observe_file(kTrace);
    if (!run) return state.SkipWithError(run.error().message.c_str());
    const std::vector<Explanation> all = explain(*run, std::nullopt);
    benchmark::DoNotOptimize(all.size());
  }
  set_bytes(state);
}
BENCHMARK(BM_ThirdPartyExplain)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace capsim
