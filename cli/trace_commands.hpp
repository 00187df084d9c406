// The trace subcommands of the capsim binary: record and replay.
//
// Output formatting only; the work is in traces/. Exit codes: 0 when every
// file matches the model, 1 on a divergence or an invariant violation, 2 on
// bad input (the error names file, line and column).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "traces/simulation/resimulation.hpp"

namespace capsim::cli {

inline constexpr int kExitBadInput = 2;

// Prints "capsim: error: <message>" on stderr and returns kExitBadInput.
int fail(const std::string& message);
// Prints one line on stderr, every control byte and invalid UTF-8 escaped
// (traces/format/trace_reader.hpp's printable_message): names and values from the
// input or argv can neither forge a second line nor reach the terminal as
// an escape sequence. Every line capsim writes to stderr goes through here.
void stderr_line(const std::string& line);
// The longest line stderr_line writes whole (bytes, after escaping); a longer
// one is cut at a character's boundary and says how long it was.
inline constexpr std::size_t kMaxStderrLine = 4096;

// `backend`: cpu (the model's trace), host or cuda (the model beside that
// reference backend; the trace's producer is capsim-cuda and it carries the
// reference's evidence: docs/cuda-reference.md).
int record_command(const std::string& scenario, const std::string& output,
                   const std::string& backend = "cpu",
                   std::optional<TorchProfile> torch = std::nullopt);
// More than one file ends with a summary line: how many match, diverge or
// report violations, and could not be read. The report goes to `out`
// (stderr when a drawing of the divergence is standard output).
int replay_command(const std::vector<std::string>& files, bool json,
                   const ResimulationOptions& options, std::FILE* out = stdout);

}  // namespace capsim::cli
