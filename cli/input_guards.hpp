// What every subcommand checks before it reads or writes anything, and what
// the binary does when the run goes wrong outside a command's control.
//
// An output that is one of the command's inputs is refused before the input
// is read (path_roles.hpp marks which options are which; the check of one
// output against its inputs is here): the rename that puts the output in
// place would destroy it (the DOT written beside an SVG or a PNG counts as
// an output too). An empty value is refused. Every number is read as decimal
// digits (CLI11 alone reads "010" as 8, "0x10" as 16 and "-1" into an
// unsigned flag as 2^64-1). A failed write to standard output is an error
// naming its errno, not a silent exit 0; running out of host memory is one
// line and exit 3.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/core/torch_profile.hpp"
#include "traces/simulation/program_file.hpp"

namespace capsim::cli {

// 0, or "capsim: error: OUTPUT: is the input INPUT; ..." and exit code 2.
int refuse_outputs_onto_inputs(std::span<const std::string> outputs,
                               std::span<const std::string> inputs);
// 0, or exit 2 when an option of the parsed subcommand `sub` was given an
// empty value: `--html ''` would quietly mean "no page" and `--inject ''`
// "no fault", and no option of capsim's takes an empty value on purpose.
int refuse_empty_values(const CLI::App& sub);
// The files a drawing written to `path` consists of (the DOT beside an SVG or
// PNG first), or `path` alone when its format is unknown (the writer refuses
// it later with the formats it knows).
std::vector<std::string> drawing_outputs(const std::string& path);
// The input file of an operand "TRACE#KIND[:ID]".
std::string operand_file(const std::string& operand);

// After a command: 0 when everything printed reached standard output, else
// the error line and exit code 2 (a full disk, a closed pipe), naming the
// failed write's errno: `failed_errno` when the caller caught it, else what
// the last write left.
int finish_stdout(int exit_code, int failed_errno = 0);

// Running out of host memory (a trace whose tensors the host cannot hold
// under --memory-budget, RLIMIT_AS, a full machine) ends with one line,
// "capsim: error: out of host memory ...", and kExitOutOfMemory, from
// std::set_new_handler and mimalloc's error hook; never an abort with
// nothing on stderr.
void exit_with_a_line_when_out_of_memory();
inline constexpr int kExitOutOfMemory = 3;

// Digits only, within 64 bits: the value of --seed and --case.
CLI::Validator unsigned_64_bit();
// Every numeric flag reads decimal digits and nothing else (no capsim flag
// takes a negative number): CLI11 alone reads "010" as 8 and "0x10" as 16, and
// "-1" into an unsigned flag as 2^64-1. Leading zeros are dropped, so "010"
// is ten. Add it with ->transform(): only a transform may rewrite the text
// (->check() hands a validator a copy), and transforms run before every
// check, the last added first. Its name is kDecimalValidator; PathRoles::check_complete asserts
// that every INT, UINT and FLOAT option has it.
CLI::Validator decimal();
inline constexpr const char* kDecimalValidator = "DECIMAL";
// --memory-budget: a size with an optional unit (CLI11's AsSizeValue: 512MiB,
// 4GiB, or bytes), from 1 MiB to sim/world/world.hpp's kMaxMemoryBudget.
// Simulated device memory with values on is host memory: a command that
// always computes values (replay, render, diff, export) refuses a budget
// the host cannot give as it parses; one whose values mode is decided by the
// program (simulate, explain, expect) checks when the run starts, and only
// with values on (values off allocates no device bytes).
enum class BudgetOnHost : std::uint8_t { kCheckNow, kCheckWhenValuesOn };
void add_memory_budget_option(CLI::App* sub, std::uint64_t& bytes,
                              BudgetOnHost on_host = BudgetOnHost::kCheckNow);

// --values MODE and --memory-budget of a command that simulates a program
// (simulate, explain, expect): the same flags, the same meaning.
struct SimulationFlags {
  std::string values = "auto";
  std::uint64_t budget = 0;  // 0: the default of the values mode
};
void add_simulation_options(CLI::App* sub, SimulationFlags& flags);
ProgramRunOptions simulation_options(const SimulationFlags& flags, bool keep_going);

// --torch VERSION: a release from 2.5 to 2.15 ("2.13", "2.13.1") or a
// profile's name ("classic"), read into `profile`
// (sim/core/torch_profile.hpp). Unset, a command keeps the profile its
// input names (a scenario's, a trace header's: classic when none).
void add_torch_option(CLI::App* sub, std::optional<TorchProfile>& profile);

// Names from `known` within a small edit distance of `name`, nearest first,
// for "did you mean" (at most three).
std::vector<std::string> similar_names(const std::string& name,
                                       const std::vector<std::string>& known);
// ", did you mean 'a' or 'b'?" or "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);
// The names of sim/scenarios/scenarios.hpp's built-in scenarios, in their order.
std::vector<std::string> scenario_names();

}  // namespace capsim::cli
