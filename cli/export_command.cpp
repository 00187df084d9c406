// The export subcommand (see export_command.hpp).
//
// The export streams (traces/analyses/chrome_export_file.hpp): time linear in the
// trace, memory flat in its events, as for replay. The output's temporary
// is renamed into place only when the whole trace was read and every check
// held; a failure leaves no file behind.
#include "cli/export_command.hpp"

#include <fmt/format.h>

#include <memory>

#include "cli/progress.hpp"
#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "traces/analyses/chrome_export_file.hpp"
#include "traces/format/input_file.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim::cli {

int export_command(const std::string& chrome_out, const std::string& trace,
                   std::uint64_t memory_budget_bytes) {
  Result<std::unique_ptr<TraceReader>> reader = TraceReader::open(trace);
  if (!reader) return fail(reader.error().message);
  Result<std::unique_ptr<OutputFile>> out = OutputFile::create(chrome_out);
  if (!out) return fail(out.error().message);
  ChromeExportReport r;
  {
    TerminalProgress progress;
    r = write_chrome_export(**reader, **out, memory_budget_bytes, [&progress](std::size_t n) {
      progress.count("capsim export: trace events written", n, 1);
    });
  }
  // A viewer would drop or misdraw what fails the check: nothing is written
  // (the temporary goes with `out`), and the bug is capsim's.
  if (r.check_failed) {
    stderr_line(fmt::format("capsim: error: export of {} is not a valid Chrome trace: {}", trace,
                            r.status.error().message));
    return 1;
  }
  if (!r.status) return fail(r.status.error().message);
  for (const std::string& w : (*reader)->warnings()) stderr_line(w);
  if (Status committed = (*out)->commit(); !committed) return fail(committed.error().message);
  // With "-" the export is stdout, and the summary must not join it.
  fmt::print(chrome_out == kStdoutPath ? stderr : stdout,
             "exported {} to {}: {} trace events, {} replays, {} replayed steps, {} flows\n",
             printable_message(input_name(trace)), printable_message(chrome_out), r.events,
             r.replays, r.kernels, r.flows);
  return 0;
}

}  // namespace capsim::cli
