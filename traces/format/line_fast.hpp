// The fast path of the trace reader for its most common lines, events and
// the common actions: simdjson's DOM instead of nlohmann's, read straight
// into typed values.
//
// It takes only a line it reads exactly as the general reader would, and
// declines everything else: a parse problem, a duplicate key, an "x_"
// extension, a field that is unknown, of the wrong type or out of range, a
// seq, action or index out of order, a missing required field, and the
// action kinds it does not know (an optimizer's creation, a capture
// scenario, an imported graph). A declined line goes through the general
// reader (trace_reader.cpp), which gives it its one-line error or reads it.
// So the fast path makes no error message of its own, and a test
// (tests/traces/test_line_fast.cpp) compares the two readers on every line
// of the corpus and on lines made to be declined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "sim/core/events.hpp"
#include "sim/program/program.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim {

// One line as the fast path read it: an event or an action.
struct FastLine {
  TraceLineType type = TraceLineType::kEvent;
  Event event;                   // kEvent
  std::size_t action_index = 0;  // kAction
  Action action;                 // kAction
};

class FastLineReader {
 public:
  FastLineReader();
  ~FastLineReader();
  FastLineReader(const FastLineReader&) = delete;
  FastLineReader& operator=(const FastLineReader&) = delete;

  // The bytes past the end of a line the parser may read (simdjson's
  // padding): the caller's buffer must have this much capacity beyond it.
  static std::size_t padding();

  // `line` read as the line with sequence number `seq`, when it is an event
  // about `last_action` or the action after it (0 when there is none yet),
  // and reads without a problem: true, with the line in `out`. False
  // otherwise, and `out` holds nothing to read.
  bool read(std::string_view line, std::uint64_t seq, std::optional<std::size_t> last_action,
            const TraceHeader& header, FastLine& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace capsim
