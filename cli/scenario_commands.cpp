// The subcommands that run built-in work rather than read a file: `run`
// (one recorded AdamW step replayed), `scenario` (a cudagraph-trees
// scenario's events and expectations) and `capture` (compiled autograd's
// capture of an autograd scenario). Output formatting only; the work is in
// sim/scenarios/.
#include "cli/scenario_commands.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "cli/input_guards.hpp"
#include "cli/progress.hpp"
#include "cli/trace_commands.hpp"
#include "model/digest.hpp"
#include "sim/scenarios/autograd_scenarios.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "sim/world/release_forms.hpp"
#include "traces/analyses/explain.hpp"
#include "traces/format/program_json.hpp"

namespace capsim::cli {

int run_command(AdamReplayJobOptions options) {
  TerminalProgress progress;
  options.on_step = [&progress, &options](std::int64_t step) {
    progress.update("capsim run: replays", static_cast<std::uint64_t>(step),
                    static_cast<std::uint64_t>(options.steps));
  };
  auto report = run_adam_replay_job(options);
  progress.clear();
  if (!report) return fail(report.error().message);
  fmt::print("capsim run: one recorded AdamW step over {} params of {} floats, seed {}\n",
             options.params, options.numel, options.seed);
  fmt::print("graph '{}': {} steps, {} baked pointers\n", report->graph_name, report->program_steps,
             report->baked_pointers);
  for (const auto& step : report->steps) {
    fmt::print("step {}: replay, copy-in {} bytes, params {}\n", step.step, step.copy_in_bytes,
               digest_hex(step.param_digest));
  }
  fmt::print("pool: {} live blocks, {} bytes allocated; {} segments mapped\n",
             report->pool_live_blocks, report->pool_allocated_bytes, report->segments);
  fmt::print("steps replayed: {}\n", report->steps.size());
  return 0;
}

int list_scenarios() {
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    fmt::print("{:<48} {}\n", s.name, s.mirrors);
  }
  return 0;
}

// Prints a built-in scenario's events and expectations. Exit 0 when every
// expectation holds, 1 when one does not (a bug in capsim), 2 for a bad name.
int scenario_command(const std::string& name, std::optional<TorchProfile> torch) {
  const ProgramScenario* found = find_program_scenario(name);
  if (found == nullptr) {
    return fail(fmt::format("unknown scenario '{}'{} (see capsim scenario --list)", name,
                            did_you_mean(name, scenario_names())));
  }
  const ProgramScenario under = under_profile(*found, torch);
  const ProgramScenario* s = &under;
  const CudagraphConfig& c = s->options.config;
  fmt::print("scenario {}\n", s->name);
  fmt::print("mirrors {}\n", s->mirrors);
  fmt::print("about {}\n", s->description);
  fmt::print(
      "config inline_inbuilt_nn_modules={} cudagraph_support_input_mutation={} "
      "cudagraph_unexpected_rerecord_limit={} skip_cudagraph_warmup={} "
      "force_cudagraphs_warmup={} slow_path_cudagraph_asserts={} zero_grad_static_error={} "
      "plain_api={} torch_profile={}\n",
      c.inline_inbuilt_nn_modules, c.cudagraph_support_input_mutation,
      c.cudagraph_unexpected_rerecord_limit, c.skip_cudagraph_warmup, c.force_cudagraphs_warmup,
      c.slow_path_cudagraph_asserts, c.zero_grad_static_error, c.plain_api,
      torch_profile_name(c.torch_profile));
  // The newer knobs, as the trace header writes them: only those set.
  const Json knobs = newer_config_to_json(c);
  if (!knobs.empty()) {
    std::string line = "knobs";
    for (const auto& [key, value] : knobs.items()) line += fmt::format(" {}={}", key, value.dump());
    fmt::print("{}\n", line);
  }
  const ProgramScenarioRun run = run_program_scenario(*s);
  for (const Event& e : run.events) {
    fmt::print("{}\n", format_event(e));
    if (auto moved = explain_rerecord(s->program.actions, e)) {
      fmt::print("  ({})\n", moved_input_text(*moved));
    }
  }
  if (!run.status) return fail(fmt::format("scenario '{}': {}", name, run.status.error().message));
  for (const Expectation& e : run.expectations) {
    fmt::print("expect {}: {} (got {}) {}\n", e.what, e.expected, e.actual,
               e.holds() ? "ok" : "FAIL");
  }
  return run.all_hold() ? 0 : 1;
}

// Prints a compiled-autograd scenario: cache decisions, MetadataReads and the
// captured graphs, then `metadata reads: N`. A capture that PyTorch itself
// would reject (the legacy non-traceable CppNode) prints `raised: ...`.
int capture_command(const std::string& name, const std::string& mode_name,
                    std::optional<TorchProfile> torch) {
  const AutogradScenario* s = find_autograd_scenario(name);
  // The corpus names its traces ca_NAME.jsonl; take that name too.
  if (s == nullptr && name.starts_with("ca_")) s = find_autograd_scenario(name.substr(3));
  if (s == nullptr) {
    std::vector<std::string> known;
    for (const AutogradScenario& c : builtin_autograd_scenarios()) {
      known.push_back(c.name);
    }
    return fail(fmt::format("unknown capture scenario '{}'{} (see capsim capture --list)", name,
                            did_you_mean(name, known)));
  }
  const CaptureMode mode = mode_name == "legacy" ? CaptureMode::kLegacy : CaptureMode::kFunctional;
  fmt::print("capture {} mode={}\n", s->name, capture_mode_name(mode));
  fmt::print("mirrors {}\n", s->mirrors);
  fmt::print("about {}\n", s->description);
  CaptureRunLog log;
  if (torch) {
    fmt::print("torch {}\n", torch_profile_name(*torch));
    log.release_form = ca_graph_form_of(*torch);
  }
  const Status status = s->run(mode, log);
  for (const std::string& line : log.lines) fmt::print("{}\n", line);
  if (!status) fmt::print("raised: {}\n", status.error().message);
  fmt::print("captures: {} (PyTorch's test expects {}), cache hits: {}\n", log.captures,
             s->expected_captures, log.hits);
  if (mode == CaptureMode::kFunctional) {
    fmt::print("compiled backwards run: {}, grads differing from eager: {}\n", log.executed,
               log.mismatches);
  }
  fmt::print("metadata reads: {}\n", log.metadata_reads);
  return log.mismatches == 0 ? 0 : 1;
}

}  // namespace capsim::cli
