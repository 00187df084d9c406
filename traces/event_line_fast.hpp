// The fast path of the trace reader for its most common line, an event:
// simdjson's DOM instead of nlohmann's, read straight into typed fields.
//
// It takes only a line it reads exactly as the general reader would, and
// declines everything else: a parse problem, a duplicate key, an "x_"
// extension, a field that is unknown, of the wrong type or out of range, a
// seq or action out of order, a missing required field. A declined line goes
// through the general reader (trace_reader.cpp), which gives it its one-line
// error or reads it. So this file makes no error message of its own, and a
// test compares the two readers on every event of the corpus.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "sim/core/events.hpp"
#include "traces/trace_format.hpp"

namespace capsim {

class FastEventReader {
 public:
  FastEventReader();
  ~FastEventReader();
  FastEventReader(const FastEventReader&) = delete;
  FastEventReader& operator=(const FastEventReader&) = delete;

  // The bytes past the end of a line the parser may read (simdjson's
  // padding): the caller's buffer must have this much capacity beyond it.
  static std::size_t padding();

  // The event on `line` when it is an event line with sequence number `seq`
  // about action `action`, read without a problem; nullopt otherwise.
  std::optional<Event> read(std::string_view line, std::uint64_t seq, std::size_t action,
                            const TraceHeader& header);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace capsim
