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
#include <utility>
#include <vector>

#include "model/result.hpp"
#include "sim/program/program.hpp"
#include "sim/world/world.hpp"
#include "traces/format/trace_format.hpp"
#include "traces/simulation/run_program.hpp"

namespace capsim {

struct ProgramFile {
  TraceHeader header;
  Program program;
  std::vector<std::size_t> action_lines;  // per action, its 1-based line
};

// The limit on a program file's size: programs are written by people and
// generators, not recorded; a bigger file is a trace (capsim replay).
inline constexpr std::uint64_t kMaxProgramBytes = std::uint64_t{64} << 20;

// Reads and checks `path` (read once: "-", a FIFO and a process
// substitution work, traces/format/input_file.hpp). An event line is an error (a program predicts
// its events; `capsim replay` compares a trace's).
Result<ProgramFile> read_program_file(const std::string& path);
// The same over a program's bytes, `name` standing for the file in messages
// (fuzzing reads from memory).
Result<ProgramFile> read_program_bytes(const std::string& bytes, const std::string& name);

// A program already in memory, handed over to run_program as a trace's
// lines: its functions, then its actions at their lines. `file` must
// outlive the source.
class ProgramFileSource final : public ProgramSource {
 public:
  ProgramFileSource(const ProgramFile& file, std::string name)
      : file_(file), name_(std::move(name)) {}
  const TraceHeader& header() const override { return file_.header; }
  const std::string& name() const override { return name_; }
  Result<TraceItem*> next() override;

 private:
  const ProgramFile& file_;
  std::string name_;
  std::size_t next_ = 0;
  TraceItem item_;
};

// A simulated program's record.
struct ProgramRun {
  std::vector<Event> events;  // in order; each names its action
  // Per action run, the cudagraph pool's bytes after it (0 before the pool
  // exists): the charts of `explain --html`.
  std::vector<PoolBytes> pool_bytes;
  Counters counters;
  // The first action that raised (where a real run dies), and, when the run
  // ended early, the first action it did not run and why.
  std::optional<std::size_t> error_at;
  std::optional<std::size_t> stopped_at;
  RunStop stop = RunStop::kNone;
  // Values off: why (values_needed_off's reason, or "--values off").
  std::optional<std::string> values_off;
};

// Whether a run computes values (WorldOptions::values). Auto: off for a
// program whose tensors need it (values_needed_off), on otherwise.
enum class ValuesMode : std::uint8_t { kAuto, kOn, kOff };

// Above this many bytes of new_tensor tensors, auto turns values off: a
// program whose tensors exceed what a host should hold for a prediction.
inline constexpr std::uint64_t kValuesOffAboveBytes = std::uint64_t{1} << 30;

// Why auto turns values off for `program`, or nothing: its new_tensor bytes
// pass kValuesOffAboveBytes, or one of its tensors (a new_tensor, or a fresh
// result of a generic op) spans more than kMaxValueElements, which values on
// refuses.
std::optional<std::string> values_needed_off(const Program& program);

struct ProgramRunOptions {
  std::optional<TorchProfile> torch;  // replaces the header's profile
  // Empty: kDefaultMemoryBudget, or kValuesOffMemoryBudget with values off.
  std::optional<std::uint64_t> memory_budget_bytes;
  OnRaise on_raise = OnRaise::kStop;
  ValuesMode values = ValuesMode::kAuto;
};

// Runs the program (run_program) in one World made from its header, keeping
// the record every prediction reads. An action the World refuses is an
// error naming `path`, the action's line (when `action_lines` has it) and
// its index.
Result<ProgramRun> simulate_program(const ProgramFile& file, const std::string& path,
                                    const ProgramRunOptions& options = {});

}  // namespace capsim
