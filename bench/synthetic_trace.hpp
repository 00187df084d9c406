// The synthetic trace the trace benchmarks read and replay.
//
// A steady training-like loop, recorded the way `capsim record` does it (a
// World with verify_replays off, the lines of traces/format/trace_format.hpp) but
// streamed: each action's events are taken from the World and written at
// once, so a 10^7-event trace costs no memory to write. The loop is
// mark_step_begin, a fresh random input x and a call g(x, w) with w an
// nn.Parameter: after the warmup and the recording every call is a replay
// with a copy-in.
//
// The writer can also damage the trace once `fault_after_events` events are
// written, for the bad-input figures of docs/performance.md's target table:
// cut it in the middle of a line (a killed recorder), or put one line of
// broken JSON there and go on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/result.hpp"

namespace capsim::bench {

enum class TraceDamage : std::uint8_t {
  kNone,
  kCut,            // half a line, then nothing
  kMalformedLine,  // one event line without its closing brace, then the rest
};

struct SyntheticTraceOptions {
  std::size_t min_events = 0;  // the loop runs until at least this many events
  TraceDamage damage = TraceDamage::kNone;
  std::size_t fault_after_events = 0;  // where the damage goes (kNone: unused)
};

// What was written.
struct SyntheticTrace {
  std::uint64_t bytes = 0;
  std::size_t lines = 0;  // complete lines, the header included
  std::size_t actions = 0;
  std::size_t events = 0;  // events written before the damage, or all of them
  // The 1-based line the damage is on (0 when there is none).
  std::size_t damaged_line = 0;
};

// Writes the trace to `path` (a file, or /dev/fd/N for a pipe). A write that
// fails stops the writer with an error: a reader that stopped early (at the
// damage) closes the pipe, and that is how the writer learns it.
Status write_synthetic_trace(const std::string& path, const SyntheticTraceOptions& options,
                             SyntheticTrace& out);

}  // namespace capsim::bench
