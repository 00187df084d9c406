// Throughput of capsim-trace files: reading, replaying, and the memory replay
// needs as a trace grows. The figures are recorded in docs/performance.md
// ("Traces").
//
// The trace is synthetic (synthetic_trace.hpp) and built once per size,
// lazily, into a temporary file (removed at exit).
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
//  - BM_ParseTraceLinesOnDemand: the same lines through simdjson's On-Demand
//    parser, every value touched: what a reader without the DOM could save.
//  - BM_ReplayTrace: resimulate_file over the 1M-event file (re-simulation with
//    verify_replays on, every event compared). events/s.
//  Replays too large for a file, and their peak memory, are in
//  bench_trace_stream.cpp.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <system_error>

#include "synthetic_trace.hpp"
#include "traces/format/trace_reader.hpp"
#include "traces/simulation/resimulation.hpp"

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
    bench::SyntheticTrace written;
    const Status s = bench::write_synthetic_trace(t.path, {min_events}, written);
    if (!s) t.error = s.error().message;
    t.bytes = written.bytes;
    t.lines = written.lines;
    t.actions = written.actions;
    t.events = written.events;
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
// (traces/format/line_fast.hpp), off for the general path alone.
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

// The floors' shared loop: `parse_line` over every line of the 10^6-event
// file, read with getline, timed. It returns false to refuse a line, which
// skips the run with `refused`.
template <typename ParseLine>
void time_line_parse(benchmark::State& state, const char* refused, ParseLine parse_line) {
  const BenchTrace& t = trace_of(state, kMillion);
  if (!t.error.empty()) return;
  for (auto _ : state) {
    std::ifstream in(t.path, std::ios::binary);
    std::string line;
    std::size_t lines = 0;
    while (std::getline(in, line)) {
      if (!parse_line(line)) {
        state.SkipWithError(refused);
        return;
      }
      ++lines;
    }
    if (lines != t.lines) {
      state.SkipWithError("getline saw another number of lines than were written");
      return;
    }
  }
  set_trace_counters(state, t);
}

void BM_ParseTraceLinesNlohmann(benchmark::State& state) {
  time_line_parse(state, "nlohmann refused a line", [](const std::string& line) {
    const Json j = Json::parse(line);
    benchmark::DoNotOptimize(j.size());
    return true;
  });
}
BENCHMARK(BM_ParseTraceLinesNlohmann)->Unit(benchmark::kMillisecond);

// The floor the issue names: the same lines through the fastest JSON parser
// Debian packages, simdjson's DOM parser (one parser, reused), and nothing
// else.
void BM_ParseTraceLinesSimdjson(benchmark::State& state) {
  simdjson::dom::parser parser;
  time_line_parse(state, "simdjson refused a line", [&](std::string& line) {
    line.reserve(line.size() + simdjson::SIMDJSON_PADDING);
    simdjson::dom::element root;
    if (parser.parse(line.data(), line.size(), false).get(root) != simdjson::SUCCESS) return false;
    benchmark::DoNotOptimize(root);
    return true;
  });
}
BENCHMARK(BM_ParseTraceLinesSimdjson)->Unit(benchmark::kMillisecond);

// Every scalar of a value read through On-Demand (numbers as what they are,
// strings unescaped), nested arrays and objects walked: what a reader that
// builds its Event or Action straight from the line must do at the least.
simdjson::error_code touch_value(simdjson::ondemand::value v, int depth);
simdjson::error_code touch_fields(simdjson::ondemand::object o, int depth) {
  for (auto field : o) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    benchmark::DoNotOptimize(key);
    simdjson::ondemand::value v;
    if (auto e = field.value().get(v)) return e;
    if (auto e = touch_value(v, depth + 1)) return e;
  }
  return simdjson::SUCCESS;
}
simdjson::error_code touch_value(simdjson::ondemand::value v, int depth) {
  if (depth > 64) return simdjson::DEPTH_ERROR;
  simdjson::ondemand::json_type type;
  if (auto e = v.type().get(type)) return e;
  switch (type) {
    case simdjson::ondemand::json_type::object: {
      simdjson::ondemand::object o;
      if (auto e = v.get_object().get(o)) return e;
      return touch_fields(o, depth);
    }
    case simdjson::ondemand::json_type::array: {
      simdjson::ondemand::array a;
      if (auto e = v.get_array().get(a)) return e;
      for (auto item : a) {
        simdjson::ondemand::value x;
        if (auto e = item.get(x)) return e;
        if (auto e = touch_value(x, depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case simdjson::ondemand::json_type::number: {
      double d = 0;
      if (auto e = v.get_double().get(d)) return e;
      benchmark::DoNotOptimize(d);
      return simdjson::SUCCESS;
    }
    case simdjson::ondemand::json_type::string: {
      std::string_view text;
      if (auto e = v.get_string().get(text)) return e;
      benchmark::DoNotOptimize(text);
      return simdjson::SUCCESS;
    }
    case simdjson::ondemand::json_type::boolean: {
      bool b = false;
      if (auto e = v.get_bool().get(b)) return e;
      benchmark::DoNotOptimize(b);
      return simdjson::SUCCESS;
    }
    case simdjson::ondemand::json_type::null: return v.is_null().error();
    default: return simdjson::INCORRECT_TYPE;
  }
}

// The same lines through simdjson's On-Demand parser, every value touched:
// not a target's floor (that is the DOM parse above), but the measure of
// what a reader that skips the DOM's tape could save (docs/performance.md,
// the parse floors).
void BM_ParseTraceLinesOnDemand(benchmark::State& state) {
  simdjson::ondemand::parser parser;
  time_line_parse(state, "simdjson On-Demand refused a line", [&](std::string& line) {
    const std::size_t n = line.size();
    line.reserve(n + simdjson::SIMDJSON_PADDING);
    simdjson::ondemand::document doc;
    simdjson::ondemand::object root;
    return parser.iterate(line.data(), n, line.capacity()).get(doc) == simdjson::SUCCESS &&
           doc.get_object().get(root) == simdjson::SUCCESS &&
           touch_fields(root, 0) == simdjson::SUCCESS;
  });
}
BENCHMARK(BM_ParseTraceLinesOnDemand)->Unit(benchmark::kMillisecond);

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

}  // namespace
}  // namespace capsim
