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

// The page. A drawing that cannot be laid out is replaced by a note saying
// why; bad input in the file is an error. `what_ifs` empty: no what-if table.
Result<std::string> explanation_page(const std::string& path, const ObservedRun& run,
                                     const std::vector<Explanation>& explanations,
                                     const std::vector<WhatIf>& what_ifs = {});

}  // namespace capsim::cli
