// The progress line on stderr (see progress.hpp).
#include "cli/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "traces/format/trace_reader.hpp"

namespace capsim::cli {

TerminalProgress::TerminalProgress(bool enabled)
    : enabled_(enabled && ::isatty(STDOUT_FILENO) == 1 && ::isatty(STDERR_FILENO) == 1) {}

TerminalProgress::~TerminalProgress() {
  clear();
}

void TerminalProgress::update(std::string_view what, std::uint64_t done, std::uint64_t total) {
  if (!enabled_) return;
  const std::uint64_t percent = total == 0 ? 100 : done >= total ? 100 : done * 100 / total;
  // Drawn when the percentage or the subject changes, not at every unit.
  std::string key = fmt::format("{}\n{}", what, percent);
  if (drawn_ && key == last_key_) return;
  last_key_ = std::move(key);
  draw(fmt::format("{} {}/{} ({}%)", printable_message(what), done, total, percent));
}

void TerminalProgress::count(std::string_view what, std::uint64_t done, std::uint64_t every) {
  if (!enabled_ || every == 0 || done % every != 0) return;
  draw(fmt::format("{} {}", printable_message(what), done));
}

void TerminalProgress::draw(const std::string& line) {
  // The percentage moves a hundred times a run at most: the same text is
  // not drawn again.
  if (drawn_ && line == last_) return;
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  last_ = line;
  drawn_ = true;
}

void TerminalProgress::clear() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
  last_.clear();
  last_key_.clear();
}

}  // namespace capsim::cli
