// The capsim command line: every subcommand and its flags, parsed and
// checked before anything runs.
//
// Every failure a user can cause (a bad flag, a value out of range, an
// unknown subcommand, an output onto an input) ends as one line on stderr,
// "capsim: error: <message>", and exit code 2, before the subcommand reads
// anything. Parsing is apart from running so that a fuzz target
// (tests/fuzz/fuzz_cli_args.cpp) can drive the whole parser and its guards
// without running a command.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "cli/path_roles.hpp"

namespace capsim::cli {

// One subcommand: the CLI11 app its options parse into, and what it runs once
// parsed. The options live in the closure, so each add_* function is the
// whole of one subcommand's command line.
struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

class CommandLine {
 public:
  // Defines every subcommand; asserts that each path option has its role and
  // each numeric option its decimal validator (path_roles.hpp).
  CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // Parses argv and runs the guards. nullopt: a subcommand is ready to
  // run(); else the exit code of what parsing did (help or the version
  // printed: 0; a refusal printed on stderr: 2).
  std::optional<int> parse(int argc, char** argv);
  // The parsed subcommand's exit code.
  int run() const;

 private:
  std::unique_ptr<CLI::App> app_;  // the options' closures point into it
  PathRoles roles_;
  std::vector<Subcommand> subcommands_;
  const Subcommand* chosen_ = nullptr;
};

// parse(), then run() when a subcommand was chosen.
int run_command_line(int argc, char** argv);

}  // namespace capsim::cli
