// `capsim explain FILE [--action N] [--json]`: every decision in a trace (or
// in a program, simulated first) in words: what happened, the rule with the
// PyTorch function that applies it, the tensors involved, the usual fix
// (traces/analyses/explain.hpp).
#pragma once

#include <optional>
#include <string>

#include "traces/simulation/program_file.hpp"

namespace capsim::cli {

// Exit 0 after printing; 2 on bad input (the file, or an action index past
// the end), naming the file, the line and the field.
// With `what_if` (an edit, or "auto"), the difference the edit makes instead
// (traces/analyses/what_if.hpp); with `html` as well, the explanations and then the
// what-ifs, and the page gets the what-if table.
// With `html`, the page of explain_html.hpp is written there too (a
// temporary renamed into place); with `html` "-", the page is standard
// output and the report (text or JSON) goes to stderr.
// With `as_on_a_gpu`, a trace recorded without CUDA graphs is explained as
// capsim simulates it with them on (observed_run.hpp); a trace that had them
// is bad input for it.
// Every form folds repeats: an explanation that says the same as an earlier
// one is shown once, with the actions of the others (text and the page name
// the first few and count the rest; JSON lists them all).
struct ExplainOptions {
  std::optional<std::size_t> action;
  bool json = false;
  std::optional<std::string> what_if;
  std::string html;
  bool as_on_a_gpu = false;
  // Simulate on past the first raise (a real run dies there); each later
  // decision is marked as beyond a real run.
  bool keep_going = false;
  // How a simulation runs (values mode, device budget): the run explained
  // and every what-if edit of it alike. `on_raise` comes from keep_going.
  ProgramRunOptions run;
};
int explain_command(const std::string& path, const ExplainOptions& options);

}  // namespace capsim::cli
