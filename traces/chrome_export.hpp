// Export of a capsim trace to the Chrome Trace Event Format (docs/chrome-export.md).
//
// A capsim trace says what happened (a recording, a copy-in, a replay) but not
// what a replay ran; people reading a timeline want both, in the viewer they
// already use for PyTorch profiles (Perfetto, chrome://tracing). The exporter
// re-simulates the trace action by action, as replay does, to name every
// kernel of every recorded graph, and lays all of it out on a logical clock,
// so the same trace always gives the same bytes.
//
// validate_chrome_trace checks what the viewers rely on and silently drop or
// misdraw otherwise (unmatched flows, badly nested slices); the CLI refuses to
// write a file that fails it.
#pragma once

#include <cstdint>

#include "sim/world/world.hpp"
#include "traces/json_fields.hpp"
#include "traces/trace_reader.hpp"

namespace capsim {

// The processes and threads of the export.
inline constexpr int kChromeHostPid = 0;    // "host: program actions"
inline constexpr int kChromeHostTid = 0;    // "program"
inline constexpr int kChromeDevicePid = 1;  // "cuda:0 (capsim model)"
inline constexpr int kChromeStreamTid = 1;  // "stream 0": capsim models one stream

// Nested step slices in one export, over all replays: beyond it a replay is
// drawn as one slice whose args say why. Keeps an export linear in the
// trace's size whatever its `steps` claim.
inline constexpr std::uint64_t kMaxStepSlices = std::uint64_t{1} << 20;

// Reads the whole trace; an Error is bad input ("FILE:LINE:COL: ...").
// Kernel names come from the re-simulation; where it cannot supply them (the
// model refuses an action, the graph is a plain-API one, the model's graph has
// another step count than the trace's), replays fall back to "step k".
Result<Json> chrome_trace(TraceReader& reader,
                          std::uint64_t memory_budget_bytes = kDefaultMemoryBudget);

// The checks listed above; the error names the offending event by index.
Status validate_chrome_trace(const Json& document);

}  // namespace capsim
