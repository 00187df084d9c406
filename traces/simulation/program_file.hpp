// A program file: what `capsim simulate` reads. It is a trace without events
// (docs/trace-format.md): a header, function lines, action lines. Because
// people write these by hand, a program may leave out what a trace must
// carry: in the header everything but `"type":"header"` (format, version,
// producer "user", capsim_version, name: the file's stem, seed 0, and every
// config field, which takes its default), on each line `seq` (the line's
// position), an action's `index` (its position among the actions) and a
// function's `static_input_idxs` and `param_input_idxs` (empty). What is
// written is checked exactly as in a trace; a filled-in line keeps its line
// number, so every error names the file, the line and the field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/world/program.hpp"
#include "sim/world/world.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim {

struct ProgramFile {
  TraceHeader header;
  Program program;
  std::vector<std::size_t> action_lines;  // per action, its 1-based line
};

// Reads and checks `path`. An event line is an error (a program predicts its
// events; `capsim replay` compares a trace's).
Result<ProgramFile> read_program_file(const std::string& path);
// The same over a program's bytes, `name` standing for the file in messages
// (fuzzing reads from memory).
Result<ProgramFile> read_program_bytes(const std::string& bytes, const std::string& name);

struct ProgramRun {
  std::vector<Event> events;  // in order; each names its action
  Counters counters;
  // With stop_after_error: the first action the World refused after an error
  // event (E1, G3, ...), which left unmade what that action needs (a call
  // that raised binds no outputs). A GPU run ends at the error itself, as an
  // uncaught RuntimeError; error_at is that action.
  std::optional<std::size_t> stopped_at;
  std::optional<std::size_t> error_at;
};

// Runs the program in one World made from its header (`torch`, when given,
// replaces the profile). An action the World refuses is an error naming
// `path`, the action's line (when `action_lines` has it) and its index.
Result<ProgramRun> run_program_file(const ProgramFile& file, const std::string& path,
                                    std::optional<TorchProfile> torch = std::nullopt,
                                    std::uint64_t memory_budget_bytes = kDefaultMemoryBudget,
                                    bool stop_after_error = false);

}  // namespace capsim
