// Replay of traces too large to keep: memory, linearity and bad input.
//
// Each run forks a child that replays a synthetic trace (synthetic_trace.hpp)
// from a pipe while its own child writes it, so a 10^7-event trace (about
// 1.8 GB of text) never touches the disk and nothing the benchmark process
// did before counts in the replay's peak memory.
//
//  - BM_ReplayStream/<events>/damage:0: a clean replay of 10^5, 10^6 and
//    10^7 events. Counters: peak_growth_MiB (the replay child's peak RSS
//    growth, after malloc_trim and a reset of the peak through
//    /proc/self/clear_refs), replay_cpu_s (the child's CPU time; the
//    parent only waits) and events/s from it.
//  - BM_ExportStream/<events>: `capsim export --chrome` of the same clean
//    trace from the pipe, streamed through its check to /dev/null, with the
//    same counters (export_cpu_s in replay_cpu_s's place): its memory must
//    be flat as replay's, its time linear (docs/chrome-export.md).
//  - BM_ReplayStream/10000000/damage:1 and damage:2: the same trace cut in
//    the middle of a line (a killed recorder), or with one line of broken
//    JSON, after half its events. The target table of docs/performance.md
//    asks for the first error, in file:line:column form, within the time a
//    clean replay of the prefix takes: targets_report.cpp divides
//    replay_cpu_s by the clean run's time per event times the events before
//    the damage. A cut last line is a warning, not an error
//    (docs/trace-format.md §8: the prefix is the trace), so the cut trace
//    must replay cleanly and warn. The counter `error_on_damaged_line` is 1
//    when the error or warning names the damaged line with a column.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>

#include "model/output_file.hpp"
#include "synthetic_trace.hpp"
#include "traces/analyses/chrome_export_file.hpp"
#include "traces/simulation/resimulation.hpp"

namespace capsim::bench {
namespace {

// What the replay child sends back (plain bytes through a pipe).
struct StreamSample {
  long base_kb = -1;  // RSS when the replay starts
  long peak_kb = -1;  // peak RSS during the replay
  long peak_reset = 0;
  double cpu_seconds = 0;
  std::uint64_t events_matched = 0;
  bool replay_clean = false;        // the replay ended with no error, divergence or violation
  std::uint64_t chrome_events = 0;  // an export's trace events
  bool writer_ok = false;           // the writer wrote the whole (damaged) trace
  SyntheticTrace written;
  char message[512] = {};  // the replay's error, or its summary
};

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

double cpu_seconds_self() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void copy_message(StreamSample& s, const std::string& text) {
  std::strncpy(s.message, text.c_str(), sizeof s.message - 1);
}

// The writer: the whole trace into `fd`, then what it wrote into `info_fd`.
// A reader that stops at the damage closes the pipe; the write error that
// follows is expected, so only a failure before the damage counts.
[[noreturn]] void writer_main(int fd, int info_fd, const SyntheticTraceOptions& options) {
  std::signal(SIGPIPE, SIG_IGN);
  SyntheticTrace t;
  const Status s = write_synthetic_trace(fmt::format("/dev/fd/{}", fd), options, t);
  const bool ok = s.ok() || t.damaged_line != 0;
  ::close(fd);
  (void)!::write(info_fd, &t, sizeof t);
  (void)!::write(info_fd, &ok, sizeof ok);
  ::_exit(0);
}

// What the child runs on the trace as it comes through the pipe.
enum class StreamJob { kReplay, kExport };

// The replay: its verdict, the events it matched, its summary or error.
void replay_from(const std::string& path, StreamSample& s) {
  const Result<ResimulationReport> report = resimulate_file(path, ResimulationOptions{});
  if (report) {
    s.replay_clean = report->ok();
    s.events_matched = report->events_matched;
    // A cut last line is a warning (docs/trace-format.md §8): report it.
    copy_message(s, report->warnings.empty() ? report_summary(*report) : report->warnings[0]);
  } else {
    copy_message(s, report.error().message);
  }
}

// The Chrome export, streamed to /dev/null through its own check.
void export_from(const std::string& path, StreamSample& s) {
  Result<std::unique_ptr<TraceReader>> reader = TraceReader::open(path);
  Result<std::unique_ptr<OutputFile>> out = OutputFile::create("/dev/null");
  if (!reader || !out) {
    copy_message(s, !reader ? reader.error().message : out.error().message);
    return;
  }
  const ChromeExportReport r = write_chrome_export(**reader, **out);
  s.replay_clean = r.status.ok();
  s.chrome_events = r.events;
  copy_message(s, r.status ? fmt::format("{} trace events", r.events) : r.status.error().message);
}

// The child: starts the writer, replays or exports from the pipe, reports.
[[noreturn]] void replay_main(int result_fd, const SyntheticTraceOptions& options, StreamJob job) {
  StreamSample s;
  int trace[2], info[2];
  if (::pipe(trace) != 0 || ::pipe(info) != 0) ::_exit(1);
  // Freed heap inherited from earlier benchmarks would be reused without
  // counting: give it back first, so every size starts from the same state.
  ::malloc_trim(0);
  const pid_t writer = ::fork();
  if (writer == 0) {
    ::close(trace[0]);
    ::close(info[0]);
    writer_main(trace[1], info[1], options);
  }
  ::close(trace[1]);
  ::close(info[1]);
  {
    // "5" resets the peak RSS (VmHWM) to the current RSS (Linux 4.0+).
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    s.peak_reset = clear.good() ? 1 : 0;
  }
  s.base_kb = status_kb("VmRSS");
  const double start = cpu_seconds_self();
  const std::string path = fmt::format("/dev/fd/{}", trace[0]);
  if (job == StreamJob::kReplay) replay_from(path, s);
  if (job == StreamJob::kExport) export_from(path, s);
  s.cpu_seconds = cpu_seconds_self() - start;
  s.peak_kb = status_kb("VmHWM");
  ::close(trace[0]);
  if (::read(info[0], &s.written, sizeof s.written) != static_cast<ssize_t>(sizeof s.written) ||
      ::read(info[0], &s.writer_ok, sizeof s.writer_ok) !=
          static_cast<ssize_t>(sizeof s.writer_ok)) {
    s.writer_ok = false;
  }
  int status = 0;
  ::waitpid(writer, &status, 0);
  (void)!::write(result_fd, &s, sizeof s);
  ::_exit(0);
}

bool run_stream(const SyntheticTraceOptions& options, StreamSample& sample,
                StreamJob job = StreamJob::kReplay) {
  int fds[2];
  if (::pipe(fds) != 0) return false;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    replay_main(fds[1], options, job);
  }
  ::close(fds[1]);
  bool got = false;
  if (pid > 0) {
    got = ::read(fds[0], &sample, sizeof sample) == static_cast<ssize_t>(sizeof sample);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  ::close(fds[0]);
  return got;
}

// Whether `message` is "<file>:<line>:<column>: ..." with the damaged line.
bool names_line_and_column(const std::string& message, std::size_t line) {
  static const std::regex kAt(R"(^[^:]+:(\d+):(\d+): )");
  std::smatch m;
  return std::regex_search(message, m, kAt) && std::stoull(m[1].str()) == line;
}

void BM_ReplayStream(benchmark::State& state) {
  SyntheticTraceOptions options;
  options.min_events = static_cast<std::size_t>(state.range(0));
  options.damage = static_cast<TraceDamage>(state.range(1));
  options.fault_after_events = options.min_events / 2;
  StreamSample s;
  for (auto _ : state) {
    if (!run_stream(options, s) || s.peak_kb < 0 || s.base_kb < 0) {
      state.SkipWithError("the replay child failed");
      return;
    }
    if (!s.writer_ok) {
      const std::string why = fmt::format("the writer failed; the replay said: {}", s.message);
      state.SkipWithError(why.c_str());
      return;
    }
    // A cut trace replays its prefix with a warning; a malformed line stops
    // the replay with an error.
    const bool clean = options.damage != TraceDamage::kMalformedLine;
    if (clean != s.replay_clean ||
        (options.damage == TraceDamage::kNone && s.events_matched != s.written.events)) {
      state.SkipWithError(s.message);
      return;
    }
  }
  state.counters["events"] = static_cast<double>(s.written.events);
  state.counters["replay_cpu_s"] = s.cpu_seconds;
  state.counters["events/s"] = static_cast<double>(s.written.events) / s.cpu_seconds;
  state.counters["peak_growth_MiB"] = static_cast<double>(s.peak_kb - s.base_kb) / 1024.0;
  state.counters["peak_reset"] = static_cast<double>(s.peak_reset);
  state.counters["GB"] = static_cast<double>(s.written.bytes) / 1e9;
  if (options.damage != TraceDamage::kNone) {
    state.counters["error_on_damaged_line"] =
        names_line_and_column(s.message, s.written.damaged_line) ? 1 : 0;
    state.SetLabel(std::string(s.message).substr(0, 120));
  }
}
BENCHMARK(BM_ReplayStream)
    ->ArgNames({"", "damage"})
    ->Args({100'000, 0})
    ->Args({1'000'000, 0})
    ->Args({10'000'000, 0})
    ->Args({10'000'000, static_cast<std::int64_t>(TraceDamage::kCut)})
    ->Args({10'000'000, static_cast<std::int64_t>(TraceDamage::kMalformedLine)})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_ExportStream(benchmark::State& state) {
  SyntheticTraceOptions options;
  options.min_events = static_cast<std::size_t>(state.range(0));
  StreamSample s;
  for (auto _ : state) {
    if (!run_stream(options, s, StreamJob::kExport) || s.peak_kb < 0 || s.base_kb < 0) {
      state.SkipWithError("the export child failed");
      return;
    }
    if (!s.writer_ok || !s.replay_clean) {
      state.SkipWithError(s.message);
      return;
    }
  }
  state.counters["events"] = static_cast<double>(s.written.events);
  state.counters["chrome_events"] = static_cast<double>(s.chrome_events);
  state.counters["export_cpu_s"] = s.cpu_seconds;
  state.counters["events/s"] = static_cast<double>(s.written.events) / s.cpu_seconds;
  state.counters["peak_growth_MiB"] = static_cast<double>(s.peak_kb - s.base_kb) / 1024.0;
  state.counters["GB"] = static_cast<double>(s.written.bytes) / 1e9;
}
BENCHMARK(BM_ExportStream)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Arg(10'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace capsim::bench
