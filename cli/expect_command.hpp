// `capsim expect FILE [--max-rerecords N ...] [--limits PATH.toml]`: checks
// limits on a run's cudagraph behaviour (traces/analyses/expectations.hpp)
// and says, for each broken one, the figure, the limit and explain's
// paragraph for the decision that broke it. For CI: exit 0 when every limit
// holds, 1 when one is broken, 2 on bad input (the file, a flag, the limits
// file), with --json and --junit as `capsim check` writes them.
//
// The run is the file's: a GPU run's trace as recorded, a program simulated,
// and a CPU run's trace (`"cudagraphs": false`) simulated as on a GPU, as
// `explain --as-on-a-gpu` does. A simulation ends at the first raise, as a
// real run does, unless --keep-going.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "cli/command_line.hpp"
#include "cli/path_roles.hpp"
#include "traces/analyses/expectations.hpp"
#include "traces/simulation/program_file.hpp"

namespace capsim::cli {

struct ExpectOptions {
  // Per limit kind, the flag's values in the order given.
  std::array<std::vector<std::string>, kLimitKinds> flags;
  std::string limits_file;
  bool json = false;
  std::string junit;
  bool keep_going = false;
  // How a simulation runs (values mode, device budget); on_raise from keep_going.
  ProgramRunOptions run;
};

int expect_command(const std::string& path, const ExpectOptions& options);

// The subcommand, for CommandLine.
Subcommand add_expect(CLI::App& root, PathRoles& roles);

}  // namespace capsim::cli
