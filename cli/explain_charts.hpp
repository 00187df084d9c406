// The charts of `capsim explain --html`: per compiled function, the pool's
// live and reserved bytes and the bytes copied in per call over the run, with each
// recording, re-recording, eager fallback and error marked on the call
// where it happened (traces/analyses/call_series.hpp). Inline SVG, no script:
// a marker's tooltip is its SVG <title>. Deterministic, like the page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "model/saturating_sum.hpp"
#include "traces/analyses/call_series.hpp"

namespace capsim::cli {

// The most functions charted (the rest are named in a note) and the most
// columns one chart draws: more calls than that are drawn in buckets of
// consecutive calls, each showing its bucket's largest figures and every
// mark in it.
inline constexpr std::size_t kMaxChartedFunctions = 32;
inline constexpr std::size_t kMaxChartColumns = 400;

// The charts section. `pool`: the pool's bytes per action
// (modelled_pool_bytes), or why there are none; `modelled`: they are
// capsim's model beside a trace's observed events, which the legend says.
std::string charts_html(const CallSeries& series, const Result<std::vector<PoolBytes>>& pool,
                        bool modelled);

}  // namespace capsim::cli
