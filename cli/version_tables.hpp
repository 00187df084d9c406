// The tables `capsim version` prints besides the version: the torch
// profiles, the decisions explain explains (sim/core/decisions.def) and the
// schema of action lines (sim/program/actions.def). Each prints to stdout
// and returns the exit code.
#pragma once

namespace capsim::cli {

// The torch profiles, newest last, each with the rules that set it apart.
int print_profiles();
// One line per decision, or all of it as JSON for tools (the recorder checks
// its reasons against it).
int print_decisions(bool json);
// The schema of action lines as JSON: what the recorder checks each line it
// writes against (recorder/capsim_recorder/action_schema.json).
int print_action_schema();

}  // namespace capsim::cli
