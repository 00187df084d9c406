// `capsim export --chrome OUT TRACE`: a capsim trace as a Chrome trace file.
//
// Output formatting only; the export is traces/analyses/chrome_export. Exit codes: 0
// when the file was written, 1 when the export fails its own validation (a
// bug in capsim: nothing is written), 2 on bad input (the error names file,
// line and column).
#pragma once

#include <cstdint>
#include <string>

namespace capsim::cli {

int export_command(const std::string& chrome_out, const std::string& trace,
                   std::uint64_t memory_budget_bytes);

}  // namespace capsim::cli
