// Fuzz target for `capsim export --chrome` (libFuzzer's entry point): the
// bytes are a trace, exported to the Chrome Trace Event Format and dumped as
// the file would be written. Cross-check: what the exporter builds passes
// its own validation (the CLI refuses to write a document that fails it, so
// a failure is a bug in the exporter, not in the input).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_support.hpp"
#include "traces/chrome_export.hpp"

namespace {
constexpr const char* kTarget = "fuzz_export";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::unique_ptr<capsim::TraceReader> reader =
      capsim::fuzz::open_checked(kTarget, data, size);
  if (!reader) return 0;
  const capsim::Result<capsim::Json> doc =
      capsim::chrome_trace(*reader, capsim::fuzz::kFuzzMemoryBudget);
  if (!doc) {
    capsim::fuzz::check_message(kTarget, doc.error());
    return 0;
  }
  if (!capsim::validate_chrome_trace(*doc).ok()) {
    capsim::fuzz::fail(kTarget, "the export fails its own validation");
  }
  (void)doc->dump();
  return 0;
}
