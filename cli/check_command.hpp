// The check subcommand: the property catalogue as a product (docs/properties.md).
//
// `capsim check` runs every property of properties/catalogue.hpp over
// generated cases, prints one line per property and a summary, and with
// `--controls` proves that each property can fail. Exit codes: 0 when all
// passed (and every control was caught), 1 when a property failed or a
// control was not caught, 2 on bad usage, 130 when interrupted (Ctrl-C),
// after a partial summary and a valid partial JUnit file.
#pragma once

#include <cstdio>
#include <string>

#include "properties/check_runner.hpp"

namespace capsim::cli {

struct CheckCommandOptions {
  CheckOptions run;
  bool list = false;
  bool json = false;  // the report as JSON on stdout instead of text
  std::string junit;  // a JUnit XML file to write ("" for none)
  // A folder for each failure's (and each caught control's) counterexample, as
  // text and as a trace.
  std::string save_failures;
  bool progress = true;  // a progress bar on stderr, when it is a terminal
  bool stats = false;    // print the coverage probes after the summary
  // Fail (exit 1) when a probe that is not rare was never hit: for the full
  // default run, where every such probe must be reached.
  bool require_probes = false;
  std::string backend = "cpu";  // "cpu" (the model) or "cuda" (docs/cuda-reference.md)
  // Worker processes (check_jobs.hpp); the report is the same for any count.
  int jobs = 1;

  // Where the report (text or JSON) goes: stderr when the JUnit file is
  // standard output ("--junit -"), so that stdout holds the XML alone.
  std::FILE* report_stream() const;
};

int check_command(const CheckCommandOptions& options);

}  // namespace capsim::cli
