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
#include "traces/analyses/explain.hpp"
#include "traces/format/json_fields.hpp"

namespace capsim {

struct RunSummary {
  std::uint64_t recorded = 0, rerecorded = 0, replays = 0, copies = 0, copy_bytes = 0;
  std::uint64_t recompiles = 0, errors = 0, warnings = 0, calls = 0;
  // The first action that raised (where a real run dies), and how many of
  // the program's own steps (calls, backwards, optimizer steps, reads) follow
  // it: an edit that only moves the death later is still better, and the
  // marks and clones an edit inserts are not steps, so they do not skew it.
  std::optional<std::uint64_t> died_at;
  std::uint64_t unreached = 0;
};

struct WhatIf {
  std::string edit;
  RunSummary before, after;
  std::optional<std::string> refused;  // the edited program is bad input (why)
  bool as_on_a_gpu = false;            // the trace ran without CUDA graphs; both runs have them
};

// One edit; bad input (an unknown tensor, an action past the end, an
// unknown edit or config key) is an error naming the field "--what-if".
// Both runs end at their first raise, as a real run does, unless `on_raise`
// says to keep going.
Result<WhatIf> what_if(const ObservedRun& run, const std::string& edit,
                       OnRaise on_raise = OnRaise::kStop);
// Every edit that applies to `run` and improves it, best first: fewer
// errors, then fewer warnings, then fewer re-recordings and recompiles, then
// fewer bytes copied (in that order: an edit that saves copies but adds a
// re-record is worse; one that ends a W1 is worth the copies it adds).
// `on_edit`, when set, hears each edit before it is tried (k of n; the
// CLI's progress line); nothing of the result depends on it.
Result<std::vector<WhatIf>> what_if_auto(
    const ObservedRun& run, const std::function<void(std::size_t k, std::size_t n)>& on_edit = {},
    OnRaise on_raise = OnRaise::kStop);

std::string what_if_text(const WhatIf& w);
Json what_if_json(const WhatIf& w);

}  // namespace capsim
