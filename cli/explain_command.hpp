// `capsim explain FILE [--action N] [--json]`: every decision in a trace (or
// in a program, simulated first) in words: what happened, the rule with the
// PyTorch function that applies it, the tensors involved, the usual fix
// (traces/explain.hpp).
#pragma once

#include <optional>
#include <string>

namespace capsim::cli {

// Exit 0 after printing; 2 on bad input (the file, or an action index past
// the end), naming the file, the line and the field.
int explain_command(const std::string& path, std::optional<std::size_t> action, bool json);

}  // namespace capsim::cli
