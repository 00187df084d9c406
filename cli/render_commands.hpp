// The drawing subcommands of the capsim binary: render and diff, and the
// divergence drawing behind `capsim replay --dot`.
//
// Output formatting only; the drawings, the diff and the Graphviz calls are
// in render/. Without -o the DOT goes to stdout; with -o FILE.{dot,svg,png}
// the file is written atomically (and, for SVG and PNG, the DOT beside it).
// Exit codes: render 0 when written; diff 0 when the graphs are the same
// and 1 when they differ (as diff(1)); both 1 when Graphviz fails (the DOT
// is kept) and 2 on bad input, with one line naming the file and the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace capsim::cli {

struct DrawOptions {
  std::string graph;   // --graph KIND[:ID]; empty: the default kind
  std::string output;  // -o; empty: DOT on stdout
  bool changes_only = false;
  std::uint32_t timeout_s = 60;
  std::size_t max_nodes = 2000;
  std::uint64_t memory_budget_bytes = 0;  // 0: the trace's default (walk_trace)
};

int render_command(const std::string& trace, bool list, const DrawOptions& options);
// `a` and `b` are TRACE or TRACE#KIND[:ID]; with `predicted`, `a` is one trace
// and the diff is its recorded tree against capsim's prediction.
int diff_command(const std::string& a, const std::string& b, bool predicted,
                 const DrawOptions& options);
// After a replay that diverged: the recorded tree against the predicted one,
// written to `output`. Returns the line to print, or the error.
int divergence_dot(const std::string& trace, const std::string& output,
                   std::uint64_t memory_budget_bytes);

}  // namespace capsim::cli
