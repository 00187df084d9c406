// The Chrome export as a streamed file (see chrome_export_file.hpp).
#include "traces/analyses/chrome_export_file.hpp"

#include <string>

namespace capsim {

namespace {

// An event's line is written without its comma, which the next one adds.
class StreamingWriter : public ChromeEventSink {
 public:
  StreamingWriter(OutputFile& out, ChromeExportReport& report,
                  const std::function<void(std::size_t)>& on_events)
      : out_(out), report_(report), on_events_(on_events) {
    buffer_ = "{\"traceEvents\":[\n";
  }

  Status event(const ChromeEvent& event, bool may_start_flows) override {
    if (Status ok = checker_.add(event, may_start_flows); !ok) {
      report_.check_failed = true;
      return ok;
    }
    count(event);
    if (held_) {
      buffer_.append(",\n");
      // One write per MiB, not per event (a write per event was a tenth of
      // the export's time).
      if (buffer_.size() >= kFlushBytes) CAPSIM_TRY(flush());
    }
    append_chrome_event(buffer_, event);
    held_ = true;
    return {};
  }

  // The last event, the rest of the document, and the flows' last check.
  Status finish(const Json& rest) {
    if (Status ok = checker_.finish(); !ok) {
      report_.check_failed = true;
      return ok;
    }
    if (held_) buffer_.append("\n");
    buffer_ += "]";
    for (auto it = rest.begin(); it != rest.end(); ++it) {
      buffer_ += "," + Json(it.key()).dump() + ":" + it.value().dump();
    }
    buffer_ += "}\n";
    return flush();
  }

 private:
  void count(const ChromeEvent& e) {
    ++report_.events;
    if (on_events_ && report_.events % (std::size_t{1} << 16) == 0) on_events_(report_.events);
    const bool slice = e.ph == ChromePhase::kComplete;
    if (slice && e.pid == kChromeDevicePid && e.name.starts_with("replay ")) ++report_.replays;
    if (slice && e.replayed_step) ++report_.kernels;
    if (e.ph == ChromePhase::kFlowStart) ++report_.flows;
  }

  Status flush() {
    CAPSIM_TRY(out_.write(buffer_));
    buffer_.clear();
    return {};
  }

  static constexpr std::size_t kFlushBytes = std::size_t{1} << 20;
  OutputFile& out_;
  ChromeExportReport& report_;
  const std::function<void(std::size_t)>& on_events_;
  ChromeTraceChecker checker_;
  bool held_ = false;   // an event is written, and the next needs a comma
  std::string buffer_;  // lines not yet written
};

}  // namespace

ChromeExportReport write_chrome_export(TraceReader& reader, OutputFile& out,
                                       std::uint64_t memory_budget_bytes,
                                       const std::function<void(std::size_t)>& on_events) {
  ChromeExportReport report;
  StreamingWriter writer(out, report, on_events);
  Result<Json> rest = stream_chrome_trace(reader, writer, memory_budget_bytes);
  report.status = rest ? writer.finish(*rest) : Status(rest.error());
  return report;
}

}  // namespace capsim
