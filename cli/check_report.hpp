// How `capsim check` shows a CheckReport: the text a person reads, the JSON a
// tool reads, and the JUnit XML that CI systems read.
//
// Everything but the times is a function of the options: the same seed and
// shard give the same text lines, the same JSON (its "timing" object aside)
// and the same JUnit file (its time attributes aside).
#pragma once

#include <string>
#include <vector>

#include "properties/check_runner.hpp"
#include "traces/format/json_fields.hpp"

namespace capsim::cli {

// The command that runs exactly this case again.
std::string reproduce_command(const CheckOptions& options, const Property& property,
                              std::uint64_t case_index, bool control);

// "PASS  name  100 cases  1.23 s", and a failure's details, indented.
std::vector<std::string> property_lines(const CheckOptions& options, const PropertyOutcome& p);
std::vector<std::string> control_lines(const ControlOutcome& c);
std::vector<std::string> regression_lines(const RegressionOutcome& r);
std::string summary_line(const CheckReport& report, double seconds);

// `with_timing` adds the "timing" object, the only part that varies between
// two runs with the same options.
Json report_json(const CheckReport& report, bool with_timing);

// One line per coverage probe: its name, the cases that hit it, their share
// and what it counts; a probe that is not rare and was never hit gets "!!".
std::vector<std::string> probe_lines(const CheckReport& report);

std::vector<std::string> junit_lines(const CheckReport& report,
                                     const std::vector<const Property*>& selected);

// The lines of `text`, each prefixed with `indent`, appended to `out`.
void append_indented(std::vector<std::string>& out, const std::string& text,
                     const std::string& indent);

// XML (and HTML) text and attribute values, the one rule of JUnit XML and of
// explain's page for every string from input, argv or the file system: the
// five characters that have a meaning escaped; a control character XML 1.0
// cannot hold (even as a reference) and a byte outside a valid UTF-8
// sequence shown as the text \xNN, as stderr shows them, so that the
// document always parses and says what the byte was.
std::string xml_escape(std::string_view text);

}  // namespace capsim::cli
