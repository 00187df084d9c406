// TraceTextStream (see trace_text_stream.hpp): a stream buffer that writes the next line of the
// run into its get area each time the area runs dry.
#include "traces/format/trace_text_stream.hpp"

#include <fmt/format.h>

#include <streambuf>
#include <string>

namespace capsim {

class TraceTextStream::Buffer : public std::streambuf {
 public:
  Buffer(TraceHeader header, const Program& program, const std::vector<Event>& events)
      : header_(std::move(header)), program_(program), events_(events) {}

  Status status() const { return status_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (!next_line()) return traits_type::eof();
    line_ += '\n';
    setg(line_.data(), line_.data(), line_.data() + line_.size());
    return traits_type::to_int_type(*gptr());
  }

 private:
  // The next line into line_, in trace_lines's order; false at the end (or
  // at an error, kept in status_).
  bool next_line() {
    if (!status_) return false;
    if (!header_written_) {
      header_written_ = true;
      line_ = header_line(header_);
      return true;
    }
    if (next_function_ < program_.functions.size()) {
      line_ = function_line(seq_++, program_.functions[next_function_++]);
      return true;
    }
    // The events of the action written last, then the next action.
    while (next_event_ < events_.size() && action_written_ &&
           events_[next_event_].action == next_action_ - 1) {
      const Event& e = events_[next_event_++];
      if (!header_.observed(e.kind)) continue;
      Result<std::string> line = event_line(seq_++, e);
      if (!line) {
        status_ = line.error();
        return false;
      }
      line_ = std::move(*line);
      return true;
    }
    if (next_action_ < program_.actions.size()) {
      line_ = action_line(seq_++, next_action_, program_.actions[next_action_]);
      ++next_action_;
      action_written_ = true;
      return true;
    }
    if (next_event_ != events_.size()) {
      status_ = make_error(fmt::format("event {} names action {}, which is out of order",
                                       next_event_, events_[next_event_].action));
    }
    return false;
  }

  TraceHeader header_;
  const Program& program_;
  const std::vector<Event>& events_;
  std::string line_;
  std::uint64_t seq_ = 1;
  bool header_written_ = false, action_written_ = false;
  std::size_t next_function_ = 0, next_action_ = 0, next_event_ = 0;
  Status status_;
};

TraceTextStream::TraceTextStream(TraceHeader header, const Program& program,
                                 const std::vector<Event>& events)
    : std::istream(nullptr), buffer_(std::make_unique<Buffer>(std::move(header), program, events)) {
  rdbuf(buffer_.get());
}

TraceTextStream::~TraceTextStream() = default;

Status TraceTextStream::status() const {
  return buffer_->status();
}

}  // namespace capsim
