// The shapes of a CheckReport (see check_report.hpp).
#include "cli/check_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "traces/format/json_text.hpp"

namespace capsim::cli {

namespace {

std::string seed_text(std::uint64_t seed) {
  return fmt::format("{:#018x}", seed);
}

void append_failure(std::vector<std::string>& out, const CaseResult& f) {
  out.push_back(fmt::format("        {}", f.message));
  out.push_back(fmt::format(
      "        shrunk in {} steps ({} checks{}); the smallest failing input:", f.shrink_steps,
      f.evaluations, f.shrink_cut ? ", stopped at the limit" : ""));
  append_indented(out, f.counterexample, "          ");
}

// The failing (or, for a control, catching) case of `o`, with its reproduction.
Json failure_json(const CheckOptions& options, const CasesOutcome& o, bool control) {
  const CaseResult& f = o.failure;
  Json j = Json::object();
  j["case"] = o.case_index;
  j["case_seed"] = seed_text(o.case_seed);
  j["size"] = o.size;
  j["message"] = f.message;
  j["counterexample"] = f.counterexample;
  j["shrink_steps"] = f.shrink_steps;
  j["evaluations"] = f.evaluations;
  j["shrink_cut"] = f.shrink_cut;
  j["reproduce"] = reproduce_command(options, *o.property, o.case_index, control);
  return j;
}

}  // namespace

// XML text and attribute values: the five characters that have a meaning,
// and the control characters XML 1.0 cannot hold at all.
std::string xml_escape(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const char c = text.front();
    const std::size_t n = utf8_sequence(text);
    const auto byte = static_cast<unsigned char>(c);
    if (n == 0 || (byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) {
      // Not a character XML 1.0 allows, even as a reference: as stderr shows it.
      out += fmt::format("\\x{:02x}", byte);
      text.remove_prefix(1);
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out.append(text.substr(0, n));
    }
    text.remove_prefix(n);
  }
  return out;
}

std::string reproduce_command(const CheckOptions& options, const Property& property,
                              std::uint64_t case_index, bool control) {
  return fmt::format(
      "capsim check --property {} --seed {} --max-size {} --case {}{}{}{}", property.name,
      options.seed, options.max_size, case_index, control ? "" : " --no-controls",
      options.inject == Fault::kNone ? "" : fmt::format(" --inject {}", fault_name(options.inject)),
      options.torch ? fmt::format(" --torch {}", torch_profile_name(*options.torch)) : "");
}

std::vector<std::string> property_lines(const CheckOptions& options, const PropertyOutcome& p) {
  std::vector<std::string> out;
  out.push_back(fmt::format("  {}  {:<38} {:>6} cases {:>8.2f} s", p.failed ? "FAIL" : "pass",
                            p.property->name, p.cases_run, p.seconds));
  if (!p.failed) return out;
  out.push_back(fmt::format("        case {} (case seed {}, size {}) fails:", p.case_index,
                            seed_text(p.case_seed), p.size));
  append_failure(out, p.failure);
  out.push_back(fmt::format("        reproduce: {}",
                            reproduce_command(options, *p.property, p.case_index, false)));
  return out;
}

std::vector<std::string> regression_lines(const RegressionOutcome& r) {
  std::vector<std::string> out{
      fmt::format("  {}  regression {}", r.failed ? "FAIL" : "pass", r.file)};
  if (r.failed) {
    out.push_back(fmt::format("        {}", r.message));
    out.push_back(
        fmt::format("        a saved counterexample of {} fails again", r.property->name));
  }
  return out;
}

std::vector<std::string> control_lines(const ControlOutcome& c) {
  std::vector<std::string> out;
  if (c.not_applicable) {
    out.push_back(fmt::format("  n/a     {:<36} the control needs {}, which this profile lacks",
                              c.property->name, c.property->control_needs));
    return out;
  }
  if (!c.caught()) {
    out.push_back(fmt::format("  NOT CAUGHT  {:<32} {:>6} cases: {}", c.property->name, c.cases_run,
                              c.property->control));
    out.push_back(
        "        a property that cannot fail checks nothing: strengthen it or its "
        "control");
    return out;
  }
  out.push_back(fmt::format("  caught  {:<36} at case {:<4} {}", c.property->name, c.case_index,
                            c.property->control));
  return out;
}

std::string summary_line(const CheckReport& report, double seconds) {
  std::size_t failed = 0, caught = 0, not_applicable = 0, regressions_failed = 0;
  for (const PropertyOutcome& p : report.properties) failed += p.failed;
  for (const ControlOutcome& c : report.controls) {
    caught += c.caught();
    not_applicable += c.not_applicable;
  }
  for (const RegressionOutcome& r : report.regressions) regressions_failed += r.failed;
  std::string regressions;
  if (!report.regressions.empty()) {
    regressions = fmt::format("regressions: {} passed, {} failed; ",
                              report.regressions.size() - regressions_failed, regressions_failed);
  }
  std::string controls;
  if (report.options.controls) {
    controls = fmt::format("; controls: {} caught, {} not caught", caught,
                           report.controls.size() - caught - not_applicable);
    if (not_applicable > 0) controls += fmt::format(", {} not applicable", not_applicable);
  }
  return fmt::format("{}: {}{} properties passed, {} failed{}{} ({:.1f} s)",
                     report.interrupted ? "interrupted" : (report.ok() ? "ok" : "FAILED"),
                     regressions, report.properties.size() - failed, failed, controls,
                     report.interrupted ? "; the run was cut short" : "", seconds);
}

Json report_json(const CheckReport& report, bool with_timing) {
  const CheckOptions& o = report.options;
  Json j = Json::object();
  j["format"] = "capsim-check";
  j["version"] = 1;
  j["seed"] = o.seed;
  j["cases"] = o.cases;
  j["shard"] = fmt::format("{}/{}", o.shard, o.shards);
  j["max_size"] = o.max_size;
  if (o.only_case) j["only_case"] = *o.only_case;
  j["ok"] = report.ok();
  j["interrupted"] = report.interrupted;
  Json regressions = Json::array();
  for (const RegressionOutcome& r : report.regressions) {
    Json rj = {
        {"file", r.file}, {"property", r.property->name}, {"result", r.failed ? "fail" : "pass"}};
    if (r.failed) rj["message"] = r.message;
    regressions.push_back(std::move(rj));
  }
  j["regressions"] = std::move(regressions);
  Json properties = Json::array();
  for (const PropertyOutcome& p : report.properties) {
    Json pj = Json::object();
    pj["name"] = p.property->name;
    pj["statement"] = p.property->statement;
    pj["spec"] = p.property->spec;
    pj["result"] = p.failed ? "fail" : "pass";
    pj["cases_run"] = p.cases_run;
    pj["evaluations"] = p.evaluations;
    if (p.failed) pj["failure"] = failure_json(o, p, false);
    properties.push_back(std::move(pj));
  }
  j["properties"] = std::move(properties);
  Json controls = Json::array();
  for (const ControlOutcome& c : report.controls) {
    Json cj = Json::object();
    cj["name"] = c.property->name;
    cj["control"] = c.property->control;
    cj["caught"] = c.caught();
    if (c.not_applicable) cj["not_applicable"] = c.property->control_needs;
    cj["cases_run"] = c.cases_run;
    if (c.caught()) cj["failure"] = failure_json(o, c, true);
    controls.push_back(std::move(cj));
  }
  j["controls"] = std::move(controls);
  // Cases per coverage probe, over the properties that ran.
  const ProbeCounts counts = report.probes();
  Json probes = Json::array();
  for (std::size_t i = 0; i < kProbeCount; ++i) {
    probes.push_back(
        {{"name", kProbes[i].name}, {"rare", kProbes[i].rare}, {"cases", counts.cases[i]}});
  }
  j["probes"] = std::move(probes);
  if (with_timing) {
    Json t = Json::object();
    for (const PropertyOutcome& p : report.properties) {
      t[std::string(p.property->name)] = {
          {"seconds", p.seconds},
          {"cases_per_second", p.seconds > 0 ? static_cast<double>(p.cases_run) / p.seconds : 0}};
    }
    j["timing"] = std::move(t);
  }
  return j;
}

std::vector<std::string> probe_lines(const CheckReport& report) {
  const ProbeCounts counts = report.probes();
  std::uint64_t cases = 0;
  for (const PropertyOutcome& p : report.properties) cases += p.cases_run;
  std::vector<std::string> out{
      fmt::format("coverage probes (cases that reached each path, of {}):", cases)};
  for (std::size_t i = 0; i < kProbeCount; ++i) {
    const std::uint64_t n = counts.cases[i];
    const char* mark = n > 0 ? "  " : (kProbes[i].rare ? "  " : "!!");
    out.push_back(fmt::format("{}{:<22} {:>7}  {:>5.1f} %  {}{}", mark, kProbes[i].name, n,
                              cases > 0 ? 100.0 * static_cast<double>(n) / cases : 0.0,
                              kProbes[i].what, kProbes[i].rare ? " (rare)" : ""));
  }
  return out;
}

namespace {

// One <testcase> per saved counterexample replayed.
void junit_regressions(const CheckReport& report, std::vector<std::string>& out) {
  for (const RegressionOutcome& r : report.regressions) {
    out.push_back(
        fmt::format("  <testcase classname=\"capsim.regressions\" name=\"{}\" time=\"0.000\">",
                    xml_escape(r.file)));
    if (r.failed) {
      out.push_back(fmt::format("    <failure message=\"{}\"/>", xml_escape(r.message)));
    }
    out.push_back("  </testcase>");
  }
}

// One <testcase> per selected property; skipped when the run stopped first.
void junit_properties(const CheckReport& report, const std::vector<const Property*>& selected,
                      std::vector<std::string>& out) {
  for (const Property* p : selected) {
    const auto o = std::find_if(report.properties.begin(), report.properties.end(),
                                [&](const PropertyOutcome& x) { return x.property == p; });
    const bool ran = o != report.properties.end();
    out.push_back(
        fmt::format("  <testcase classname=\"capsim.properties\" name=\"{}\" time=\"{:.3f}\">",
                    xml_escape(p->name), ran ? o->seconds : 0.0));
    if (!ran) {
      out.push_back("    <skipped message=\"the run was interrupted\"/>");
    } else if (o->failed) {
      out.push_back(fmt::format(
          "    <failure message=\"{}\">{}</failure>", xml_escape(o->failure.message),
          xml_escape(fmt::format("case {}, size {}\n{}\nreproduce: {}", o->case_index, o->size,
                                 o->failure.counterexample,
                                 reproduce_command(report.options, *p, o->case_index, false)))));
    }
    out.push_back("  </testcase>");
  }
}

// One <testcase> per selected property's negative control, when they ran.
void junit_controls(const CheckReport& report, const std::vector<const Property*>& selected,
                    std::vector<std::string>& out) {
  if (!report.options.controls) return;
  for (const Property* p : selected) {
    const auto c = std::find_if(report.controls.begin(), report.controls.end(),
                                [&](const ControlOutcome& x) { return x.property == p; });
    const bool ran = c != report.controls.end();
    out.push_back(
        fmt::format("  <testcase classname=\"capsim.controls\" name=\"{}\" time=\"{:.3f}\">",
                    xml_escape(p->name), ran ? c->seconds : 0.0));
    if (!ran) {
      out.push_back("    <skipped message=\"the run was interrupted\"/>");
    } else if (c->not_applicable) {
      out.push_back(fmt::format("    <skipped message=\"the control needs {}\"/>",
                                xml_escape(c->property->control_needs)));
    } else if (!c->caught()) {
      out.push_back(
          fmt::format("    <failure message=\"negative control not caught in {} cases: {}\"/>",
                      c->cases_run, xml_escape(p->control)));
    }
    out.push_back("  </testcase>");
  }
}

}  // namespace

std::vector<std::string> junit_lines(const CheckReport& report,
                                     const std::vector<const Property*>& selected) {
  std::size_t failures = 0, skipped = 0;
  for (const PropertyOutcome& p : report.properties) failures += p.failed;
  std::size_t not_applicable = 0;
  for (const ControlOutcome& c : report.controls) {
    failures += !c.caught() && !c.not_applicable;
    not_applicable += c.not_applicable;
  }
  for (const RegressionOutcome& r : report.regressions) failures += r.failed;
  const std::size_t controls_expected = report.options.controls ? selected.size() : 0;
  const std::size_t tests = report.regressions.size() + selected.size() + controls_expected;
  skipped = tests - report.regressions.size() - report.properties.size() - report.controls.size() +
            not_applicable;
  std::vector<std::string> out{"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"};
  out.push_back(fmt::format(
      "<testsuite name=\"capsim check\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">",
      tests, failures, skipped));
  junit_regressions(report, out);
  junit_properties(report, selected, out);
  junit_controls(report, selected, out);
  out.push_back("</testsuite>");
  return out;
}

void append_indented(std::vector<std::string>& out, const std::string& text,
                     const std::string& indent) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(indent + line);
}

}  // namespace capsim::cli
