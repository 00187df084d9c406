// The check subcommand (see check_command.hpp).
#include "cli/check_command.hpp"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "cli/check_jobs.hpp"
#include "cli/check_report.hpp"
#include "cli/progress.hpp"
#include "cli/reference_backends.hpp"
#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "properties/catalogue.hpp"
#include "render/dot_writer.hpp"
#include "render/graph_diff.hpp"
#include "render/graphviz_output.hpp"
#include "render/trace_graphs.hpp"
#include "traces/format/trace_writer.hpp"

namespace capsim::cli {

namespace {

inline constexpr int kExitFailed = 1;
inline constexpr int kExitInterrupted = 130;

// Set by SIGINT, polled between cases. The only global in capsim: a signal
// handler can reach nothing else.
volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_sigint(int) {
  g_interrupted = 1;
}

void print_catalogue(std::span<const Property> catalogue) {
  for (const Property& p : catalogue) {
    fmt::print("{}\n    {}\n    spec: {}\n    generator: {}\n    control: {} (fault {})\n", p.name,
               p.statement, p.spec, p.generator, p.control, fault_name(p.fault));
  }
}

// <stem>.dot beside a saved trace: its tree, drawn from the recorded events;
// when the sound model's replay predicts another tree (a control's trace
// comes from a broken model), the diff of the two instead. DOT only: a layout
// is for the person who opens it (`dot -Tsvg`, or capsim render).
Status save_drawing(const std::string& stem) {
  CAPSIM_TRY_ASSIGN(const TraceGraphs graphs, collect_trace_graphs(stem + ".jsonl"));
  CAPSIM_TRY_ASSIGN(const TreeAgainstPrediction trees, tree_against_prediction(graphs));
  // DOT needs no layout, so nothing can fail but the writing itself.
  CAPSIM_TRY(write_drawing(to_dot(trees.drawing()), stem + ".dot", {}));
  return {};
}

// The entries split at their newlines: a file writer takes one line each, and
// a failure's message or counterexample holds several.
std::vector<std::string> one_per_line(const std::vector<std::string>& entries) {
  std::vector<std::string> lines;
  for (const std::string& entry : entries) {
    std::size_t start = 0;
    for (std::size_t nl; (nl = entry.find('\n', start)) != std::string::npos; start = nl + 1) {
      lines.push_back(entry.substr(start, nl - start));
    }
    lines.push_back(entry.substr(start));
  }
  return lines;
}

// One counterexample, as <stem>.txt (what the text report printed) and, where
// the input is a program, <stem>.jsonl (its run as a trace, which `capsim
// replay` re-simulates) and <stem>.dot (its drawing, above).
Status save_case(const std::string& stem, const std::vector<std::string>& text,
                 const CaseResult& failure) {
  CAPSIM_TRY(write_trace_file(stem + ".txt", one_per_line(text)));
  if (!failure.trace) return {};
  Result<std::vector<std::string>> trace = failure.trace();
  if (!trace) {
    return make_error(fmt::format("{}.jsonl: the counterexample does not record: {}", stem,
                                  trace.error().message));
  }
  CAPSIM_TRY(write_trace_file(stem + ".jsonl", *trace));
  return save_drawing(stem);
}

// Every failing property's counterexample as DIR/<name>.case<I>.*, and every
// caught control's as DIR/<name>.control.case<I>.* (its trace comes from the
// broken model, so the sound model's replay diverges from it).
Status save_failures(const std::string& dir, const CheckReport& report) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(fmt::format("--save-failures {}: {}", dir, ec.message()));
  const std::filesystem::path base(dir);
  for (const PropertyOutcome& p : report.properties) {
    if (!p.failed) continue;
    CAPSIM_TRY(save_case((base / fmt::format("{}.case{}", p.property->name, p.case_index)).string(),
                         property_lines(report.options, p), p.failure));
  }
  for (const ControlOutcome& c : report.controls) {
    if (!c.caught()) continue;
    std::vector<std::string> text = control_lines(c);
    text.push_back(fmt::format("        {}", c.failure.message));
    text.push_back("        the smallest failing input:");
    text.push_back(c.failure.counterexample);
    CAPSIM_TRY(save_case(
        (base / fmt::format("{}.control.case{}", c.property->name, c.case_index)).string(), text,
        c.failure));
  }
  return {};
}

void print_lines(std::FILE* out, const std::vector<std::string>& lines) {
  for (const std::string& l : lines) fmt::print(out, "{}\n", l);
  std::fflush(out);
}

// Ctrl-C stops the run between cases (the report says so), for as long as
// this lives; the previous handler comes back after.
class SigintStops {
 public:
  SigintStops() {
    g_interrupted = 0;
    struct sigaction action {};
    action.sa_handler = on_sigint;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &previous_);
  }
  ~SigintStops() { ::sigaction(SIGINT, &previous_, nullptr); }
  SigintStops(const SigintStops&) = delete;
  SigintStops& operator=(const SigintStops&) = delete;

 private:
  struct sigaction previous_ {};
};

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What the runner tells as it goes: the progress bar, and each regression,
// property and control as it ends (nothing but the bar with --json).
CheckHooks printing_hooks(const CheckCommandOptions& options, TerminalProgress& progress,
                          bool& controls_header) {
  CheckHooks hooks;
  hooks.on_case = [&progress](const Property& p, bool control, std::uint64_t done,
                              std::uint64_t total) {
    progress.update(std::string(control ? "control " : "") + std::string(p.name), done, total);
  };
  hooks.on_regression = [&](const RegressionOutcome& r) {
    progress.clear();
    if (!options.json) print_lines(options.report_stream(), regression_lines(r));
  };
  hooks.on_property = [&](const PropertyOutcome& p) {
    progress.clear();
    if (!options.json) print_lines(options.report_stream(), property_lines(options.run, p));
  };
  hooks.on_control = [&](const ControlOutcome& c) {
    progress.clear();
    if (options.json) return;
    if (!controls_header) {
      fmt::print(options.report_stream(),
                 "negative controls (each must make its property fail):\n");
      controls_header = true;
    }
    print_lines(options.report_stream(), control_lines(c));
  };
  hooks.should_stop = [] { return g_interrupted != 0; };
  hooks.clock = monotonic_seconds;
  return hooks;
}

// What printing_hooks prints as a run goes, all at once, for a report that
// came back from workers.
void print_report_lines(const CheckCommandOptions& options, const CheckReport& report) {
  if (options.json) return;
  for (const RegressionOutcome& r : report.regressions)
    print_lines(options.report_stream(), regression_lines(r));
  for (const PropertyOutcome& p : report.properties)
    print_lines(options.report_stream(), property_lines(options.run, p));
  if (!report.controls.empty()) {
    fmt::print(options.report_stream(), "negative controls (each must make its property fail):\n");
  }
  for (const ControlOutcome& c : report.controls)
    print_lines(options.report_stream(), control_lines(c));
}

// The summary (or the JSON report), the probes, the JUnit file and the saved
// failures, then the exit code.
int finish_check(const CheckCommandOptions& options, const CheckReport& report,
                 const std::vector<const Property*>& selected, double seconds) {
  if (options.json) {
    fmt::print(options.report_stream(), "{}\n", printable_json(report_json(report, true), 2));
  } else {
    fmt::print(options.report_stream(), "{}\n", summary_line(report, seconds));
    if (options.stats) print_lines(options.report_stream(), probe_lines(report));
  }
  const std::vector<std::string_view> missed = report.missed_probes();
  const bool probes_missed = options.require_probes && !report.interrupted && !missed.empty();
  if (probes_missed) {
    std::string names;
    for (std::string_view m : missed) names += fmt::format("{}{}", names.empty() ? "" : ", ", m);
    stderr_line(fmt::format("capsim check: coverage probes never hit: {} (see --stats)", names));
  }
  std::fflush(options.report_stream());
  if (!options.junit.empty()) {
    const Status s = write_trace_file(options.junit, one_per_line(junit_lines(report, selected)));
    if (!s) return fail(s.error().message);
  }
  if (!options.save_failures.empty()) {
    const Status s = save_failures(options.save_failures, report);
    if (!s) return fail(s.error().message);
  }
  if (report.interrupted) return kExitInterrupted;
  return report.ok() && !probes_missed ? 0 : kExitFailed;
}

}  // namespace

std::FILE* CheckCommandOptions::report_stream() const {
  return junit == kStdoutPath ? stderr : stdout;
}

int check_command(const CheckCommandOptions& options) {
  if (Status s = check_backend_usable(options.backend); !s) return fail(s.error().message);
  // Beside a reference backend, the catalogue gains reference.agrees.
  std::vector<Property> catalogue =
      options.run.inject == Fault::kNone && !options.run.torch
          ? property_catalogue()
          : catalogue_with(CaseSetting{options.run.inject, options.run.torch});
  if (options.backend != "cpu") {
    catalogue = catalogue_with_reference(std::move(catalogue), mirror_factory(options.backend),
                                         kMirrorControl,
                                         CaseSetting{options.run.inject, options.run.torch});
  }
  if (options.list) {
    print_catalogue(catalogue);
    return 0;
  }
  Result<std::vector<const Property*>> selected =
      select_properties(catalogue, options.run.patterns);
  if (!selected) return fail(selected.error().message);

  const CheckOptions& o = options.run;
  if (!options.json) {
    fmt::print(
        options.report_stream(),
        "capsim check: {} properties, {} cases each, seed {}, shard {}/{}, max size {}{}{}\n",
        selected->size(), o.only_case ? 1 : o.cases, o.seed, o.shard, o.shards, o.max_size,
        o.torch ? fmt::format(", torch {}", torch_profile_name(*o.torch)) : "",
        options.run.inject == Fault::kNone
            ? ""
            : fmt::format(", every sound case with fault {}", fault_name(options.run.inject)));
    std::fflush(options.report_stream());
  }
  Result<CheckReport> report = make_error("not run");
  double seconds = 0;
  {
    const SigintStops stops;
    TerminalProgress progress(options.progress);
    bool controls_header = false;
    const auto start = std::chrono::steady_clock::now();
    if (options.jobs > 1) {
      const JobsOptions jobs{options.jobs, !options.save_failures.empty(),
                             [] { return g_interrupted != 0; }, monotonic_seconds};
      report = run_check_in_workers(catalogue, o, jobs);
      if (report) print_report_lines(options, *report);
    } else {
      report = run_check(catalogue, o, printing_hooks(options, progress, controls_header));
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress.clear();
  }
  if (!report) return fail(report.error().message);
  return finish_check(options, *report, *selected, seconds);
}

}  // namespace capsim::cli
