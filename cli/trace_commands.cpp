// The record and replay subcommands (see trace_commands.hpp), and stderr_line, which every line
// capsim writes to stderr goes through.
#include "cli/trace_commands.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/input_guards.hpp"
#include "cli/progress.hpp"
#include "cli/reference_backends.hpp"
#include "model/output_file.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "traces/format/input_file.hpp"
#include "traces/format/trace_reader.hpp"
#include "traces/format/trace_writer.hpp"
#include "traces/simulation/resimulation.hpp"
#include "traces/simulation/scenario_trace.hpp"

namespace capsim::cli {

void stderr_line(const std::string& line) {
  std::string shown = printable_message(line);
  // A value echoed whole (CLI11 lists every unexpected argument) could make
  // a line of megabytes: past the limit, the line says how long it was.
  if (shown.size() > kMaxStderrLine) {
    std::size_t cut = kMaxStderrLine;
    while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
    shown = fmt::format("{} ... (cut: {} bytes in all)", shown.substr(0, cut), shown.size());
  }
  shown += "\n";
  std::fwrite(shown.data(), 1, shown.size(), stderr);
}

int fail(const std::string& message) {
  stderr_line("capsim: error: " + message);
  return kExitBadInput;
}

int record_command(const std::string& scenario, const std::string& output,
                   const std::string& backend, std::optional<TorchProfile> torch) {
  const ProgramScenario* found = find_program_scenario(scenario);
  if (found == nullptr) {
    return fail(fmt::format("unknown scenario '{}'{} (see capsim scenario --list)", scenario,
                            did_you_mean(scenario, scenario_names())));
  }
  const ProgramScenario under = under_profile(*found, torch);
  const ProgramScenario* s = &under;
  if (Status usable = check_backend_usable(backend); !usable) return fail(usable.error().message);
  Result<std::vector<std::string>> lines = std::vector<std::string>{};
  if (backend == "cpu") {
    lines = trace_scenario(*s);
  } else {
    Result<std::unique_ptr<ReplayMirror>> mirror = make_mirror(backend, Fault::kNone);
    if (!mirror) return fail(mirror.error().message);
    lines = trace_scenario_on(*s, **mirror);
    // A reference that disagrees with the model is a finding, not bad input.
    if (!lines) {
      stderr_line("capsim: " + lines.error().message);
      return 1;
    }
  }
  if (!lines) return fail(lines.error().message);
  Status written = write_trace_file(output, *lines);
  if (!written) return fail(written.error().message);
  // With "-" the trace is stdout, and the summary must not join it.
  std::fprintf(output == kStdoutPath ? stderr : stdout, "recorded %s: %zu lines to %s\n",
               scenario.c_str(), lines->size(), printable_message(output).c_str());
  return 0;
}

namespace {

// Each line's text from the trace escaped as stderr escapes it: a recorded
// line is JSON (no raw control byte), but a node's detail and a violation's
// message quote names.
void print_details(std::FILE* out, const ResimulationReport& r) {
  if (r.divergence) {
    const Divergence& d = *r.divergence;
    for (const std::string& c : d.context)
      fmt::print(out, "  matched   {}\n", printable_message(c));
    fmt::print(out, "  recorded  {}\n",
               d.recorded.empty() ? "(no event)" : printable_message(d.recorded));
    fmt::print(out, "  predicted {}\n",
               d.predicted.empty() ? "(no event)" : printable_message(d.predicted));
    if (!d.detail.empty()) fmt::print(out, "  node      {}\n", printable_message(d.detail));
  }
  for (const Violation& v : r.violations) {
    fmt::print(out, "  violation {}:{}: {}: {}\n", r.file, v.line, printable_message(v.invariant),
               printable_message(v.message));
  }
}

}  // namespace

int replay_command(const std::vector<std::string>& files, bool json,
                   const ResimulationOptions& options, std::FILE* out) {
  int exit_code = 0;
  std::size_t matched = 0, findings = 0, unread = 0;
  Json all = Json::array();
  TerminalProgress progress(files.size() > 1);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string& file = files[i];
    progress.update("capsim replay: traces", i, files.size());
    Result<ResimulationReport> report = resimulate_file(file, options);
    progress.clear();
    if (!report) {
      ++unread;
      if (json) {
        Json j = Json::object();
        j["file"] = input_name(file);
        j["error"] = report.error().message;
        all.push_back(std::move(j));
      } else {
        stderr_line("capsim: error: " + report.error().message);
      }
      exit_code = kExitBadInput;
      continue;
    }
    for (const std::string& w : report->warnings) stderr_line(w);
    if (!report->ok() && exit_code == 0) exit_code = 1;
    ++(report->ok() ? matched : findings);
    if (json) {
      all.push_back(report_to_json(*report));
    } else {
      fmt::print(out, "{}\n", printable_message(report_summary(*report)));
      print_details(out, *report);
    }
  }
  if (json) fmt::print(out, "{}\n", printable_json(all, 2));
  if (!json && files.size() > 1) {
    fmt::print(out,
               "replayed {} traces: {} match, {} diverge or report invariant violations, {} "
               "could not be read\n",
               files.size(), matched, findings, unread);
  }
  return exit_code;
}

}  // namespace capsim::cli
