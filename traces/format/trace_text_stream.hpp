// A run held in memory, read back as a trace's text without holding that
// text: the lines of trace_lines (trace_format.hpp), made one at a time as a
// reader asks for them.
//
// `capsim explain --html` draws a run it has already read (a file read once:
// it may have been a pipe) or simulated; the drawings read a trace. Before,
// the whole text was built first, twice the run's size again in memory for a
// trace of hundreds of megabytes; this stream holds one line.
#pragma once

#include <istream>
#include <memory>
#include <vector>

#include "model/result.hpp"
#include "sim/core/events.hpp"
#include "sim/program/program.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim {

class TraceTextStream : public std::istream {
 public:
  // `program` and `events` must outlive the stream; events in action order.
  TraceTextStream(TraceHeader header, const Program& program, const std::vector<Event>& events);
  ~TraceTextStream() override;
  TraceTextStream(const TraceTextStream&) = delete;
  TraceTextStream& operator=(const TraceTextStream&) = delete;

  // What ended the text early (an event the writer refuses, events out of
  // action order: a bug in capsim, as trace_lines says), or nothing.
  Status status() const;

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
};

}  // namespace capsim
