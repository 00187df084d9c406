// The expect subcommand (see expect_command.hpp): the limits, the run, the checks, and the three
// ways of reporting them.
#include "cli/expect_command.hpp"

#include <fmt/format.h>

#include "cli/check_report.hpp"
#include "cli/expect_limits.hpp"
#include "cli/input_guards.hpp"
#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "traces/format/input_file.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim::cli {

namespace {

Result<std::vector<Limit>> limits_of(const ExpectOptions& o) {
  std::vector<Limit> limits;
  if (!o.limits_file.empty()) {
    CAPSIM_TRY_ASSIGN(limits, read_limits_file(o.limits_file));
  }
  for (std::size_t k = 0; k < kLimitKinds; ++k) {
    for (const std::string& value : o.flags[k]) {
      CAPSIM_TRY_ASSIGN(Limit limit, parse_limit_flag(static_cast<LimitKind>(k), value));
      if (limits.size() == kMaxLimits) {
        return make_error(
            fmt::format("field '{}': more than {} limits", limit_flag(limit.kind), kMaxLimits));
      }
      limits.push_back(std::move(limit));
    }
  }
  if (limits.empty()) {
    return make_error(
        "field '--limits': no limits given (flags such as --max-rerecords 0, or a limits file)");
  }
  return limits;
}

// The run whose figures count: a CPU run's trace as on a GPU.
Result<ObservedRun> run_of(const std::string& path, const ProgramRunOptions& how) {
  CAPSIM_TRY_ASSIGN(ObservedRun run, observe_file(path, how));
  for (const std::string& w : run.warnings) stderr_line(w);
  if (run.header.config.cudagraphs) return run;
  Result<ObservedRun> gpu = as_on_a_gpu(run, how);
  if (!gpu) {
    return make_error(
        fmt::format("{}: {}", printable_message(input_name(path)), gpu.error().message));
  }
  return gpu;
}

std::string check_text(const LimitCheck& c) {
  std::string out = limit_check_line(c) + "\n";
  if (c.holds) return out;
  if (c.explanation) {
    std::vector<std::string> lines;
    append_indented(lines, explanation_text(*c.explanation), "    ");
    for (const std::string& line : lines) out += line + "\n";
    return out;
  }
  return out + fmt::format("    at action {}\n", *c.action);
}

std::size_t broken(const std::vector<LimitCheck>& checks) {
  return static_cast<std::size_t>(
      std::count_if(checks.begin(), checks.end(), [](const LimitCheck& c) { return !c.holds; }));
}

std::string junit_text(const std::string& path, const std::vector<LimitCheck>& checks) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out +=
      fmt::format("<testsuite name=\"capsim.expect\" tests=\"{}\" failures=\"{}\" file=\"{}\">\n",
                  checks.size(), broken(checks), xml_escape(input_name(path)));
  for (const LimitCheck& c : checks) {
    const std::string name = fmt::format("{} ({})", limit_key(c.limit.kind),
                                         c.limit.function ? *c.limit.function : "all functions");
    out += fmt::format("  <testcase classname=\"capsim.expect\" name=\"{}\"", xml_escape(name));
    if (c.holds) {
      out += "/>\n";
      continue;
    }
    out += fmt::format(">\n    <failure message=\"{} &gt; {}\">{}</failure>\n  </testcase>\n",
                       c.figure.text(), c.limit.max, xml_escape(check_text(c)));
  }
  return out + "</testsuite>\n";
}

// The report, on `out`: standard output, or stderr when the JUnit XML is.
void print_report(std::FILE* out, const std::string& path, const ObservedRun& run,
                  const std::vector<LimitCheck>& checks, bool json) {
  if (json) {
    Json j = Json::object();
    j["file"] = input_name(path);
    j["as_on_a_gpu"] = run.as_on_a_gpu;
    j["holds"] = broken(checks) == 0;
    j["limits"] = Json::array();
    for (const LimitCheck& c : checks) j["limits"].push_back(limit_check_json(c));
    fmt::print(out, "{}\n", printable_json(j, 2));
    return;
  }
  for (const LimitCheck& c : checks) fmt::print(out, "{}", check_text(c));
  fmt::print(out, "{}: {} of {} limits hold{}\n", printable_message(input_name(path)),
             checks.size() - broken(checks), checks.size(),
             run.as_on_a_gpu ? " (as on a GPU: capsim's simulation with CUDA graphs on; the "
                               "trace ran without them)"
                             : "");
}

}  // namespace

int expect_command(const std::string& path, const ExpectOptions& o) {
  Result<std::vector<Limit>> limits = limits_of(o);
  if (!limits) return fail(limits.error().message);
  ProgramRunOptions how = o.run;
  how.on_raise = o.keep_going ? OnRaise::kKeepGoing : OnRaise::kStop;
  Result<ObservedRun> run = run_of(path, how);
  if (!run) return fail(run.error().message);
  Result<std::vector<LimitCheck>> checks = check_limits(*run, *limits);
  if (!checks)
    return fail(fmt::format("{}: {}", printable_message(input_name(path)), checks.error().message));
  if (!o.junit.empty()) {
    if (Status s = write_output_file(o.junit, junit_text(path, *checks)); !s) {
      return fail(s.error().message);
    }
  }
  print_report(o.junit == kStdoutPath ? stderr : stdout, path, *run, *checks, o.json);
  return broken(*checks) == 0 ? 0 : 1;
}

Subcommand add_expect(CLI::App& root, PathRoles& roles) {
  struct Options {
    std::string file;
    ExpectOptions expect;
    SimulationFlags simulation;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = root.add_subcommand(
      "expect",
      "Check limits on a run's CUDA-graph behaviour (for CI): exit 0 when all hold, 1 with the "
      "explanation of each broken one, 2 on bad input");
  roles
      .mark(sub->add_option("file", o->file,
                            "A trace (a CPU run's is simulated as on a GPU), or "
                            "a program (simulated)"),
            PathRole::kInput)
      ->required();
  for (std::size_t k = 0; k < kLimitKinds; ++k) {
    const auto kind = static_cast<LimitKind>(k);
    sub->add_option(std::string(limit_flag(kind)), o->expect.flags[k],
                    fmt::format("At most this many {} (N, or FUNCTION=N for one function; "
                                "repeatable)",
                                limit_what(kind)))
        ->type_name("[FUNCTION=]N")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  }
  roles.mark(sub->add_option("--limits", o->expect.limits_file,
                             "A TOML file of limits (keys as the flags' with underscores; "
                             "[function.NAME] tables for one function)"),
             PathRole::kInput);
  sub->add_flag("--json", o->expect.json, "One JSON object: file, holds, limits");
  roles.mark(sub->add_option("--junit", o->expect.junit,
                             "Also write a JUnit XML file ('-': stdout, and the report to stderr)"),
             PathRole::kOutput);
  sub->add_flag("--keep-going", o->expect.keep_going,
                "Simulate on past the first error (a real run dies there)");
  add_simulation_options(sub, o->simulation);
  return {sub, [o] {
            o->expect.run = simulation_options(o->simulation, o->expect.keep_going);
            return expect_command(o->file, o->expect);
          }};
}

}  // namespace capsim::cli
