// The capsim command line (command_line.hpp): every subcommand, its flags
// and what it runs; argument parsing and output formatting only.
//
// Every failure a user can cause (a bad flag, a value out of range, an unknown
// subcommand, bad input to the job) ends as one line on stderr,
// "capsim: error: <message>", and exit code 2. Nothing reaches the user as a
// stack trace.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "cli/command_line.hpp"

#include "cli/check_command.hpp"
#include "cli/check_jobs.hpp"
#include "cli/expect_command.hpp"
#include "cli/explain_command.hpp"
#include "cli/export_command.hpp"
#include "cli/input_guards.hpp"
#include "cli/path_roles.hpp"
#include "cli/progress.hpp"
#include "cli/render_commands.hpp"
#include "cli/scenario_commands.hpp"
#include "cli/simulate_command.hpp"
#include "cli/trace_commands.hpp"
#include "cli/version_tables.hpp"
#include "model/address.hpp"
#include "model/fault.hpp"
#include "model/output_file.hpp"
#include "properties/catalogue.hpp"
#include "render/draw_graph.hpp"
#include "render/graphviz_output.hpp"
#include "sim/core/decisions.hpp"
#include "sim/scenarios/adam_replay_job.hpp"
#include "sim/scenarios/autograd_scenarios.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "traces/format/input_file.hpp"
#include "traces/simulation/resimulation.hpp"

namespace {

using capsim::cli::fail;
using enum capsim::cli::PathRole;

// CLI11 messages can span lines; the contract is one line.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// capsim replay, and with --dot, the drawing of the first divergence (one
// trace only; run_main's guard has refused a drawing that would land on the
// trace).
int replay_and_draw(const std::vector<std::string>& files, bool json,
                    const capsim::ResimulationOptions& options, const std::string& dot) {
  if (!dot.empty()) {
    if (files.size() != 1) return fail("replay --dot: give exactly one trace");
    // The drawing reads the trace a second time.
    if (files[0] == capsim::kStdinPath) {
      return fail(
          "replay --dot: the drawing reads the trace again, and '-' (standard input) can "
          "be read once: give a file");
    }
    if (auto f = capsim::output_format_of(dot); !f) return fail(f.error().message);
  }
  // With the drawing on standard output, the report goes to stderr.
  const int replayed = capsim::cli::replay_command(files, json, options,
                                                   dot == capsim::kStdoutPath ? stderr : stdout);
  if (replayed != 1 || dot.empty()) return replayed;
  const int drawn = capsim::cli::divergence_dot(files[0], dot, options.memory_budget_bytes);
  return drawn == 0 ? replayed : drawn;
}

using capsim::cli::Subcommand;

Subcommand add_run(CLI::App& root) {
  auto o = std::make_shared<capsim::AdamReplayJobOptions>();
  CLI::App* sub = root.add_subcommand(
      "run", "Record one AdamW step as a step program and replay it at its baked addresses");
  sub->add_option("--steps", o->steps, "Replays to run")
      ->transform(capsim::cli::decimal())
      ->check(CLI::Range(std::int64_t{1}, capsim::kMaxJobSteps));
  sub->add_option("--seed", o->seed, "Seed of the one RNG")
      ->transform(capsim::cli::unsigned_64_bit());
  sub->add_option("--numel", o->numel, "Elements per param")
      ->transform(capsim::cli::decimal())
      ->check(CLI::Range(std::int64_t{1}, capsim::kMaxJobNumel));
  sub->add_option("--params", o->params, "Number of params")
      ->transform(capsim::cli::decimal())
      ->check(CLI::Range(std::int64_t{1}, capsim::kMaxJobParams));
  sub->add_flag("--poison", o->poison_freed, "Poison freed device memory");
  return {sub, [o] { return capsim::cli::run_command(*o); }};
}

Subcommand add_scenario(CLI::App& root) {
  struct Options {
    std::string name;
    bool list = false;
    std::optional<capsim::TorchProfile> torch;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub =
      root.add_subcommand("scenario", "Print the events of a built-in cudagraph-trees scenario");
  sub->add_option("name", o->name, "Scenario name (see --list)")->type_name("NAME");
  sub->add_flag("--list", o->list, "List the built-in scenarios");
  capsim::cli::add_torch_option(sub, o->torch);
  return {sub, [o] {
            if (o->list) return capsim::cli::list_scenarios();
            if (o->name.empty()) return fail("scenario: give a NAME or --list");
            return capsim::cli::scenario_command(o->name, o->torch);
          }};
}

Subcommand add_capture(CLI::App& root) {
  struct Options {
    std::string name;
    std::string mode = "functional";
    bool list = false;
    std::optional<capsim::TorchProfile> torch;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(
      "capture", "Print compiled autograd's capture of a built-in autograd scenario");
  capsim::cli::add_torch_option(sub, o->torch);
  sub->add_option("name", o->name, "Scenario name (see --list)")->type_name("NAME");
  sub->add_option("--mode", o->mode, "functional (after PR 144707) or legacy (before)")
      ->type_name("MODE")
      ->check(CLI::IsMember({"functional", "legacy"}));
  sub->add_flag("--list", o->list, "List the built-in autograd scenarios");
  return {sub, [o] {
            if (o->list) {
              for (const capsim::AutogradScenario& c : capsim::builtin_autograd_scenarios()) {
                fmt::print("{:<36} {}\n", c.name, c.mirrors);
              }
              return 0;
            }
            if (o->name.empty()) return fail("capture: give a NAME or --list");
            return capsim::cli::capture_command(o->name, o->mode, o->torch);
          }};
}

Subcommand add_record(CLI::App& root, capsim::cli::PathRoles& roles) {
  struct Options {
    std::string name, output, backend = "cpu";
    std::optional<capsim::TorchProfile> torch;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(
      "record", "Write the trace of a built-in scenario (docs/trace-format.md)");
  sub->add_option("scenario", o->name, "Scenario name (see capsim scenario --list)")
      ->type_name("NAME")
      ->required();
  roles.mark(sub->add_option("-o,--output", o->output, "The trace file to write"), kOutput)
      ->required();
  sub->add_option("--backend", o->backend,
                  "cpu (the model), host or cuda (the model beside that reference backend; "
                  "docs/cuda-reference.md)")
      ->type_name("BACKEND")
      ->check(CLI::IsMember({"cpu", "host", "cuda"}));
  capsim::cli::add_torch_option(sub, o->torch);
  return {sub,
          [o] { return capsim::cli::record_command(o->name, o->output, o->backend, o->torch); }};
}

Subcommand add_simulate(CLI::App& root, capsim::cli::PathRoles& roles) {
  struct Options {
    std::string program, output;
    bool keep_going = false;
    capsim::cli::SimulationFlags simulation;
    capsim::ProgramRunOptions run;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(
      "simulate",
      "Run a program (a trace without events, docs/trace-format.md §10) and print or write what "
      "capsim predicts");
  roles
      .mark(sub->add_option("program", o->program, "The program file (.jsonl; '-': stdin)"), kInput)
      ->required();
  roles.mark(sub->add_option("-o,--output", o->output,
                             "Also write the predicted trace here ('-': stdout)"),
             kOutput);
  capsim::cli::add_torch_option(sub, o->run.torch);
  capsim::cli::add_simulation_options(sub, o->simulation);
  sub->add_flag("--keep-going", o->keep_going,
                "Simulate on past the first error (by default the run ends there, as a real run "
                "dies at an uncaught RuntimeError); later errors are marked as beyond a real run");
  return {sub, [o] {
            capsim::ProgramRunOptions run =
                capsim::cli::simulation_options(o->simulation, o->keep_going);
            run.torch = o->run.torch;
            return capsim::cli::simulate_command(o->program, o->output, run);
          }};
}

Subcommand add_explain(CLI::App& root, capsim::cli::PathRoles& roles) {
  struct Options {
    std::string file;
    capsim::cli::ExplainOptions explain;
    capsim::cli::SimulationFlags simulation;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(
      "explain",
      "Explain every decision of a trace or program in words: what happened, the rule, the "
      "tensors involved, the usual fix");
  roles
      .mark(sub->add_option("file", o->file, "A trace, or a program (simulated first); '-': stdin"),
            kInput)
      ->required();
  sub->add_option("--action", o->explain.action, "Only the decisions of this action (its index)")
      ->transform(capsim::cli::decimal());
  sub->add_flag("--json", o->explain.json, "One JSON object: file, simulated, explanations");
  sub->add_flag("--keep-going", o->explain.keep_going,
                "Simulate on past the first error (a real run dies at that RuntimeError unless "
                "the script catches it); each later decision is marked as beyond a real run");
  sub->add_flag("--as-on-a-gpu", o->explain.as_on_a_gpu,
                "For a trace recorded without CUDA graphs (a CPU run): explain what capsim "
                "predicts a GPU under mode=\"reduce-overhead\" would do");
  sub->add_option(
         "--what-if", o->explain.what_if,
         "Re-simulate with one edit and show the difference: mark-static=NAME[,NAME...], "
         "mark-step-begin@N, clone=NAME[@N] (or A,B,...), detach=NAME[@N], set-to-none=false, "
         "'config KEY=VALUE', torch=VERSION, or auto (every edit that applies, best "
         "first)")
      ->type_name("EDIT");
  roles.mark(sub->add_option("--html", o->explain.html,
                             "Also write one self-contained page: the drawing, the timeline and "
                             "the explanations side by side (with --what-if, its table too); "
                             "'-': stdout, and the report to stderr"),
             kOutput);
  capsim::cli::add_simulation_options(sub, o->simulation);
  return {sub, [o] {
            o->explain.run = capsim::cli::simulation_options(o->simulation, o->explain.keep_going);
            return capsim::cli::explain_command(o->file, o->explain);
          }};
}

Subcommand add_replay(CLI::App& root, capsim::cli::PathRoles& roles) {
  struct Options {
    std::vector<std::string> files;
    bool json = false;
    capsim::ResimulationOptions replay;
    std::string dot;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(
      "replay", "Re-simulate recorded traces; report the first divergence and every violation");
  roles.mark(sub->add_option("files", o->files, "Trace files"), kInput)->required();
  sub->add_flag("--json", o->json, "Print a machine-readable report");
  sub->add_option("--context", o->replay.context, "Matching events shown before a divergence")
      ->transform(capsim::cli::decimal())
      ->check(CLI::Range(std::size_t{0}, capsim::kMaxReplayContext));
  capsim::cli::add_memory_budget_option(sub, o->replay.memory_budget_bytes);
  roles.mark(sub->add_option("--dot", o->dot,
                             "On a divergence, draw the recorded tree against the predicted one "
                             "(FILE.dot, .svg or .png; one trace only)"),
             kOutputDrawing);
  capsim::cli::add_torch_option(sub, o->replay.torch_profile);
  sub->add_flag("--structural", o->replay.structural,
                "Compare captured graphs by their calls and dataflow, not node for node");
  return {sub, [o] { return replay_and_draw(o->files, o->json, o->replay, o->dot); }};
}

// The options render and diff share.
void add_draw_options(CLI::App* sub, capsim::cli::DrawOptions& draw,
                      capsim::cli::PathRoles& roles) {
  sub->add_option("--graph", draw.graph,
                  "KIND[:ID]: tree, tree:predicted, program:G, autograd:B, fx:B, pool[:LINE]")
      ->type_name("KIND[:ID]");
  roles.mark(sub->add_option("-o,--output", draw.output,
                             "FILE.dot, FILE.svg or FILE.png (default: DOT on stdout)"),
             kOutputDrawing);
  sub->add_flag("--changes-only", draw.changes_only, "Keep only what changed and its neighbours");
  sub->add_option("--layout-timeout", draw.timeout_s, "Seconds Graphviz may lay out")
      ->transform(capsim::cli::decimal())
      ->check(CLI::Range(std::uint32_t{1}, capsim::kMaxLayoutTimeout));
  sub->add_option("--max-nodes", draw.max_nodes,
                  "Fold or cut drawings above this many nodes before a layout")
      ->transform(capsim::cli::decimal())
      ->check(CLI::Range(std::size_t{10}, capsim::kMaxDrawNodes));
  capsim::cli::add_memory_budget_option(sub, draw.memory_budget_bytes);
}

Subcommand add_render(CLI::App& root, capsim::cli::PathRoles& roles) {
  struct Options {
    std::string trace;
    bool list = false;
    capsim::cli::DrawOptions draw;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(
      "render",
      "Draw a graph of a trace: its tree, a recording, a capture, the pool (docs/gallery.md)");
  roles
      .mark(sub->add_option("trace", o->trace, "The trace (TRACE or TRACE#KIND[:ID])"),
            kInputOperand)
      ->required();
  CLI::Option* list = sub->add_flag("--list", o->list, "List the graphs the trace has");
  add_draw_options(sub, o->draw, roles);
  // --list prints every graph's name: a graph to pick or a file to write
  // would be ignored, so they are refused with it.
  list->excludes("--graph")->excludes("--output");
  return {sub, [o] { return capsim::cli::render_command(o->trace, o->list, o->draw); }};
}

Subcommand add_diff(CLI::App& root, capsim::cli::PathRoles& roles) {
  struct Options {
    std::string a, b;
    bool predicted = false;
    capsim::cli::DrawOptions draw;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(
      "diff", "Draw the differences of two graphs (two traces, TRACE#KIND:ID, or --predicted)");
  roles
      .mark(sub->add_option("a", o->a, "The first graph: TRACE or TRACE#KIND[:ID]"), kInputOperand)
      ->required();
  roles.mark(sub->add_option("b", o->b, "The second graph (left out with --predicted)"),
             kInputOperand);
  sub->add_flag("--predicted", o->predicted,
                "The trace's recorded tree against capsim's own replay of it");
  add_draw_options(sub, o->draw, roles);
  return {sub, [o] { return capsim::cli::diff_command(o->a, o->b, o->predicted, o->draw); }};
}

Subcommand add_export(CLI::App& root, capsim::cli::PathRoles& roles) {
  struct Options {
    std::string chrome, trace;
    std::uint64_t budget = 0;  // the trace's default (walk_trace)
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(
      "export", "Write a trace as a Chrome trace for Perfetto (docs/chrome-export.md)");
  roles.mark(sub->add_option("--chrome", o->chrome, "The Chrome trace file to write"), kOutput)
      ->required();
  roles.mark(sub->add_option("trace", o->trace, "The capsim trace to export"), kInput)->required();
  capsim::cli::add_memory_budget_option(sub, o->budget);
  return {sub, [o] { return capsim::cli::export_command(o->chrome, o->trace, o->budget); }};
}

// What the check subcommand parses beyond CheckCommandOptions.
struct CheckFlags {
  capsim::cli::CheckCommandOptions options;
  std::string shard = "0/1";
  std::string inject;
  std::uint64_t only_case = 0;
  CLI::Option* case_option = nullptr;
};

// --property, --cases, --seed, --shard, --max-size, --case: which cases run.
void add_check_selection(CLI::App* sub, CheckFlags& f) {
  capsim::CheckOptions& run = f.options.run;
  sub->add_option("--property", run.patterns,
                  "Only properties matching this shell glob (repeatable)")
      ->type_name("GLOB");
  sub->add_option("--cases", run.cases, "Cases per property")
      ->transform(capsim::cli::decimal())
      ->check(CLI::Range(std::uint64_t{1}, capsim::kMaxCases));
  sub->add_option("--seed", run.seed, "The run's seed")->transform(capsim::cli::unsigned_64_bit());
  sub->add_option("--shard", f.shard, "K/N: run the cases whose index is K modulo N")
      ->type_name("K/N");
  sub->add_option("--max-size", run.max_size, "The largest case size")
      ->transform(capsim::cli::decimal())
      ->check(CLI::Range(0, capsim::kMaxMaxSize));
  f.case_option =
      sub->add_option("--case", f.only_case, "Run only this case index (a reproduction)")
          ->transform(capsim::cli::unsigned_64_bit());
}

// --controls through --backend: what else runs, and what is reported where.
void add_check_reporting(CLI::App* sub, CheckFlags& f, capsim::cli::PathRoles& roles) {
  capsim::cli::CheckCommandOptions& o = f.options;
  sub->add_flag("--controls,!--no-controls", o.run.controls,
                "Run every negative control after the properties (the default); fail if one "
                "is not caught");
  sub->add_flag("--list", o.list, "Print the catalogue");
  sub->add_flag("--json", o.json, "Print the report as JSON");
  roles.mark(sub->add_option("--junit", o.junit,
                             "Write a JUnit XML report to this file ('-': stdout, and the "
                             "report to stderr)"),
             kOutput);
  roles.mark(sub->add_option("--save-failures", o.save_failures,
                             "Write each failure's counterexample (text, and a trace) into this "
                             "folder"),
             kOutputDir);
  sub->add_flag("!--no-progress", o.progress, "No progress bar on stderr");
  sub->add_option("--jobs", o.jobs,
                  "Run the properties in this many worker processes (the same report as one; "
                  "no progress bar, each property's lines once it is done)")
      ->transform(capsim::cli::decimal())
      ->check(CLI::Range(1, capsim::cli::kMaxJobs));
  o.run.regressions_dir = CAPSIM_REGRESSIONS_DIR;
  roles
      .mark(sub->add_option("--regressions", o.run.regressions_dir,
                            "The failure corpus to replay first (default: the source tree's "
                            "properties/regressions)"),
            kInputDir)
      ->check(CLI::ExistingDirectory);
  sub->add_flag_callback(
      "--no-regressions", [&o] { o.run.regressions_dir.clear(); },
      "Replay no saved counterexamples");
  sub->add_flag("--stats", o.stats, "Print how often each coverage probe was hit");
  sub->add_flag("--require-probes", o.require_probes,
                "Fail when a probe that is not rare was never hit");
  sub->add_option("--inject", f.inject,
                  "Run every sound case with this fault of model/fault.hpp (a tree, run or "
                  "capture fault, e.g. skip_first_copy): a bug the catalogue must catch")
      ->type_name("FAULT");
  sub->add_option("--backend", o.backend,
                  "cpu (the model), host or cuda (adds reference.agrees: the model beside that "
                  "reference backend; docs/cuda-reference.md)")
      ->type_name("BACKEND")
      ->check(CLI::IsMember({"cpu", "host", "cuda"}));
  capsim::cli::add_torch_option(sub, o.run.torch);
}

int run_check(CheckFlags& f) {
  unsigned k = 0, n = 0;
  char rest = 0;
  if (std::sscanf(f.shard.c_str(), "%u/%u%c", &k, &n, &rest) != 2 || n == 0 || k >= n ||
      n > capsim::kMaxShards) {
    return fail(fmt::format("--shard '{}': expected K/N with 0 <= K < N <= {}", f.shard,
                            capsim::kMaxShards));
  }
  f.options.run.shard = k;
  f.options.run.shards = n;
  if (!f.inject.empty()) {
    const std::optional<capsim::Fault> fault = capsim::fault_from_name(f.inject);
    if (!fault || *fault == capsim::Fault::kNone) {
      return fail(fmt::format("--inject '{}': no fault of that name (model/fault.hpp)", f.inject));
    }
    if (!capsim::injectable(*fault)) {
      return fail(
          fmt::format("--inject '{}': a {} fault; --inject takes tree, run and capture "
                      "faults",
                      f.inject, capsim::fault_site_name(capsim::fault_site(*fault))));
    }
    f.options.run.inject = *fault;
  }
  if (f.case_option->count() > 0) f.options.run.only_case = f.only_case;
  if (f.options.jobs > 1 && f.options.backend == "cuda") {
    // A forked child cannot use its parent's CUDA context.
    return fail("--jobs: more than 1 needs --backend cpu or host");
  }
  return capsim::cli::check_command(f.options);
}

Subcommand add_check(CLI::App& root, capsim::cli::PathRoles& roles) {
  auto f = std::make_shared<CheckFlags>();
  CLI::App* sub = root.add_subcommand(
      "check", "Run the property catalogue over generated cases (docs/properties.md)");
  add_check_selection(sub, *f);
  add_check_reporting(sub, *f, roles);
  return {sub, [f] { return run_check(*f); }};
}

Subcommand add_version(CLI::App& root, capsim::cli::PathRoles& roles) {
  struct Options {
    bool profiles = false, paths = false, decisions = false, json = false, actions = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand("version", "Print the version (as --version)");
  sub->add_flag("--profiles", o->profiles,
                "List the torch profiles (--torch) and what each release's manager does");
  sub->add_flag("--paths", o->paths,
                "List every option that names a file or folder, and whether the command reads "
                "or writes it");
  CLI::Option* decisions =
      sub->add_flag("--decisions", o->decisions,
                    "List the decisions capsim explain explains: each event's kind and id or "
                    "reason, with its title");
  sub->add_flag("--json", o->json, "With --decisions: the whole table (rule and fix too) as JSON")
      ->needs(decisions);
  sub->add_flag("--actions", o->actions,
                "Print the schema of action lines (sim/program/actions.def) as JSON: what the "
                "recorder checks the lines it writes against");
  return {sub, [o, &root, &roles] {
            if (o->profiles) return capsim::cli::print_profiles();
            if (o->decisions) return capsim::cli::print_decisions(o->json);
            if (o->actions) return capsim::cli::print_action_schema();
            if (o->paths) {
              for (const std::string& line : roles.listing(root)) fmt::print("{}\n", line);
              return 0;
            }
            fmt::print("capsim {}\n", capsim::kCapsimVersion);
            return 0;
          }};
}

// CLI11 would call an unknown word "extra" and ask for a subcommand; say what
// happened instead. 0 when argv[1] is a flag or a known subcommand.
int refuse_unknown_subcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return 0;
  std::string known;
  bool found = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    found = found || sub->check_name(argv[1]);
    known += (known.empty() ? "" : ", ") + sub->get_name();
  }
  if (found) return 0;
  return fail(
      fmt::format("unknown subcommand '{}' (known: {}; see capsim --help)", argv[1], known));
}

}  // namespace

namespace capsim::cli {

CommandLine::CommandLine()
    : app_(std::make_unique<CLI::App>(
          "capsim: a deterministic simulator of graph capture semantics")) {
  CLI::App& app = *app_;
  app.require_subcommand(1);
  // Every option's default in --help (subcommands copy this when made).
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", fmt::format("capsim {}", kCapsimVersion));
  // In the order --help lists them.
  subcommands_ = {add_run(app),
                  add_scenario(app),
                  add_capture(app),
                  add_record(app, roles_),
                  add_simulate(app, roles_),
                  add_explain(app, roles_),
                  add_expect(app, roles_),
                  add_replay(app, roles_),
                  add_render(app, roles_),
                  add_diff(app, roles_),
                  add_export(app, roles_),
                  add_check(app, roles_),
                  add_version(app, roles_)};
  roles_.check_complete(app);
}

std::optional<int> CommandLine::parse(int argc, char** argv) {
  CAPSIM_CHECK(chosen_ == nullptr, "a command line is parsed once");
  CLI::App& app = *app_;
  if (int refused = refuse_unknown_subcommand(app, argc, argv)) return refused;
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
  for (const Subcommand& s : subcommands_) {
    if (!s.app->parsed()) continue;
    // Before the command reads anything: no empty value, and no output may
    // land on an input.
    if (int refused = refuse_empty_values(*s.app)) return refused;
    if (int refused = roles_.refuse_outputs_onto_inputs(*s.app)) return refused;
    chosen_ = &s;
    return std::nullopt;
  }
  CAPSIM_CHECK(false, "require_subcommand(1) lets no command line through without one");
  return kExitBadInput;
}

int CommandLine::run() const {
  CAPSIM_CHECK(chosen_ != nullptr, "run() follows a parse() that chose a subcommand");
  return chosen_->run();
}

int run_command_line(int argc, char** argv) {
  CommandLine command_line;
  if (std::optional<int> done = command_line.parse(argc, argv)) return *done;
  return command_line.run();
}

}  // namespace capsim::cli
