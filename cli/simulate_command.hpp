// `capsim simulate PROGRAM [-o TRACE] [--torch P] [--values on|off|auto]
// [--memory-budget B]`: a program in (a header, functions and actions, no
// events; traces/simulation/program_file.hpp), capsim's predicted trace out,
// and on stdout each action with the events it caused.
#pragma once

#include <optional>
#include <string>

#include "traces/simulation/program_file.hpp"

namespace capsim::cli {

// Exit 0 when the program ran; 2 when it is bad input (a malformed line, an
// action the World refuses), naming the file, the line and the field; nothing
// is written under `output` then.
int simulate_command(const std::string& program, const std::string& output,
                     const ProgramRunOptions& options);

}  // namespace capsim::cli
