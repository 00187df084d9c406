// Throughput of capsim-trace files: reading, replaying, and the memory replay
// needs as a trace grows. The figures are recorded in docs/performance.md
// ("Traces").
//
// The trace is synthetic and built once per size, lazily, into a temporary
// file (removed at exit): a steady training-like loop of mark_step_begin, a
// fresh random input x and a call g(x, w) with w an nn.Parameter, so after
// the warmup and the recording every call is a replay with a copy-in. It is
// recorded the way `capsim record` does it (a World with verify_replays off,
// the lines of traces/trace_format.hpp), but streamed: each action's events
// are taken from the World and written at once.
//
//  - BM_ReadTrace: TraceReader over the 1M-event file, every line parsed and
//    checked. bytes_per_second and events/s.
//  - BM_ParseTraceLinesNlohmann: the same file, line by line, through a bare
//    nlohmann::json::parse and nothing else: the floor for a reader built on
//    nlohmann. The ratio of the two bytes_per_second is the cost of the
//    checks (envelope, schema, payload conversion).
//  - BM_ReadTraceGeneralPath: BM_ReadTrace with the reader's fast path for
//    event and action lines off: every line through nlohmann and the general
//    checks.
//  - BM_ParseTraceLinesSimdjson: the same lines through simdjson's DOM parser
//    and nothing else: the floor of docs/performance.md's targets.
//  - BM_ReplayTrace: resimulate_file over the 1M-event file (re-simulation with
//    verify_replays on, every event compared). events/s.
//  - BM_ReplayTracePeakMemory/<events>: the peak RSS growth of one replay, in a
//    forked child that first trims its heap (malloc_trim) and resets its peak
//    (/proc/self/clear_refs), for 100k- and 1M-event traces. Streaming replay
//    must keep it flat.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <system_error>

#include "sim/core/function_builder.hpp"
#include "sim/world/world.hpp"
#include "traces/resimulation.hpp"
#include "traces/trace_format.hpp"
#include "traces/trace_reader.hpp"

namespace capsim {
namespace {

constexpr std::size_t kMillion = 1'000'000;

struct BenchTrace {
  std::string path;
  std::uint64_t bytes = 0;
  std::size_t lines = 0;
  std::size_t actions = 0;
  std::size_t events = 0;
  std::string error;  // non-empty: the trace could not be built
};

NewTensor new_tensor(const std::string& name, Dims sizes, std::optional<float> fill,
                     bool parameter) {
  NewTensor t;
  t.name = name;
  t.sizes = std::move(sizes);
  t.fill = fill;
  t.parameter = parameter;
  return t;
}

Call call(const std::string& fn, std::vector<std::string> args) {
  Call c;
  c.function = fn;
  c.args = std::move(args);
  c.outputs = {""};  // the output is dropped at once
  return c;
}

// Writes a trace of at least `min_events` events to `path`.
Status write_trace(std::size_t min_events, BenchTrace& t) {
  Program program;
  {
    FunctionBuilder f("g", CompilationMode::kInference, {"arg0_1", "primals_1"});
    f.params({1});
    const ValueIndex x = f.input(0);
    program.functions.push_back(f.returns({f.add(f.mul(x, f.input(1)), x)}));
  }
  TraceHeader header;
  header.name = fmt::format("bench_traces_{}", min_events);
  WorldOptions options;
  options.config = header.config;
  options.seed = header.seed;
  World world(options);
  CAPSIM_TRY(world.begin(program));

  std::ofstream out(t.path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(fmt::format("{}: cannot write", t.path));
  std::uint64_t seq = 0;
  auto put = [&](const std::string& line) {
    out << line << '\n';
    t.bytes += line.size() + 1;
    ++t.lines;
    ++seq;
  };
  put(header_line(header));
  for (const FunctionDef& def : program.functions) put(function_line(seq, def));
  auto run = [&](const Action& action) -> Status {
    put(action_line(seq, t.actions, action));
    CAPSIM_TRY(world.run_action(t.actions, action));
    ++t.actions;
    for (const Event& e : world.take_events()) {
      CAPSIM_TRY_ASSIGN(const std::string line, event_line(seq, e));
      put(line);
      ++t.events;
    }
    return {};
  };
  CAPSIM_TRY(run(new_tensor("w", {64}, 0.25f, true)));
  while (t.events < min_events) {
    CAPSIM_TRY(run(MarkStepBegin{}));
    CAPSIM_TRY(run(new_tensor("x", {64}, std::nullopt, false)));
    CAPSIM_TRY(run(call("g", {"x", "w"})));
  }
  out.close();
  if (!out) return make_error(fmt::format("{}: write failed", t.path));
  return {};
}

// The files, built on first use and removed when the benchmark exits.
class TraceFiles {
 public:
  ~TraceFiles() {
    for (const auto& [events, t] : traces_) {
      std::error_code ec;
      std::filesystem::remove(t.path, ec);
    }
  }
  const BenchTrace& get(std::size_t min_events) {
    auto it = traces_.find(min_events);
    if (it != traces_.end()) return it->second;
    BenchTrace& t = traces_[min_events];
    t.path = (std::filesystem::temp_directory_path() /
              fmt::format("capsim_bench_trace_{}_{}.jsonl", ::getpid(), min_events))
                 .string();
    const Status s = write_trace(min_events, t);
    if (!s) t.error = s.error().message;
    return t;
  }

 private:
  std::map<std::size_t, BenchTrace> traces_;
};

const BenchTrace& trace_of(benchmark::State& state, std::size_t min_events) {
  static TraceFiles files;
  const BenchTrace& t = files.get(min_events);
  if (!t.error.empty()) state.SkipWithError(t.error.c_str());
  return t;
}

void set_trace_counters(benchmark::State& state, const BenchTrace& t) {
  const auto n = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(t.bytes) * state.iterations());
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(t.events) * n, benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(t.events);
  state.counters["MB"] = static_cast<double>(t.bytes) / 1e6;
}

// Every line through TraceReader; `fast` is its fast path for event and action lines
// (traces/line_fast.hpp), off for the general path alone.
void read_trace(benchmark::State& state, bool fast) {
  const BenchTrace& t = trace_of(state, kMillion);
  if (!t.error.empty()) return;
  for (auto _ : state) {
    Result<std::unique_ptr<TraceReader>> reader = TraceReader::open(t.path);
    if (!reader) {
      state.SkipWithError(reader.error().message.c_str());
      return;
    }
    (*reader)->set_fast_path(fast);
    std::size_t events = 0;
    for (;;) {
      // advance(), as replay reads (next() moves each line into a new item).
      Result<TraceItem*> item = (*reader)->advance();
      if (!item) {
        state.SkipWithError(item.error().message.c_str());
        return;
      }
      if (*item == nullptr) break;
      events += (*item)->type == TraceLineType::kEvent;
    }
    if (events != t.events) {
      state.SkipWithError("the reader saw another number of events than were written");
      return;
    }
    benchmark::DoNotOptimize(events);
  }
  set_trace_counters(state, t);
}

void BM_ReadTrace(benchmark::State& state) {
  read_trace(state, true);
}
BENCHMARK(BM_ReadTrace)->Unit(benchmark::kMillisecond);

void BM_ReadTraceGeneralPath(benchmark::State& state) {
  read_trace(state, false);
}
BENCHMARK(BM_ReadTraceGeneralPath)->Unit(benchmark::kMillisecond);

void BM_ParseTraceLinesNlohmann(benchmark::State& state) {
  const BenchTrace& t = trace_of(state, kMillion);
  if (!t.error.empty()) return;
  for (auto _ : state) {
    std::ifstream in(t.path, std::ios::binary);
    std::string line;
    std::size_t lines = 0;
    while (std::getline(in, line)) {
      const Json j = Json::parse(line);
      benchmark::DoNotOptimize(j.size());
      ++lines;
    }
    if (lines != t.lines) {
      state.SkipWithError("getline saw another number of lines than were written");
      return;
    }
  }
  set_trace_counters(state, t);
}
BENCHMARK(BM_ParseTraceLinesNlohmann)->Unit(benchmark::kMillisecond);

// The floor the issue names: the same lines through the fastest JSON parser
// Debian packages, simdjson's DOM parser (one parser, reused), and nothing
// else.
void BM_ParseTraceLinesSimdjson(benchmark::State& state) {
  const BenchTrace& t = trace_of(state, kMillion);
  if (!t.error.empty()) return;
  simdjson::dom::parser parser;
  for (auto _ : state) {
    std::ifstream in(t.path, std::ios::binary);
    std::string line;
    std::size_t lines = 0;
    while (std::getline(in, line)) {
      line.reserve(line.size() + simdjson::SIMDJSON_PADDING);
      simdjson::dom::element root;
      if (parser.parse(line.data(), line.size(), false).get(root) != simdjson::SUCCESS) {
        state.SkipWithError("simdjson refused a line");
        return;
      }
      benchmark::DoNotOptimize(root);
      ++lines;
    }
    if (lines != t.lines) {
      state.SkipWithError("getline saw another number of lines than were written");
      return;
    }
  }
  set_trace_counters(state, t);
}
BENCHMARK(BM_ParseTraceLinesSimdjson)->Unit(benchmark::kMillisecond);

void BM_ReplayTrace(benchmark::State& state) {
  const BenchTrace& t = trace_of(state, kMillion);
  if (!t.error.empty()) return;
  for (auto _ : state) {
    const Result<ResimulationReport> report = resimulate_file(t.path, ResimulationOptions{});
    if (!report) {
      state.SkipWithError(report.error().message.c_str());
      return;
    }
    if (!report->ok() || report->events_matched != t.events) {
      state.SkipWithError(report_summary(*report).c_str());
      return;
    }
  }
  set_trace_counters(state, t);
  state.counters["actions"] = static_cast<double>(t.actions);
}
BENCHMARK(BM_ReplayTrace)->Unit(benchmark::kMillisecond);

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"), or -1.
long status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + key.size(), nullptr, 10);
  }
  return -1;
}

struct PeakSample {
  long base_kb = -1;  // RSS when the replay starts
  long peak_kb = -1;  // the peak RSS during the replay
  long reset = 0;     // 1 when the peak was reset at the start (else it is an upper bound)
  long ok = 0;
};

// One replay of `path` in a forked child, so that nothing the benchmark
// process did before counts in the peak.
PeakSample replay_peak_in_child(const std::string& path) {
  PeakSample sample;
  int fds[2];
  if (::pipe(fds) != 0) return sample;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    PeakSample s;
    // Free heap inherited from the benchmarks before would be reused without
    // counting: give it back first, so every size starts from the same state.
    ::malloc_trim(0);
    {
      // "5" resets the peak RSS (VmHWM) to the current RSS (Linux 4.0+).
      std::ofstream clear("/proc/self/clear_refs");
      clear << "5";
      clear.flush();
      s.reset = clear.good() ? 1 : 0;
    }
    s.base_kb = status_kb("VmRSS");
    {
      const Result<ResimulationReport> report = resimulate_file(path, ResimulationOptions{});
      s.ok = report.ok() && report->ok();
    }
    s.peak_kb = status_kb("VmHWM");
    (void)!::write(fds[1], &s, sizeof s);
    ::_exit(0);
  }
  ::close(fds[1]);
  if (pid > 0) {
    if (::read(fds[0], &sample, sizeof sample) != static_cast<ssize_t>(sizeof sample)) {
      sample = PeakSample{};
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  ::close(fds[0]);
  return sample;
}

void BM_ReplayTracePeakMemory(benchmark::State& state) {
  const BenchTrace& t = trace_of(state, static_cast<std::size_t>(state.range(0)));
  if (!t.error.empty()) return;
  PeakSample s;
  for (auto _ : state) {
    s = replay_peak_in_child(t.path);
    if (s.ok == 0 || s.peak_kb < 0 || s.base_kb < 0) {
      state.SkipWithError("the replay in the child failed");
      return;
    }
  }
  // Rates would be the parent's: it only waits. The time is the child's replay.
  state.counters["events"] = static_cast<double>(t.events);
  state.counters["rss_base_MiB"] = static_cast<double>(s.base_kb) / 1024.0;
  state.counters["peak_growth_MiB"] = static_cast<double>(s.peak_kb - s.base_kb) / 1024.0;
  state.counters["peak_reset"] = static_cast<double>(s.reset);
}
BENCHMARK(BM_ReplayTracePeakMemory)
    ->Arg(100'000)
    ->Arg(static_cast<std::int64_t>(kMillion))
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace capsim
