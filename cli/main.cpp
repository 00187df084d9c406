// The capsim command line: argument parsing and output formatting only.
//
// Every failure a user can cause (a bad flag, a value out of range, an unknown
// subcommand, bad input to the job) ends as one line on stderr,
// "capsim: error: <message>", and exit code 2. Nothing reaches the user as a
// stack trace.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "cli/check_command.hpp"
#include "cli/export_command.hpp"
#include "cli/input_guards.hpp"
#include "cli/render_commands.hpp"
#include "cli/rerecord_report.hpp"
#include "cli/trace_commands.hpp"
#include "model/address.hpp"
#include "model/digest.hpp"
#include "render/draw_graph.hpp"
#include "render/graphviz_output.hpp"
#include "sim/adam_replay_job.hpp"
#include "sim/capture_scenarios.hpp"
#include "sim/scenarios.hpp"
#include "traces/replay.hpp"

namespace {

using capsim::cli::fail;

// CLI11 messages can span lines; the contract is one line.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

int print_run(const capsim::AdamReplayJobOptions& options) {
  auto report = capsim::run_adam_replay_job(options);
  if (!report) return fail(report.error().message);
  fmt::print("capsim run: one recorded AdamW step over {} params of {} floats, seed {}\n",
             options.params, options.numel, options.seed);
  fmt::print("graph '{}': {} steps, {} baked pointers\n", report->graph_name, report->program_steps,
             report->baked_pointers);
  for (const auto& step : report->steps) {
    fmt::print("step {}: replay, copy-in {} bytes, params {}\n", step.step, step.copy_in_bytes,
               capsim::digest_hex(step.param_digest));
  }
  fmt::print("pool: {} live blocks, {} bytes allocated; {} segments mapped\n",
             report->pool_live_blocks, report->pool_allocated_bytes, report->segments);
  fmt::print("steps replayed: {}\n", report->steps.size());
  return 0;
}

int list_scenarios() {
  for (const capsim::Scenario& s : capsim::builtin_scenarios()) {
    fmt::print("{:<48} {}\n", s.name, s.mirrors);
  }
  return 0;
}

// Prints a built-in scenario's events and expectations. Exit 0 when every
// expectation holds, 1 when one does not (a bug in capsim), 2 for a bad name.
int print_scenario(const std::string& name) {
  const capsim::Scenario* s = capsim::find_scenario(name);
  if (s == nullptr) {
    return fail(fmt::format("unknown scenario '{}'{} (see capsim scenario --list)", name,
                            capsim::cli::did_you_mean(name, capsim::cli::scenario_names())));
  }
  const capsim::CudagraphConfig& c = s->options.config;
  fmt::print("scenario {}\n", s->name);
  fmt::print("mirrors {}\n", s->mirrors);
  fmt::print("about {}\n", s->description);
  fmt::print(
      "config inline_inbuilt_nn_modules={} cudagraph_support_input_mutation={} "
      "cudagraph_unexpected_rerecord_limit={} skip_cudagraph_warmup={} "
      "force_cudagraphs_warmup={} slow_path_cudagraph_asserts={} zero_grad_static_error={} "
      "plain_api={}\n",
      c.inline_inbuilt_nn_modules, c.cudagraph_support_input_mutation,
      c.cudagraph_unexpected_rerecord_limit, c.skip_cudagraph_warmup, c.force_cudagraphs_warmup,
      c.slow_path_cudagraph_asserts, c.zero_grad_static_error, c.plain_api);
  const capsim::ScenarioRun run = capsim::run_scenario(*s);
  for (const capsim::Event& e : run.events) {
    fmt::print("{}\n", capsim::format_event(e));
    if (auto moved = capsim::cli::explain_rerecord(s->program, e)) fmt::print("  ({})\n", *moved);
  }
  if (!run.status) return fail(fmt::format("scenario '{}': {}", name, run.status.error().message));
  for (const capsim::Expectation& e : run.expectations) {
    fmt::print("expect {}: {} (got {}) {}\n", e.what, e.expected, e.actual,
               e.holds() ? "ok" : "FAIL");
  }
  return run.all_hold() ? 0 : 1;
}

// Prints a compiled-autograd scenario: cache decisions, MetadataReads and the
// captured graphs, then `metadata reads: N`. A capture that PyTorch itself
// would reject (the legacy non-traceable CppNode) prints `raised: ...`.
int print_capture(const std::string& name, const std::string& mode_name) {
  const capsim::CaptureScenario* s = capsim::find_capture_scenario(name);
  // The corpus names its traces ca_NAME.jsonl; take that name too.
  if (s == nullptr && name.starts_with("ca_")) s = capsim::find_capture_scenario(name.substr(3));
  if (s == nullptr) {
    std::vector<std::string> known;
    for (const capsim::CaptureScenario& c : capsim::builtin_capture_scenarios()) {
      known.push_back(c.name);
    }
    return fail(fmt::format("unknown capture scenario '{}'{} (see capsim capture --list)", name,
                            capsim::cli::did_you_mean(name, known)));
  }
  const capsim::CaptureMode mode =
      mode_name == "legacy" ? capsim::CaptureMode::kLegacy : capsim::CaptureMode::kFunctional;
  fmt::print("capture {} mode={}\n", s->name, capsim::capture_mode_name(mode));
  fmt::print("mirrors {}\n", s->mirrors);
  fmt::print("about {}\n", s->description);
  capsim::CaptureRunLog log;
  const capsim::Status status = s->run(mode, log);
  for (const std::string& line : log.lines) fmt::print("{}\n", line);
  if (!status) fmt::print("raised: {}\n", status.error().message);
  fmt::print("captures: {} (PyTorch's test expects {}), cache hits: {}\n", log.captures,
             s->expected_captures, log.hits);
  if (mode == capsim::CaptureMode::kFunctional) {
    fmt::print("compiled backwards run: {}, grads differing from eager: {}\n", log.executed,
               log.mismatches);
  }
  fmt::print("metadata reads: {}\n", log.metadata_reads);
  return log.mismatches == 0 ? 0 : 1;
}

int run_main(int argc, char** argv) {
  CLI::App app{"capsim: a deterministic simulator of graph capture semantics"};
  app.require_subcommand(1);
  // Every option's default in --help (subcommands copy this when made).
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", fmt::format("capsim {}", capsim::kCapsimVersion));

  capsim::AdamReplayJobOptions run_options;
  CLI::App* run = app.add_subcommand(
      "run", "Record one AdamW step as a step program and replay it (the main job)");
  run->add_option("--steps", run_options.steps, "Replays to run")
      ->check(CLI::Range(std::int64_t{1}, capsim::kMaxJobSteps));
  run->add_option("--seed", run_options.seed, "Seed of the one RNG")
      ->check(capsim::cli::unsigned_64_bit());
  run->add_option("--numel", run_options.numel, "Elements per param")
      ->check(CLI::Range(std::int64_t{1}, capsim::kMaxJobNumel));
  run->add_option("--params", run_options.params, "Number of params")
      ->check(CLI::Range(std::int64_t{1}, capsim::kMaxJobParams));
  run->add_flag("--poison", run_options.poison_freed, "Poison freed device memory");

  std::string scenario_name;
  bool scenario_list = false;
  CLI::App* scenario =
      app.add_subcommand("scenario", "Print the events of a built-in cudagraph-trees scenario");
  scenario->add_option("name", scenario_name, "Scenario name (see --list)");
  scenario->add_flag("--list", scenario_list, "List the built-in scenarios");

  std::string capture_name;
  std::string capture_mode = "functional";
  bool capture_list = false;
  CLI::App* capture = app.add_subcommand(
      "capture", "Print compiled autograd's capture of a built-in autograd scenario");
  capture->add_option("name", capture_name, "Scenario name (see --list)");
  capture->add_option("--mode", capture_mode, "functional (after PR 144707) or legacy (before)")
      ->check(CLI::IsMember({"functional", "legacy"}));
  capture->add_flag("--list", capture_list, "List the built-in autograd scenarios");

  std::string record_name, record_output;
  CLI::App* record =
      app.add_subcommand("record", "Write the trace of a built-in scenario (docs/trace-format.md)");
  record->add_option("scenario", record_name, "Scenario name (see capsim scenario --list)")
      ->required();
  record->add_option("-o,--output", record_output, "The trace file to write")->required();
  std::string record_backend = "cpu";
  record
      ->add_option("--backend", record_backend,
                   "cpu (the model), host or cuda (the model beside that reference backend; "
                   "docs/cuda-reference.md)")
      ->check(CLI::IsMember({"cpu", "host", "cuda"}));

  std::vector<std::string> replay_files;
  bool replay_json = false;
  capsim::ReplayOptions replay_options;
  CLI::App* replay = app.add_subcommand(
      "replay", "Re-simulate recorded traces; report the first divergence and every violation");
  replay->add_option("files", replay_files, "Trace files")->required();
  replay->add_flag("--json", replay_json, "Print a machine-readable report");
  replay
      ->add_option("--context", replay_options.context, "Matching events shown before a divergence")
      ->check(CLI::Range(std::size_t{0}, capsim::kMaxReplayContext));
  capsim::cli::add_memory_budget_option(replay, replay_options.memory_budget_bytes);

  std::string replay_dot;
  replay->add_option("--dot", replay_dot,
                     "On a divergence, draw the recorded tree against the predicted one "
                     "(FILE.dot, .svg or .png; one trace only)");

  capsim::cli::DrawOptions draw_options;
  auto add_draw_options = [&draw_options](CLI::App* sub) {
    sub->add_option("--graph", draw_options.graph,
                    "KIND[:ID]: tree, tree:predicted, program:G, autograd:B, fx:B, pool[:LINE]");
    sub->add_option("-o,--output", draw_options.output,
                    "FILE.dot, FILE.svg or FILE.png (default: DOT on stdout)");
    sub->add_flag("--changes-only", draw_options.changes_only,
                  "Keep only what changed and its neighbours");
    sub->add_option("--layout-timeout", draw_options.timeout_s, "Seconds Graphviz may lay out")
        ->check(CLI::Range(std::uint32_t{1}, capsim::kMaxLayoutTimeout));
    sub->add_option("--max-nodes", draw_options.max_nodes,
                    "Fold or cut drawings above this many nodes before a layout")
        ->check(CLI::Range(std::size_t{10}, capsim::kMaxDrawNodes));
    capsim::cli::add_memory_budget_option(sub, draw_options.memory_budget_bytes);
  };
  std::string render_trace;
  bool render_list = false;
  CLI::App* render = app.add_subcommand(
      "render",
      "Draw a graph of a trace: its tree, a recording, a capture, the pool (docs/gallery.md)");
  render->add_option("trace", render_trace, "The trace (TRACE or TRACE#KIND[:ID])")->required();
  render->add_flag("--list", render_list, "List the graphs the trace has");
  add_draw_options(render);

  std::string diff_a, diff_b;
  bool diff_predicted = false;
  CLI::App* diff = app.add_subcommand(
      "diff", "Draw the differences of two graphs (two traces, TRACE#KIND:ID, or --predicted)");
  diff->add_option("a", diff_a, "The first graph: TRACE or TRACE#KIND[:ID]")->required();
  diff->add_option("b", diff_b, "The second graph (left out with --predicted)");
  diff->add_flag("--predicted", diff_predicted,
                 "The trace's recorded tree against capsim's own replay of it");
  add_draw_options(diff);

  std::string export_chrome, export_trace;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "Write a trace as a Chrome trace for Perfetto (docs/chrome-export.md)");
  export_cmd->add_option("--chrome", export_chrome, "The Chrome trace file to write")->required();
  export_cmd->add_option("trace", export_trace, "The capsim trace to export")->required();
  std::uint64_t export_budget = capsim::kDefaultMemoryBudget;
  capsim::cli::add_memory_budget_option(export_cmd, export_budget);

  capsim::cli::CheckCommandOptions check_options;
  std::string check_shard = "0/1";
  std::uint64_t check_case = 0;
  CLI::App* check = app.add_subcommand(
      "check", "Run the property catalogue over generated cases (docs/properties.md)");
  check->add_option("--property", check_options.run.patterns,
                    "Only properties matching this shell glob (repeatable)");
  check->add_option("--cases", check_options.run.cases, "Cases per property")
      ->check(CLI::Range(std::uint64_t{1}, capsim::kMaxCases));
  check->add_option("--seed", check_options.run.seed, "The run's seed")
      ->check(capsim::cli::unsigned_64_bit());
  check->add_option("--shard", check_shard, "K/N: run the cases whose index is K modulo N");
  check->add_option("--max-size", check_options.run.max_size, "The largest case size")
      ->check(CLI::Range(0, capsim::kMaxMaxSize));
  CLI::Option* check_case_option =
      check->add_option("--case", check_case, "Run only this case index (a reproduction)")
          ->check(capsim::cli::unsigned_64_bit());
  check->add_flag("--controls,!--no-controls", check_options.run.controls,
                  "Run every negative control after the properties (the default); fail if one "
                  "is not caught");
  check->add_flag("--list", check_options.list, "Print the catalogue");
  check->add_flag("--json", check_options.json, "Print the report as JSON");
  check->add_option("--junit", check_options.junit, "Write a JUnit XML report to this file");
  check->add_option("--save-failures", check_options.save_failures,
                    "Write each failure's counterexample (text, and a trace) into this folder");
  check->add_flag("!--no-progress", check_options.progress, "No progress bar on stderr");
  check_options.run.regressions_dir = CAPSIM_REGRESSIONS_DIR;
  check
      ->add_option("--regressions", check_options.run.regressions_dir,
                   "The failure corpus to replay first (default: the source tree's "
                   "properties/regressions)")
      ->check(CLI::ExistingDirectory);
  check->add_flag_callback(
      "--no-regressions", [&check_options] { check_options.run.regressions_dir.clear(); },
      "Replay no saved counterexamples");
  check->add_flag("--stats", check_options.stats, "Print how often each coverage probe was hit");
  check->add_flag("--require-probes", check_options.require_probes,
                  "Fail when a probe that is not rare was never hit");
  check
      ->add_option("--backend", check_options.backend,
                   "cpu (the model), host or cuda (adds reference.agrees: the model beside that "
                   "reference backend; docs/cuda-reference.md)")
      ->check(CLI::IsMember({"cpu", "host", "cuda"}));

  app.add_subcommand("version", "Print the version (as --version)");

  // CLI11 would call an unknown word "extra" and ask for a subcommand; say what
  // happened instead.
  if (argc >= 2 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      found = found || sub->check_name(argv[1]);
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      return fail(
          fmt::format("unknown subcommand '{}' (known: {}; see capsim --help)", argv[1], known));
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::printf("%s\n", e.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    return fail(one_line(e.what()));
  }
  if (scenario->parsed()) {
    if (scenario_list) return list_scenarios();
    if (scenario_name.empty()) return fail("scenario: give a NAME or --list");
    return print_scenario(scenario_name);
  }
  if (capture->parsed()) {
    if (capture_list) {
      for (const capsim::CaptureScenario& c : capsim::builtin_capture_scenarios()) {
        fmt::print("{:<36} {}\n", c.name, c.mirrors);
      }
      return 0;
    }
    if (capture_name.empty()) return fail("capture: give a NAME or --list");
    return print_capture(capture_name, capture_mode);
  }
  if (record->parsed()) {
    return capsim::cli::record_command(record_name, record_output, record_backend);
  }
  if (replay->parsed()) {
    if (!replay_dot.empty()) {
      if (replay_files.size() != 1) return fail("replay --dot: give exactly one trace");
      if (auto f = capsim::output_format_of(replay_dot); !f) return fail(f.error().message);
      if (int refused = capsim::cli::refuse_outputs_onto_inputs(
              capsim::cli::drawing_outputs(replay_dot), replay_files)) {
        return refused;
      }
    }
    const int replayed = capsim::cli::replay_command(replay_files, replay_json, replay_options);
    if (replayed != 1 || replay_dot.empty()) return replayed;
    const int drawn = capsim::cli::divergence_dot(replay_files[0], replay_dot,
                                                  replay_options.memory_budget_bytes);
    return drawn == 0 ? replayed : drawn;
  }
  if (render->parsed()) {
    return capsim::cli::render_command(render_trace, render_list, draw_options);
  }
  if (diff->parsed()) {
    return capsim::cli::diff_command(diff_a, diff_b, diff_predicted, draw_options);
  }
  if (export_cmd->parsed()) {
    return capsim::cli::export_command(export_chrome, export_trace, export_budget);
  }
  if (check->parsed()) {
    unsigned k = 0, n = 0;
    char rest = 0;
    if (std::sscanf(check_shard.c_str(), "%u/%u%c", &k, &n, &rest) != 2 || n == 0 || k >= n ||
        n > capsim::kMaxShards) {
      return fail(fmt::format("--shard '{}': expected K/N with 0 <= K < N <= {}", check_shard,
                              capsim::kMaxShards));
    }
    check_options.run.shard = k;
    check_options.run.shards = n;
    if (check_case_option->count() > 0) check_options.run.only_case = check_case;
    return capsim::cli::check_command(check_options);
  }
  if (app.got_subcommand("version")) {
    fmt::print("capsim {}\n", capsim::kCapsimVersion);
    return 0;
  }
  return print_run(run_options);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return capsim::cli::finish_stdout(run_main(argc, argv));
  } catch (const std::exception& e) {
    // fmt::print throws when stdout cannot take its bytes (a full disk).
    if (std::ferror(stdout)) return capsim::cli::finish_stdout(0);
    // A library bug, not user input; still one line, never a stack trace.
    std::fprintf(stderr, "capsim: internal error: %s\n", one_line(e.what()).c_str());
    return 70;
  }
}
