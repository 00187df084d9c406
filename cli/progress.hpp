// A one-line progress report on stderr for commands that can run long.
//
// `capsim run --steps 1000000` ran 43 s without a word; `check` had its own
// bar. Every long command now draws one line on stderr, redrawn in place
// ("\r", erase to the end of the line), and only when both stdout and
// stderr are terminals: a log, a pipe or CI gets no control characters and
// no line at all. The line is redrawn only when its text changes (a
// percentage, a name), never on a timer, so a run's output never depends on
// the clock; `clear()` (and the destructor) erase it before the command
// prints its report.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace capsim::cli {

class TerminalProgress {
 public:
  // `enabled` false keeps it silent (a --no-progress flag); else it draws
  // only on a terminal (above).
  explicit TerminalProgress(bool enabled = true);
  ~TerminalProgress();
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

  // "WHAT DONE/TOTAL (P%)", redrawn when the percentage or `what` changes.
  void update(std::string_view what, std::uint64_t done, std::uint64_t total);
  // "WHAT DONE" for work of unknown size, redrawn every `every` units.
  void count(std::string_view what, std::uint64_t done, std::uint64_t every);
  // Erases the line (before the command prints anything else).
  void clear();

 private:
  void draw(const std::string& line);
  bool enabled_;
  bool drawn_ = false;
  std::string last_;
  std::string last_key_;  // update()'s subject and percentage when last drawn
};

}  // namespace capsim::cli
