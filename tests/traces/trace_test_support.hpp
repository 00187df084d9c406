// Helpers for the trace tests: traces held in memory, read like files.
#pragma once

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "traces/format/trace_reader.hpp"
#include "traces/simulation/resimulation.hpp"

namespace capsim::test {

inline std::string join_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

inline Result<std::unique_ptr<TraceReader>> reader_of(const std::string& text,
                                                      const std::string& name = "mem.jsonl") {
  return TraceReader::open(std::make_unique<std::istringstream>(text), name);
}

// Reads every line; returns the first error's message, or "" when the whole
// text reads.
inline std::string read_error(const std::string& text) {
  auto reader = reader_of(text);
  if (!reader) return reader.error().message;
  for (;;) {
    auto item = (*reader)->next();
    if (!item) return item.error().message;
    if (!item->has_value()) return "";
  }
}

// The first error of reading every line, or none when the whole text reads.
inline std::optional<Error> read_failure(const std::string& text) {
  auto reader = reader_of(text);
  if (!reader) return reader.error();
  for (;;) {
    auto item = (*reader)->next();
    if (!item) return item.error();
    if (!item->has_value()) return std::nullopt;
  }
}

inline Result<ResimulationReport> replay_text(const std::string& text, std::size_t context = 3) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceReader> reader, reader_of(text));
  ResimulationOptions options;
  options.context = context;
  return resimulate_trace(*reader, options);
}

}  // namespace capsim::test
