// The explain subcommand (see explain_command.hpp): the run to explain (the file's, or as on a
// GPU), its explanations and what-ifs as text or JSON, and the HTML page when asked for.
#include "cli/explain_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/explain_html.hpp"
#include "cli/progress.hpp"
#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "traces/analyses/explain.hpp"
#include "traces/analyses/what_if.hpp"
#include "traces/format/input_file.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim::cli {

namespace {

ProgramRunOptions run_options(const ExplainOptions& o) {
  ProgramRunOptions how = o.run;
  how.on_raise = o.keep_going ? OnRaise::kKeepGoing : OnRaise::kStop;
  return how;
}

// The what-ifs `edit` asks for: one, or every edit auto tried.
Result<std::vector<WhatIf>> what_ifs(const ObservedRun& run, const std::string& edit,
                                     const ProgramRunOptions& how) {
  if (edit == "auto") {
    TerminalProgress progress;
    return what_if_auto(
        run,
        [&progress](std::size_t k, std::size_t n) {
          progress.update("capsim explain: what-if edits tried", k, n);
        },
        how);
  }
  CAPSIM_TRY_ASSIGN(WhatIf one, what_if(run, edit, how));
  return std::vector<WhatIf>{std::move(one)};
}

Json what_ifs_json(const std::vector<WhatIf>& all) {
  Json out = Json::array();
  for (const WhatIf& w : all) out.push_back(what_if_json(w));
  return out;
}

// Each edit with its outcome, the better first; when none is better, a line
// that says so and what was tried.
void print_what_ifs(std::FILE* out, const std::string& path, const std::vector<WhatIf>& all) {
  for (const WhatIf& w : all) fmt::print(out, "{}\n", what_if_text(w));
  if (!improving(all).empty()) return;
  fmt::print(out,
             "{}: no edit capsim knows improves it ({} tried: marks on the copied inputs, step "
             "marks before errors and warnings, clones of what they read, set-to-none=false)\n",
             printable_message(input_name(path)), all.size());
}

// The run to explain: the file's, or as on a GPU.
Result<ObservedRun> run_to_explain(const std::string& path, const ExplainOptions& o) {
  CAPSIM_TRY_ASSIGN(ObservedRun run, observe_file(path, run_options(o)));
  for (const std::string& w : run.warnings) stderr_line(w);
  if (o.action && *o.action >= run.actions.size()) {
    return make_error(fmt::format("{}: field '--action': {} is past the last action ({})",
                                  printable_message(input_name(path)), *o.action,
                                  run.actions.empty() ? 0 : run.actions.size() - 1));
  }
  if (!o.as_on_a_gpu) return run;
  if (run.header.config.cudagraphs) {
    return make_error(fmt::format(
        "{}: field '--as-on-a-gpu': the run had CUDA graphs (its header's config.cudagraphs is "
        "true); explain it without the flag",
        printable_message(input_name(path))));
  }
  Result<ObservedRun> gpu = as_on_a_gpu(run, run_options(o));
  if (!gpu) {
    return make_error(
        fmt::format("{}: {}", printable_message(input_name(path)), gpu.error().message));
  }
  return gpu;
}

// Where a simulated run ended, against where a real run would have.
std::string stop_clause(const ObservedRun& run) {
  if (!run.error_at) return "";
  const std::size_t n = run.actions.size();
  if (!run.kept_going) {
    if (run.stop != RunStop::kRaise) {
      return fmt::format("; the run ends at action {}'s RuntimeError, its last action",
                         *run.error_at);
    }
    const std::string unreached =
        *run.stopped_at + 1 == n ? fmt::format("action {} was", n - 1)
                                 : fmt::format("actions {} to {} were", *run.stopped_at, n - 1);
    return fmt::format(
        "; the run ends at action {}'s RuntimeError, as a real run does (nothing catches it): {} "
        "never reached (--keep-going simulates them)",
        *run.error_at, unreached);
  }
  std::string out = fmt::format(
      "; a real run dies at action {}'s RuntimeError (nothing catches it): the decisions after it "
      "are beyond a real run",
      *run.error_at);
  if (run.stop == RunStop::kRefusedAfterRaise) {
    out += fmt::format(
        ", and the simulation stops at action {} of {}, which needs what that error left unmade",
        *run.stopped_at, n);
  }
  return out;
}

// The last line of the text form: how many, and what the events are.
std::string summary_line(const std::string& path, const ObservedRun& run, std::size_t count) {
  std::string how;
  if (run.as_on_a_gpu) {
    how = " (as on a GPU: capsim's simulation with CUDA graphs on; the trace ran without them)";
  } else if (run.simulated) {
    how = " (a program: simulated first)";
  } else if (!run.header.config.cudagraphs) {
    how = " (the trace ran without CUDA graphs: --as-on-a-gpu explains what a GPU would do)";
  }
  return fmt::format("{}: {} decisions explained{}{}", printable_message(input_name(path)), count,
                     how, stop_clause(run));
}

// The report as JSON: each explanation once, with the actions of those that
// said the same (every one of them: JSON is for tools).
Json report_json(const std::string& path, const ObservedRun& run,
                 const std::vector<FoldedExplanation>& folded, const ExplainOptions& o,
                 const std::vector<WhatIf>& edits) {
  Json j = Json::object();
  j["file"] = input_name(path);
  j["simulated"] = run.simulated;
  if (run.as_on_a_gpu) j["as_on_a_gpu"] = true;
  j["explanations"] = Json::array();
  for (const FoldedExplanation& f : folded) j["explanations"].push_back(folded_explanation_json(f));
  if (o.what_if) j["what_if"] = what_ifs_json(edits);
  return j;
}

}  // namespace

int explain_command(const std::string& path, const ExplainOptions& o) {
  Result<ObservedRun> run = run_to_explain(path, o);
  if (!run) return fail(run.error().message);
  std::vector<WhatIf> edits;
  if (o.what_if) {
    Result<std::vector<WhatIf>> w = what_ifs(*run, *o.what_if, run_options(o));
    if (!w)
      return fail(fmt::format("{}: {}", printable_message(input_name(path)), w.error().message));
    edits = std::move(*w);
  }
  // With the page on standard output, the report goes to stderr.
  std::FILE* out = o.html == kStdoutPath ? stderr : stdout;
  if (o.what_if && o.html.empty()) {
    if (o.json) {
      Json j = Json::object();
      j["file"] = input_name(path);
      j["what_if"] = what_ifs_json(edits);
      fmt::print(out, "{}\n", printable_json(j, 2));
    } else {
      print_what_ifs(out, path, edits);
    }
    return 0;
  }
  const std::vector<FoldedExplanation> folded = fold_explanations(explain(*run, o.action));
  std::size_t count = 0;
  for (const FoldedExplanation& f : folded) count += 1 + f.again.size();
  if (!o.html.empty()) {
    Result<std::string> page =
        explanation_page(input_name(path), *run, folded, edits, run_options(o));
    if (!page) return fail(page.error().message);
    if (Status w = write_output_file(o.html, *page); !w) return fail(w.error().message);
  }
  if (o.json) {
    fmt::print(out, "{}\n", printable_json(report_json(path, *run, folded, o, edits), 2));
    return 0;
  }
  for (const FoldedExplanation& f : folded) fmt::print(out, "{}\n", folded_explanation_text(f));
  fmt::print(out, "{}\n", summary_line(path, *run, count));
  if (o.what_if) print_what_ifs(out, path, edits);
  return 0;
}

}  // namespace capsim::cli
