// Fuzz target for `capsim export --chrome` (libFuzzer's entry point): the
// bytes are a trace, streamed to the Chrome Trace Event Format as the CLI
// streams it and dumped as the file would be written. Cross-checks: every
// event passes the streaming check as it comes (ChromeTraceChecker, what the
// CLI runs), and the whole document passes the whole-document validation
// (the CLI refuses to write a stream that fails its check, so a failure is a
// bug in the exporter, not in the input).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_support.hpp"
#include "traces/analyses/chrome_export.hpp"

namespace {

constexpr const char* kTarget = "fuzz_export";

// Checks each event as the CLI's writer does, and keeps them all.
class CheckingSink : public capsim::ChromeEventSink {
 public:
  capsim::Status event(const capsim::ChromeEvent& event, bool may_start_flows) override {
    if (capsim::Status ok = checker.add(event, may_start_flows); !ok) {
      capsim::fuzz::fail(kTarget, "an exported event fails the streaming check");
    }
    std::string line;
    capsim::append_chrome_event(line, event);
    capsim::Json parsed;
    if (!capsim::parse_trace_json(line, parsed)) {
      capsim::fuzz::fail(kTarget, "an exported event is not JSON");
    }
    events.push_back(std::move(parsed));
    return {};
  }
  capsim::ChromeTraceChecker checker;
  capsim::Json events = capsim::Json::array();
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::unique_ptr<capsim::TraceReader> reader =
      capsim::fuzz::open_checked(kTarget, data, size);
  if (!reader) return 0;
  CheckingSink sink;
  capsim::Result<capsim::Json> doc =
      capsim::stream_chrome_trace(*reader, sink, capsim::fuzz::kFuzzMemoryBudget);
  if (!doc) {
    capsim::fuzz::check_message(kTarget, doc.error());
    return 0;
  }
  if (!sink.checker.finish().ok()) capsim::fuzz::fail(kTarget, "a flow of the stream has no end");
  (*doc)["traceEvents"] = std::move(sink.events);
  if (!capsim::validate_chrome_trace(*doc).ok()) {
    capsim::fuzz::fail(kTarget, "the export fails its own validation");
  }
  (void)doc->dump();
  return 0;
}
