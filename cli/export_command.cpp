// The export subcommand (see export_command.hpp).
#include "cli/export_command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "cli/input_guards.hpp"
#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "traces/chrome_export.hpp"
#include "traces/trace_writer.hpp"

namespace capsim::cli {

namespace {

// One trace event per line, so that the file diffs and greps well; the
// whole is still one JSON object.
std::vector<std::string> document_lines(const Json& doc) {
  std::vector<std::string> lines{"{\"traceEvents\":["};
  const Json& events = doc["traceEvents"];
  for (std::size_t i = 0; i < events.size(); ++i) {
    lines.push_back(events[i].dump() + (i + 1 < events.size() ? "," : ""));
  }
  std::string rest = "]";
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() != "traceEvents") rest += "," + Json(it.key()).dump() + ":" + it.value().dump();
  }
  lines.push_back(rest + "}");
  return lines;
}

}  // namespace

int export_command(const std::string& chrome_out, const std::string& trace,
                   std::uint64_t memory_budget_bytes) {
  Result<std::unique_ptr<TraceReader>> reader = TraceReader::open(trace);
  if (!reader) return fail(reader.error().message);
  Result<Json> doc = chrome_trace(**reader, memory_budget_bytes);
  if (!doc) return fail(doc.error().message);
  for (const std::string& w : (*reader)->warnings()) stderr_line(w);
  // A viewer would drop or misdraw what fails here, so nothing is written.
  if (Status valid = validate_chrome_trace(*doc); !valid) {
    stderr_line(fmt::format("capsim: error: export of {} is not a valid Chrome trace: {}", trace,
                            valid.error().message));
    return 1;
  }
  Status written = write_trace_file(chrome_out, document_lines(*doc));
  if (!written) return fail(written.error().message);
  std::size_t replays = 0, kernels = 0, flows = 0;
  const Json& events = (*doc)["traceEvents"];
  for (auto it = events.begin(); it != events.end(); ++it) {
    const std::string ph = (*it)["ph"].get<std::string>();
    const std::string name = (*it)["name"].get<std::string>();
    if (ph == "X" && name.starts_with("replay ")) ++replays;
    if (ph == "X" && it->contains("args") && (*it)["args"].contains("graph_node_id")) ++kernels;
    if (ph == "s") ++flows;
  }
  // With "-" the export is stdout, and the summary must not join it.
  fmt::print(chrome_out == kStdoutPath ? stderr : stdout,
             "exported {} to {}: {} trace events, {} replays, {} replayed steps, {} flows\n", trace,
             chrome_out, events.size(), replays, kernels, flows);
  return 0;
}

}  // namespace capsim::cli
