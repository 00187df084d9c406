// Built-in compiled-autograd scenarios, behind `capsim capture`.
//
// Each mirrors a test of test/inductor/test_compiled_autograd.py (the table of
// docs/compiled-autograd.md, "`capsim capture`"): it builds one or more
// backward graphs with the eager engine, runs Phase A and the cache for each
// backward, and captures on every miss in the chosen mode.
// A scenario is its forward: standalone (`AutogradScenario::run`), the run
// keeps every captured graph's text, every MetadataRead and every cache
// decision, so that `capsim capture NAME --mode legacy` shows where the legacy
// capture read proxy metadata and the functional one did not. A World runs
// the same forward on its own tensors for a `run_capture_scenario` action and
// its backwards as compiled backwards (sim/world/world_capture.cpp), so
// traces hold compiled autograd's observations and the tree manager's calls
// of the captures (docs/trace-format.md).
#pragma once

#include <string>
#include <vector>

#include "sim/compiled_autograd/runner.hpp"

namespace capsim {

const std::vector<AutogradScenario>& builtin_autograd_scenarios();
const AutogradScenario* find_autograd_scenario(const std::string& name);

}  // namespace capsim
