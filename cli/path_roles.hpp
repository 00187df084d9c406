// Which command-line options name files, and whether each is read or written.
//
// Every option that takes a path is marked with its role when the command
// line is defined, and one guard, run after parsing and before any command
// reads anything, refuses an output that would land on something the command
// reads: the same file (by device and inode, so a link counts), or a file
// inside a folder it reads (`check --regressions DIR --junit DIR/X.jsonl`
// would replace a regression with XML). Because the guard reads the parsed
// options themselves, a new output flag is guarded the moment it is marked,
// and `check_complete` makes marking it unavoidable: an option of type TEXT
// (a string that is neither a path nor given a type name of its own) is a
// programming error, caught by every run of the binary.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace capsim::cli {

// X(enumerator, name in `capsim version --paths`, type name in --help)
#define CAPSIM_PATH_ROLES(X)                                                 \
  X(kInput, "input", "FILE")          /* a file the command reads */         \
  X(kInputOperand, "input", "TRACE")  /* TRACE or TRACE#KIND[:ID] */         \
  X(kInputDir, "input-dir", "DIR")    /* a folder whose files it reads */    \
  X(kOutput, "output", "FILE")        /* a file it writes ("-": stdout) */   \
  X(kOutputDrawing, "output", "FILE") /* a drawing, and the DOT beside it */ \
  X(kOutputDir, "output-dir", "DIR")  /* a folder it writes files into */

enum class PathRole : std::uint8_t {
#define CAPSIM_PATH_ROLE_ENUM(e, name, type) e,
  CAPSIM_PATH_ROLES(CAPSIM_PATH_ROLE_ENUM)
#undef CAPSIM_PATH_ROLE_ENUM
};

std::string_view path_role_name(PathRole role);

class PathRoles {
 public:
  // Records `option`'s role and gives it the role's type name; returns it.
  CLI::Option* mark(CLI::Option* option, PathRole role);

  // Asserts that no option of `app`'s subcommands is an unnamed string
  // (type TEXT): each is either marked here or typed as what it holds.
  void check_complete(CLI::App& app) const;

  // 0, or the error line and exit code 2 when an output of the parsed
  // subcommand `sub` would land on one of its inputs.
  int refuse_outputs_onto_inputs(const CLI::App& sub) const;

  // "SUBCOMMAND OPTION ROLE" for every marked option, in --help's order
  // (`capsim version --paths`; tests/cli/outputs_onto_inputs.sh reads it).
  std::vector<std::string> listing(const CLI::App& app) const;

 private:
  const PathRole* role_of(const CLI::Option* option) const;
  std::vector<std::pair<const CLI::Option*, PathRole>> roles_;
};

}  // namespace capsim::cli
