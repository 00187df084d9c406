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
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/world/world.hpp"
#include "traces/analyses/chrome_event.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

// The processes and threads of the export.
inline constexpr int kChromeHostPid = 0;    // "host: program actions"
inline constexpr int kChromeHostTid = 0;    // "program"
inline constexpr int kChromeDevicePid = 1;  // "cuda:0 (capsim model)"
inline constexpr int kChromeStreamTid = 1;  // "stream 0": capsim models one stream

// Nested step slices: at most kMaxStepSlicesPerReplay in one replay, and
// kMaxStepSlices in one export over all replays; beyond either a replay is
// drawn as one slice whose args say why. A replay line's `steps` claim
// (up to 2^20) would otherwise turn a 3 KB trace into 130 MB of slices: with
// the cap one line draws at most about a thousand.
inline constexpr std::uint64_t kMaxStepSlicesPerReplay = 1024;
inline constexpr std::uint64_t kMaxStepSlices = std::uint64_t{1} << 20;

// Where the export's trace events go, one at a time, in the order they are
// drawn (not the order of their timestamps: a host action's slice comes
// after its events, once its end is known).
class ChromeEventSink {
 public:
  virtual ~ChromeEventSink() = default;
  // `may_start_flows`: a slice where flow arrows drawn later may start (a
  // recording, for its replays); a streaming check keeps only those.
  virtual Status event(const ChromeEvent& event, bool may_start_flows) = 0;
};

// Reads the trace line by line and streams its export to `sink`, holding
// only per-graph state (time and memory linear in the graphs, not in the
// events). Returns the document's fields other than traceEvents
// (displayTimeUnit, otherData), which the end of the trace decides. An Error
// is bad input ("FILE:LINE:COL: ...") or the sink's own. Kernel names come
// from the re-simulation; where it cannot supply them (the model refuses an
// action, the graph is a plain-API one, the model's graph has another step
// count than the trace's), replays fall back to "step k".
Result<Json> stream_chrome_trace(TraceReader& reader, ChromeEventSink& sink,
                                 std::uint64_t memory_budget_bytes = 0);
// The whole document at once (tests and fuzzing): each event as the file
// would have its text, parsed back.
Result<Json> chrome_trace(TraceReader& reader, std::uint64_t memory_budget_bytes = 0);

// The checks listed above; the error names the offending event by index.
Status validate_chrome_trace(const Json& document);

// The same checks as the events stream past, in memory that does not grow
// with their number: slices of one thread arrive in time order (parents
// before their children) and nest or are disjoint; each flow's two ends
// match, "f" bound to an open slice of its thread and "s" to one sent with
// `may_start_flows`; metadata names one Chrome knows. The fields themselves
// are typed, so their presence and types need no check. It cannot see a
// flow id used again after both ends came (the whole-document check does).
class ChromeTraceChecker {
 public:
  Status add(const ChromeEvent& event, bool may_start_flows);
  // Every flow that started has ended.
  Status finish() const;

 private:
  struct Span {
    std::uint64_t ts = 0, end = 0;
  };
  struct Thread {
    std::uint64_t last_ts = 0;
    std::vector<Span> open;         // the nesting stack
    std::vector<Span> flow_starts;  // slices sent with may_start_flows, in time order
  };
  struct FlowEnd {
    std::size_t index = 0;
    std::uint64_t ts = 0;
    std::string name;
    std::string_view cat;
    ChromePhase ph = ChromePhase::kFlowStart;
  };
  Status add_slice(std::size_t i, const ChromeEvent& e, bool may_start_flows);
  Status add_flow(std::size_t i, const ChromeEvent& e);
  std::size_t count_ = 0;
  std::map<std::pair<int, int>, Thread> threads_;
  std::map<std::uint64_t, FlowEnd> pending_;  // flows with one end seen, by id
};

}  // namespace capsim
