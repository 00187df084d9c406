// Built-in compiled-autograd scenarios, behind `capsim capture`.
//
// Each mirrors a test of test/inductor/test_compiled_autograd.py (spec §6): it
// builds one or more backward graphs with the eager engine, runs Phase A and
// the cache for each backward, and captures on every miss in the chosen mode.
// The run keeps every captured graph's text, every MetadataRead and every cache
// decision, so that `capsim capture NAME --mode legacy` shows where the legacy
// capture read proxy metadata and the functional one did not. The same run is
// also a list of events, which a World emits when a program runs a scenario
// as one `capture_scenario` action, so that traces hold compiled autograd's
// observations too (docs/trace-format.md).
#pragma once

#include <string>
#include <vector>

#include "sim/autograd/compiled_autograd_runner.hpp"

namespace capsim {

const std::vector<AutogradScenario>& builtin_autograd_scenarios();
const AutogradScenario* find_autograd_scenario(const std::string& name);

}  // namespace capsim
