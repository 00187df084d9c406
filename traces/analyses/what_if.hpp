// What-ifs: the same program re-simulated with one edit, and the difference
// in what the tree manager did (recordings, re-recordings, replays, copies
// and their bytes, recompiles, errors). `capsim explain FILE --what-if EDIT`.
//
// Edits (one at a time):
//   mark-static=NAME       torch._dynamo.mark_static_address(NAME) after each
//                          action that binds NAME (a new tensor, a call's
//                          output, a new .data; for "p.grad", each
//                          accumulate_grad into p)
//   mark-step-begin@N      torch.compiler.cudagraph_mark_step_begin() before
//                          action N
//   clone=NAME[@N]         NAME = NAME.clone() after action N (which must be
//                          at or after a binding of NAME), or after every
//                          action that binds NAME; clone=A,B,... does so
//                          for each name (auto tries every name an error read)
//   detach=NAME[@N]        NAME = NAME.detach(), placed the same way
//   set-to-none=false      every zero_grad keeps the grads (fills them with 0)
//   config KEY=VALUE       a config field (docs/trace-format.md §3), VALUE JSON
//   torch=VERSION          another release's rules (a torch profile)
//   auto                   every edit that applies, ranked by what it saves
//
// Both runs are capsim's: for a recorded PyTorch trace "before" is capsim's
// simulation of the recorded program, not the recording. Both have CUDA
// graphs on: a trace recorded without them (config cudagraphs false, a CPU
// run) is asked what a GPU under mode="reduce-overhead" would do.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "model/saturating_sum.hpp"
#include "traces/analyses/explain.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/simulation/program_file.hpp"

namespace capsim {

struct RunSummary {
  std::uint64_t recorded = 0, rerecorded = 0, replays = 0, copies = 0;
  SaturatingSum copy_bytes;
  std::uint64_t recompiles = 0, errors = 0, warnings = 0, calls = 0;
  // The first action that raised (where a real run dies), and how many of
  // the program's own steps (calls, backwards, optimizer steps, reads) follow
  // it: an edit that only moves the death later is still better, and the
  // marks and clones an edit inserts are not steps, so they do not skew it.
  std::optional<std::uint64_t> died_at;
  std::uint64_t unreached = 0;
};

// What an edit did to the run, by the ranking's measure (errors, then steps
// left unreached, warnings, re-recordings and recompiles, bytes copied):
// better, the same, worse, or nothing to compare because the edited program
// could not be simulated (WhatIf::refused says why).
#define CAPSIM_WHAT_IF_OUTCOMES(X) \
  X(kImproved, "better")           \
  X(kNoChange, "no change")        \
  X(kWorse, "worse")               \
  X(kNotSimulated, "could not be simulated")
enum class WhatIfOutcome : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_WHAT_IF_OUTCOMES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view what_if_outcome_name(WhatIfOutcome outcome);

struct WhatIf {
  std::string edit;
  RunSummary before, after;
  // The edit could not be simulated: why (the edited program is bad input,
  // or it asks for more than the run's values mode or device budget allow).
  std::optional<std::string> refused;
  bool as_on_a_gpu = false;  // the trace ran without CUDA graphs; both runs have them
  WhatIfOutcome outcome = WhatIfOutcome::kNoChange;
};

// One edit; bad input (an unknown tensor, an action past the end, an
// unknown edit or config key) is an error naming the field "--what-if".
// Both runs are simulated as `how` says, and alike: the same values mode
// (auto resolved once, on the original program: an edit that adds a clone
// does not turn values on or off behind the comparison's back), the same
// device budget, and each ends at its first raise, as a real run does,
// unless `how.on_raise` says to keep going. An original run that cannot be
// simulated so is an error; an edited one that cannot is `refused`.
Result<WhatIf> what_if(const ObservedRun& run, const std::string& edit,
                       const ProgramRunOptions& how = {});
// Every edit that applies to `run`, each simulated as what_if does and none
// dropped: the better ones first, best first (fewer errors, then fewer
// warnings, then fewer re-recordings and recompiles, then fewer bytes copied:
// an edit that saves copies but adds a re-record is worse; one that ends a W1
// is worth the copies it adds), then those that change nothing, then the
// worse ones, then those that could not be simulated, with why.
// `on_edit`, when set, hears each edit before it is tried (k of n; the
// CLI's progress line); nothing of the result depends on it.
Result<std::vector<WhatIf>> what_if_auto(
    const ObservedRun& run, const std::function<void(std::size_t k, std::size_t n)>& on_edit = {},
    const ProgramRunOptions& how = {});
// The edits of `all` that made the run better (auto's answer, in its order).
std::vector<WhatIf> improving(const std::vector<WhatIf>& all);

std::string what_if_text(const WhatIf& w);
Json what_if_json(const WhatIf& w);

}  // namespace capsim
