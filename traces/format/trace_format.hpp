// The capsim-trace format, version 1: the header and the line envelope.
//
// A trace is JSON Lines (docs/trace-format.md is normative). Every line is one
// object with a sequence number `seq` (0, 1, 2, ... with no gaps) and a `type`:
//   header    line 0: format, version, producer, config, seed, what is observed
//   function  a compiled function's body (all before the first action)
//   action    one Program action, with its index
//   event     one observation, with the index of the action that caused it
// This file builds and parses those envelopes; program_json.hpp and
// event_schema.hpp own the payloads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/cudagraph_config.hpp"
#include "sim/core/events.hpp"
#include "sim/program/program.hpp"
#include "traces/format/json_fields.hpp"

namespace capsim {

inline constexpr std::string_view kTraceFormat = "capsim-trace";
inline constexpr std::int64_t kTraceVersion = 1;
inline constexpr std::string_view kCapsimVersion = "0.1.0";

// Limits on what a reader accepts (a limit on everything).
inline constexpr std::size_t kMaxTraceLineBytes = std::size_t{1} << 20;  // 1 MiB
inline constexpr std::size_t kMaxTraceLines = std::size_t{1} << 26;
static_assert(kMaxRunActions <= kMaxTraceLines, "an action is a line");
inline constexpr std::size_t kMaxTraceFunctions = 4096;
inline constexpr std::size_t kMaxTraceNesting = 32;  // arrays and objects in one line

// X(enumerator, name)
#define CAPSIM_TRACE_LINE_TYPES(X) \
  X(kHeader, "header")             \
  X(kFunction, "function")         \
  X(kAction, "action")             \
  X(kEvent, "event")
enum class TraceLineType : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_TRACE_LINE_TYPES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view trace_line_type_name(TraceLineType type);

// The producer names that capsim writes.
inline constexpr std::string_view kModelProducer = "capsim";
inline constexpr std::string_view kCudaProducer = "capsim-cuda";
// A recorder of real PyTorch runs (recorder/).
inline constexpr std::string_view kPytorchProducer = "pytorch";
// A program's header that leaves `producer` out (docs/trace-format.md §10: a hand-written file).
inline constexpr std::string_view kUserProducer = "user";

struct TraceHeader {
  std::int64_t version = kTraceVersion;
  // Who wrote it: "capsim" (the model), "capsim-cuda" (the CUDA reference)
  // or "pytorch" (the recorder of real runs).
  std::string producer = "capsim";
  std::string capsim_version = std::string(kCapsimVersion);
  std::string name;  // what ran: a scenario or a test
  std::uint64_t seed = 0;
  CudagraphConfig config;
  // The event kinds the producer observed; replay compares only these. None:
  // every kind (a capsim trace).
  std::optional<std::vector<EventKind>> observes;
  // False: capsim ran it with values off (`simulate --values off`, or auto
  // for a program larger than values allow): no read carries a digest, and
  // every reader re-simulates it with values off too. Written only when false.
  bool values = true;
  // Extension fields ("x_device": the GPU a capsim-cuda trace ran on),
  // written in this order; readers skip every "x_" field.
  std::vector<std::pair<std::string, std::string>> extensions;
  // What a recorder says it left out (read, never written back): the ops
  // that kept graphs out of the trace (x_untranslated) and the parts it
  // skipped (x_notes). Replay reports them (`left_out`); an entry that is not
  // a string is ignored, and each list stops at kMaxLeftOut entries.
  std::vector<std::string> untranslated;
  std::vector<std::string> notes;

  bool observed(EventKind kind) const;
  // A trace of the CUDA reference backend carries a `device` event after
  // each record and replay; a re-simulation predicts them too.
  bool has_device_evidence() const { return producer == kCudaProducer; }
  // A recorder of a real run writes the fields it could observe, not every
  // field capsim requires, and real pointers: replay compares the fields an
  // event has, and addresses by their order of first appearance.
  bool observes_real_run() const { return producer == kPytorchProducer; }
};

// The limits on TraceHeader::untranslated and notes: entries, and bytes kept
// of each.
inline constexpr std::size_t kMaxLeftOut = 1000;
inline constexpr std::size_t kMaxLeftOutBytes = 512;

Json header_to_json(const TraceHeader& header);
// `r` reads line 0, whose `seq` and `type` were checked by the caller.
Result<TraceHeader> header_from_json(ObjectReader& r);

// One line each, without the trailing newline. nlohmann writes the keys in
// insertion order, so the bytes are stable.
std::string header_line(const TraceHeader& header);
std::string function_line(std::uint64_t seq, const FunctionDef& def);
std::string action_line(std::uint64_t seq, std::size_t index, const Action& action);
// Fails only when the event breaks the schema (a bug in capsim).
Result<std::string> event_line(std::uint64_t seq, const Event& event);

// The whole trace of a finished run, line by line, in file order: the
// header, the functions, then each action followed by its events.
Result<std::vector<std::string>> trace_lines(const TraceHeader& header, const Program& program,
                                             const std::vector<Event>& events);

}  // namespace capsim
