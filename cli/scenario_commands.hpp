// The subcommands that run built-in work: `run`, `scenario` and `capture`
// (scenario_commands.cpp says what each prints).
#pragma once

#include <optional>
#include <string>

#include "sim/core/torch_profile.hpp"
#include "sim/scenarios/adam_replay_job.hpp"

namespace capsim::cli {

// `capsim run`: one recorded AdamW step replayed `options.steps` times, with
// a progress line on a terminal. 0, or 2 on bad input.
int run_command(AdamReplayJobOptions options);
// `capsim scenario --list`.
int list_scenarios();
// A built-in scenario's events and expectations: 0 when every expectation
// holds, 1 when one does not (a bug in capsim), 2 for a bad name.
int scenario_command(const std::string& name, std::optional<TorchProfile> torch);
// Compiled autograd's capture of a built-in autograd scenario ("functional"
// or "legacy" mode): 0, or 1 when its grads differ from eager's.
int capture_command(const std::string& name, const std::string& mode_name,
                    std::optional<TorchProfile> torch);

}  // namespace capsim::cli
