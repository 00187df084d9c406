// The target table of docs/performance.md, filled from one benchmark run (see
// targets_report.hpp): one function per group of rows (traces, streams, export, tree manager,
// capture, properties), each row a figure against its floor from the same run.
#include "targets_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ostream>

#include "properties/catalogue.hpp"

namespace capsim::bench {

std::optional<double> Measured::counter(const std::string& name) const {
  auto it = counters.find(name);
  if (it == counters.end()) return std::nullopt;
  return it->second;
}

void MeasuredRuns::add(const benchmark::BenchmarkReporter::Run& run) {
  // Aggregates are recomputed here (a median over the repetitions seen), so
  // the table reads the same with or without --benchmark_repetitions.
  if (run.error_occurred || run.run_type != benchmark::BenchmarkReporter::Run::RT_Iteration) {
    return;
  }
  const std::string name = run.run_name.str();
  std::vector<double>& seconds = cpu_seconds_[name];
  seconds.push_back(run.GetAdjustedCPUTime() / benchmark::GetTimeUnitMultiplier(run.time_unit));
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  Measured& m = measured_[name];
  m.cpu_seconds = sorted[sorted.size() / 2];
  m.counters.clear();
  for (const auto& [key, counter] : run.counters) m.counters[key] = counter.value;
}

const Measured* MeasuredRuns::find(const std::string& name) const {
  auto it = measured_.find(name);
  return it == measured_.end() ? nullptr : &it->second;
}

namespace {

// Seconds per item, from Google Benchmark's items_per_second counter.
std::optional<double> seconds_per_item(const Measured* m) {
  if (m == nullptr) return std::nullopt;
  const std::optional<double> rate = m->counter("items_per_second");
  if (!rate || *rate <= 0) return std::nullopt;
  return 1.0 / *rate;
}

TargetRow not_run(std::string figure, std::string target) {
  return TargetRow{std::move(figure), "not run", "", "", std::move(target), Verdict::kNotRun};
}

Verdict verdict_of(bool met) {
  return met ? Verdict::kMet : Verdict::kNotMet;
}

void trace_rows(const MeasuredRuns& runs, std::vector<TargetRow>& rows) {
  const Measured* floor = runs.find("BM_ParseTraceLinesSimdjson");
  const Measured* replay = runs.find("BM_ReplayTrace");
  const Measured* read = runs.find("BM_ReadTrace");
  const Measured* nlohmann = runs.find("BM_ParseTraceLinesNlohmann");
  const std::string floor_text =
      floor ? fmt::format("simdjson parse, {:.2f} s", floor->cpu_seconds) : "";
  if (floor && replay) {
    const double ratio = replay->cpu_seconds / floor->cpu_seconds;
    const double rate = replay->counter("events/s").value_or(0);
    rows.push_back({"trace replay, steady-state calls (1 M events)",
                    fmt::format("{:.2f} s, {:.0f} k events/s", replay->cpu_seconds, rate / 1e3),
                    floor_text, fmt::format("{:.1f}x", ratio), "≤ 3x and ≥ 1,000 k events/s",
                    verdict_of(ratio <= 3.0 && rate >= 1e6)});
  } else {
    rows.push_back(not_run("trace replay, steady-state calls (1 M events)", "≤ 3x"));
  }
  if (floor && read) {
    const double ratio = read->cpu_seconds / floor->cpu_seconds;
    rows.push_back({"trace reading alone (1 M events)", fmt::format("{:.2f} s", read->cpu_seconds),
                    floor_text, fmt::format("{:.1f}x", ratio), "≤ 1.5x", verdict_of(ratio <= 1.5)});
  } else {
    rows.push_back(not_run("trace reading alone (1 M events)", "≤ 1.5x"));
  }
  if (floor && nlohmann) {
    rows.push_back({"bare nlohmann parse (the other floor)",
                    fmt::format("{:.2f} s", nlohmann->cpu_seconds), floor_text,
                    fmt::format("{:.1f}x", nlohmann->cpu_seconds / floor->cpu_seconds), "",
                    Verdict::kInfo});
  }
}

// The largest third-party trace (bench_third_party.cpp) replayed, simulated
// as on a GPU and explained, each against the bare parse of its bytes.
void third_party_rows(const MeasuredRuns& runs, std::vector<TargetRow>& rows) {
  const Measured* floor = runs.find("BM_ThirdPartyParse");
  const struct {
    const char* bench;
    const char* figure;
  } kinds[] = {
      {"BM_ThirdPartyReplay", "third-party trace (time_sequence_prediction, 2.6 MB): replay"},
      {"BM_ThirdPartyAsOnAGpu", "third-party trace: read and simulated as on a GPU"},
      {"BM_ThirdPartyExplain", "third-party trace: read and explained"},
  };
  for (const auto& k : kinds) {
    const Measured* m = runs.find(k.bench);
    if (floor == nullptr || m == nullptr) {
      rows.push_back(not_run(k.figure, "(recorded)"));
      continue;
    }
    rows.push_back({k.figure, fmt::format("{:.1f} ms", m->cpu_seconds * 1e3),
                    fmt::format("simdjson parse, {:.1f} ms", floor->cpu_seconds * 1e3),
                    fmt::format("{:.1f}x", m->cpu_seconds / floor->cpu_seconds), "(recorded)",
                    Verdict::kInfo});
  }
}

std::string stream_name(std::size_t events, int damage) {
  return fmt::format("BM_ReplayStream/{}/damage:{}/iterations:1", events, damage);
}

// The Chrome export of the same 10^7-event trace through a pipe, against its
// replay: at most 3 times replay's CPU, memory as flat as replay's.
void export_rows(const MeasuredRuns& runs, std::vector<TargetRow>& rows) {
  const Measured* replay = runs.find(stream_name(10'000'000, 0));
  const Measured* exported = runs.find("BM_ExportStream/10000000/iterations:1");
  const std::optional<double> replay_s = replay ? replay->counter("replay_cpu_s") : std::nullopt;
  const std::optional<double> export_s =
      exported ? exported->counter("export_cpu_s") : std::nullopt;
  const std::optional<double> mib = exported ? exported->counter("peak_growth_MiB") : std::nullopt;
  if (!replay_s || !export_s || !mib || *replay_s <= 0) {
    rows.push_back(not_run("Chrome export against replay, 10^7 events (pipe)", "≤ 3x"));
    rows.push_back(not_run("Chrome export peak memory growth, 10^7 events", "≤ 64 MB"));
    return;
  }
  rows.push_back({"Chrome export against replay, 10^7 events (pipe)",
                  fmt::format("{:.1f} s", *export_s), fmt::format("replay, {:.1f} s", *replay_s),
                  fmt::format("{:.1f}x", *export_s / *replay_s), "≤ 3x",
                  verdict_of(*export_s / *replay_s <= 3.0)});
  rows.push_back({"Chrome export peak memory growth, 10^7 events", fmt::format("{:.1f} MiB", *mib),
                  "", "", "≤ 64 MB", verdict_of(*mib * 1024 * 1024 <= 64e6)});
}

// Replays through a pipe (bench_trace_stream.cpp): memory at 10^7 events,
// time per event from 10^5 to 10^7, and the damaged traces' first errors.
void stream_rows(const MeasuredRuns& runs, std::vector<TargetRow>& rows) {
  const Measured* big = runs.find(stream_name(10'000'000, 0));
  const Measured* small = runs.find(stream_name(100'000, 0));
  if (big && big->counter("peak_growth_MiB")) {
    const double mib = *big->counter("peak_growth_MiB");
    rows.push_back({"replay peak memory growth, 10^7 events", fmt::format("{:.1f} MiB", mib), "",
                    "", "≤ 64 MB", verdict_of(mib * 1024 * 1024 <= 64e6)});
  } else {
    rows.push_back(not_run("replay peak memory growth, 10^7 events", "≤ 64 MB"));
  }
  const std::optional<double> big_rate = big ? big->counter("events/s") : std::nullopt;
  const std::optional<double> small_rate = small ? small->counter("events/s") : std::nullopt;
  if (big_rate && small_rate && *big_rate > 0) {
    rows.push_back({"replay time per event, 10^5 to 10^7 events (pipe)",
                    fmt::format("{:.0f} k events/s at 10^7", *big_rate / 1e3),
                    fmt::format("{:.0f} k events/s at 10^5", *small_rate / 1e3),
                    fmt::format("{:.2f}x", *small_rate / *big_rate), "≤ 1.25x (linear)",
                    verdict_of(*small_rate / *big_rate <= 1.25)});
  } else {
    rows.push_back(not_run("replay time per event, 10^5 to 10^7 events (pipe)", "≤ 1.25x"));
  }
  for (const auto& [damage, what] : std::array<std::pair<int, const char*>, 2>{
           {{1, "its last line cut (a warning)"}, {2, "a malformed line"}}}) {
    const std::string figure =
        fmt::format("bad input: a 10^7-event trace, {} after half its events", what);
    const Measured* bad = runs.find(stream_name(10'000'000, damage));
    const std::optional<double> seconds = bad ? bad->counter("replay_cpu_s") : std::nullopt;
    const std::optional<double> prefix_events = bad ? bad->counter("events") : std::nullopt;
    const std::optional<double> located =
        bad ? bad->counter("error_on_damaged_line") : std::nullopt;
    if (!seconds || !prefix_events || !located || !big_rate) {
      rows.push_back(not_run(figure, "≤ 1.2x, file:line:column"));
      continue;
    }
    // A clean replay of the prefix, at the clean 10^7 run's rate.
    const double prefix_seconds = *prefix_events / *big_rate;
    const double ratio = *seconds / prefix_seconds;
    rows.push_back({figure,
                    fmt::format("reported after {:.1f} s{}", *seconds,
                                *located == 1 ? ", at file:line:column" : ", **line not named**"),
                    fmt::format("clean replay of the prefix, {:.1f} s", prefix_seconds),
                    fmt::format("{:.2f}x", ratio), "≤ 1.2x, file:line:column",
                    verdict_of(ratio <= 1.2 && *located == 1)});
  }
}

std::string decisions_name(int chain, int elements) {
  return fmt::format("BM_TreeDecisions/chain:{}/elements:{}", chain, elements);
}

void tree_rows(const MeasuredRuns& runs, std::vector<TargetRow>& rows) {
  // pytorch/pytorch#122029: a compiled function's own per-call overhead.
  constexpr double kTorchCallSeconds = 14e-6;
  const std::string floor_text = "PyTorch's per-call overhead, 14 µs";
  for (const auto& [chain, elements] :
       std::array<std::pair<int, int>, 6>{{{0, 1}, {1, 1}, {10, 1}, {50, 1}, {0, 64}, {50, 64}}}) {
    const std::string floats = elements == 1 ? "1 float" : fmt::format("{} floats", elements);
    const std::string figure =
        chain == 0 ? fmt::format("tree decision, independent calls, {}", floats)
                   : fmt::format("tree decision, {}-deep chains, {}", chain, floats);
    const std::optional<double> s = seconds_per_item(runs.find(decisions_name(chain, elements)));
    if (!s) {
      rows.push_back(not_run(figure, "≤ 1 µs"));
      continue;
    }
    // With 64 floats a call also runs its kernels: shown, not judged.
    rows.push_back({figure, fmt::format("{:.2f} µs/call", *s * 1e6), floor_text,
                    fmt::format("{:.2f}x", *s / kTorchCallSeconds),
                    elements == 1 ? "≤ 1 µs" : "(kernels included)",
                    elements == 1 ? verdict_of(*s <= 1e-6) : Verdict::kInfo});
  }
  const std::optional<double> deep = seconds_per_item(runs.find(decisions_name(50, 1)));
  const std::optional<double> shallow = seconds_per_item(runs.find(decisions_name(1, 1)));
  if (deep && shallow) {
    rows.push_back({"tree decision, flat in path length",
                    fmt::format("{:.2f} µs at depth 50", *deep * 1e6),
                    fmt::format("{:.2f} µs at depth 1", *shallow * 1e6),
                    fmt::format("{:.2f}x", *deep / *shallow), "≤ 1.25x",
                    verdict_of(*deep / *shallow <= 1.25)});
  } else {
    rows.push_back(not_run("tree decision, flat in path length", "≤ 1.25x"));
  }
}

void capture_rows(const MeasuredRuns& runs, std::vector<TargetRow>& rows) {
  for (const char* shape : {"chain", "tree", "wide"}) {
    std::optional<double> first_per_node, last_per_node;
    int last_n = 0;
    const Measured* largest_collect = nullptr;
    const Measured* largest_capture = nullptr;
    for (const int n : {1000, 10000, 100000, 1000000}) {
      auto name = [&](const char* phase) {
        return fmt::format("BM_CompiledAutograd_{}/{}/{}", shape, phase, n);
      };
      const std::string figure = fmt::format("compiled-autograd capture, {} of 10^{}", shape,
                                             static_cast<int>(std::lround(std::log10(n))));
      const std::optional<double> floor = seconds_per_item(runs.find(name("floor")));
      const std::optional<double> collect = seconds_per_item(runs.find(name("collect")));
      const std::optional<double> capture = seconds_per_item(runs.find(name("capture")));
      if (!floor || !collect || !capture) {
        rows.push_back(not_run(figure, "≤ 10x"));
        continue;
      }
      // Phase A (collect_backward) and the functional capture together are
      // what compiled autograd does before it runs a new graph.
      const double per_node = *collect + *capture;
      if (n == 1000) first_per_node = per_node;
      last_per_node = per_node;
      last_n = n;
      largest_collect = runs.find(name("collect"));
      largest_capture = runs.find(name("capture"));
      rows.push_back({figure, fmt::format("{:.2f} µs/node", per_node * 1e6),
                      fmt::format("topological_order, {:.0f} ns/node", *floor * 1e9),
                      fmt::format("{:.0f}x", per_node / *floor), "≤ 10x",
                      verdict_of(per_node / *floor <= 10.0)});
    }
    const std::string figure = fmt::format("compiled-autograd capture, {}: linear", shape);
    if (first_per_node && last_per_node && last_n > 1000) {
      const double growth = *last_per_node / *first_per_node;
      const std::string largest = fmt::format("10^{}", std::lround(std::log10(last_n)));
      rows.push_back({figure, fmt::format("{:.2f} µs/node at {}", *last_per_node * 1e6, largest),
                      fmt::format("{:.2f} µs/node at 10^3", *first_per_node * 1e6),
                      fmt::format("{:.2f}x", growth),
                      fmt::format("≤ 2x per node from 10^3 to {}", largest),
                      verdict_of(growth <= 2.0)});
    } else {
      rows.push_back(not_run(figure, "≤ 2x per node"));
    }
    const std::optional<double> collect_bytes =
        largest_collect ? largest_collect->counter("collect_B/node") : std::nullopt;
    const std::optional<double> fx_bytes =
        largest_capture ? largest_capture->counter("fx_B/node") : std::nullopt;
    if (collect_bytes && fx_bytes) {
      rows.push_back(
          {fmt::format("compiled-autograd capture, {}: bytes per node", shape),
           fmt::format("{:.0f} B collected + {:.0f} B of FX graph", *collect_bytes, *fx_bytes), "",
           "", fmt::format("(recorded, at 10^{})", std::lround(std::log10(last_n))),
           Verdict::kInfo});
    }
  }
}

void property_rows(const MeasuredRuns& runs, std::vector<TargetRow>& rows,
                   const std::vector<std::string>& properties) {
  for (const std::string& p : properties) {
    const std::string figure = "property cases, " + p;
    const Measured* m = runs.find("BM_PropertyCases/" + p);
    const std::optional<double> rate = m ? m->counter("cases/s") : std::nullopt;
    if (!rate) {
      rows.push_back(not_run(figure, "≥ 1,000 cases/s"));
      continue;
    }
    rows.push_back({figure, fmt::format("{:.0f} cases/s", *rate), "", "", "≥ 1,000 cases/s",
                    verdict_of(*rate >= 1000.0)});
  }
  const Measured* check = runs.find("BM_CheckDefault/iterations:1");
  if (check) {
    rows.push_back({"`capsim check` on its defaults, one core",
                    fmt::format("{:.1f} s", check->cpu_seconds), "", "", "≤ 10 s",
                    verdict_of(check->cpu_seconds <= 10.0)});
  } else {
    rows.push_back(not_run("`capsim check` on its defaults, one core", "≤ 10 s"));
  }
  const Measured* reference = runs.find("BM_PropertyCases/reference.agrees");
  const Measured* eager = runs.find("BM_PropertyCases/cudagraphs.replay-equals-eager");
  const std::string figure = "reference.agrees (host) per case";
  if (reference && eager && reference->counter("cases/s") && eager->counter("cases/s")) {
    const double ref_s = 1.0 / *reference->counter("cases/s");
    const double eager_s = 1.0 / *eager->counter("cases/s");
    rows.push_back({figure, fmt::format("{:.0f} µs", ref_s * 1e6),
                    fmt::format("replay-equals-eager, {:.0f} µs", eager_s * 1e6),
                    fmt::format("{:.1f}x", ref_s / eager_s), "≤ 3x",
                    verdict_of(ref_s / eager_s <= 3.0)});
  } else {
    rows.push_back(not_run(figure, "≤ 3x"));
  }
}

std::string_view verdict_text(Verdict v) {
  switch (v) {
    case Verdict::kMet: return "met";
    case Verdict::kNotMet: return "**not met**";
    case Verdict::kInfo: return "";
    case Verdict::kNotRun: return "not run";
  }
  return "?";
}

}  // namespace

std::vector<TargetRow> target_rows(const MeasuredRuns& runs) {
  std::vector<TargetRow> rows;
  trace_rows(runs, rows);
  third_party_rows(runs, rows);
  stream_rows(runs, rows);
  export_rows(runs, rows);
  tree_rows(runs, rows);
  capture_rows(runs, rows);
  // The catalogue's names, as bench_properties.cpp registers them.
  std::vector<std::string> properties;
  for (const Property& p : property_catalogue()) properties.emplace_back(p.name);
  properties.emplace_back("reference.agrees");
  property_rows(runs, rows, properties);
  return rows;
}

std::string format_target_table(const std::vector<TargetRow>& rows) {
  std::string out = "| figure | measured | floor | ratio | target | verdict |\n";
  out += "|---|---|---|---|---|---|\n";
  for (const TargetRow& r : rows) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", r.figure, r.measured, r.floor, r.ratio,
                       r.target, verdict_text(r.verdict));
  }
  return out;
}

void TargetsReporter::ReportRuns(const std::vector<Run>& reports) {
  ConsoleReporter::ReportRuns(reports);
  for (const Run& run : reports) runs_.add(run);
}

void TargetsReporter::Finalize() {
  ConsoleReporter::Finalize();
  GetOutputStream() << "\nThe targets, each against its floor from this run "
                       "(docs/performance.md, \"Targets\"):\n\n"
                    << format_target_table(target_rows(runs_));
}

}  // namespace capsim::bench
