// `capsim explain FILE --html OUT`: one self-contained page (no scripts, no
// links out) with the run's drawing (the tree, or the first captured graph;
// an SVG laid out by libgvc), a chart per compiled function of the pool's
// live bytes and the bytes copied in per call (cli/explain_charts.hpp), the
// timeline (each action with its events) and
// the explanations, side by side, and the what-ifs asked for (`--what-if`
// with `--html`) above the explanations. Deterministic: the same file gives
// the same bytes.
#pragma once

#include <string>
#include <vector>

#include "model/result.hpp"
#include "traces/analyses/explain.hpp"
#include "traces/analyses/what_if.hpp"

namespace capsim::cli {

// The page's size is bounded by the number of distinct decisions, not by the
// run's length: explanations are folded (each shown once, with the first
// kFoldedActionsNamed actions that repeat it and a count), the timeline shows
// the first kTimelineHead actions and the action of every explanation, and
// each of its rows at most kTimelineEvents events and kTimelineRowBytes of
// the action; the drawing and the charts have bounds of their own.
inline constexpr std::size_t kTimelineHead = 256;
inline constexpr std::size_t kTimelineEvents = 32;
inline constexpr std::size_t kTimelineRowBytes = 1024;

// The page. A drawing that cannot be laid out is replaced by a note saying
// why; bad input in the file is an error. `what_ifs` empty: no what-if table.
// The drawing is made from `run` as read (the file is not read again: it may
// have been a pipe); the pool's bytes are capsim's model, simulated as `how`
// says.
Result<std::string> explanation_page(const std::string& path, const ObservedRun& run,
                                     const std::vector<FoldedExplanation>& explanations,
                                     const std::vector<WhatIf>& what_ifs,
                                     const ProgramRunOptions& how);

}  // namespace capsim::cli
