// The Chrome export written to a file as it streams (chrome_export.hpp).
//
// Each trace event is checked (ChromeTraceChecker) and written as it is
// drawn, one event per line (the file diffs and greps well, and is still one
// JSON object), in writes of about a MiB. The output is an OutputFile: the
// caller commits it only when the report is ok, so a failure leaves no file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "model/output_file.hpp"
#include "traces/analyses/chrome_export.hpp"

namespace capsim {

struct ChromeExportReport {
  std::size_t events = 0, replays = 0, kernels = 0, flows = 0;
  // The export failed its own check: a bug in capsim, not in the input.
  bool check_failed = false;
  Status status;  // ok, or why the export stopped (bad input, a failed write)
};

// `on_events`, when set, hears the count of trace events written so far,
// every 2^16 of them (the CLI's progress line).
ChromeExportReport write_chrome_export(
    TraceReader& reader, OutputFile& out, std::uint64_t memory_budget_bytes = 0,
    const std::function<void(std::size_t events)>& on_events = {});

}  // namespace capsim
