// A streaming reader of capsim-trace files (docs/trace-format.md).
//
// It reads one line at a time and never holds more than one line, so a trace
// of any length reads in constant memory. Each line is checked completely
// before it is handed out: JSON syntax and UTF-8, the envelope (`seq` with no
// gaps or repeats, a known `type`, the order header < functions < actions and
// events, action indices 0, 1, 2, ..., events naming the latest action), and
// the payload against its schema. Every error is one line,
// "<file>:<line>:<column>: <what>", where the column points at the offending
// field's key when the problem is a field.
//
// A last line without its newline that does not parse is what a killed
// recorder leaves: it becomes a warning, and the valid prefix is the trace.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/events.hpp"
#include "sim/core/function_def.hpp"
#include "sim/program/program.hpp"
#include "traces/format/line_fast.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim {

struct TraceItem {
  std::size_t line = 0;  // 1-based
  TraceLineType type = TraceLineType::kEvent;
  std::string text;              // the line as read, for reports
  FunctionDef function;          // kFunction
  std::size_t action_index = 0;  // kAction
  Action action;                 // kAction
  Event event;                   // kEvent
};

// `text` with every byte that is not part of valid UTF-8, and every control
// character, written as \xNN. Messages name the file and quote the input (a
// parse error's last token, a cut field value); this keeps each one a line of
// valid UTF-8 whatever the bytes, as `capsim replay --json` needs (nlohmann
// refuses to write invalid UTF-8).
std::string printable_message(std::string_view text);
// The same, but each newline kept as a newline followed by `indent` (not
// empty): a multi-line text from input (PyTorch's message with its stack
// trace) reads as indented lines, and none of its bytes can start a line of
// the report it is printed in.
std::string printable_block(std::string_view text, std::string_view indent);

// One line of JSON as the reader parses it: an object that repeats a key is
// refused, and a float32 midpoint is read from its text (json_fields.hpp,
// float32_exact). False when the line is not such JSON.
bool parse_trace_json(std::string_view line, Json& out);

class TraceReader {
 public:
  // Opens `path` and reads the header. A missing file, an empty file or a bad
  // header is an error naming the file.
  static Result<std::unique_ptr<TraceReader>> open(const std::string& path);
  // The same over any stream; `name` stands for the file in messages.
  static Result<std::unique_ptr<TraceReader>> open(std::unique_ptr<std::istream> in,
                                                   std::string name);

  const TraceHeader& header() const { return header_; }
  const std::string& name() const { return name_; }
  // The next line after the header; nullopt at the end of the trace.
  Result<std::optional<TraceItem>> next();
  // The same, in an item the reader keeps and reuses (its strings and lists
  // keep their capacity): valid until the next call, nullptr at the end.
  // Only `line`, `type`, `text` and the member of its type hold this line;
  // the others hold whatever an earlier line left. Replay's loop reads this
  // way, and allocates less per line.
  Result<TraceItem*> advance();
  // Non-fatal findings (a truncated last line), one line each.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // True when the trace ended in a cut line (its prefix was read).
  bool truncated() const { return truncated_; }
  std::size_t lines_read() const { return line_; }
  // The lines the fast path read (line_fast.hpp), and a switch that turns
  // it off: for the test that compares the two paths, and for benchmarks.
  // Both paths read every line the same way.
  std::size_t fast_lines() const { return fast_lines_; }
  void set_fast_path(bool on) { fast_on_ = on; }

 private:
  TraceReader(std::unique_ptr<std::istream> in, const std::string& name)
      : in_(std::move(in)), name_(printable_message(name)) {}
  // Reads the next raw line into `raw_`; false at the end. Sets `terminated_`.
  Result<bool> read_raw_line();
  // Refills `chunk_` from the stream; false at its end.
  Result<bool> fill_chunk();
  Error error_at(std::size_t column, const std::string& what) const;
  // A payload error about field "a.b[2]" gets the column of the key "b". The
  // reader's errors are of kind bad_trace (unsupported stays unsupported) and
  // keep the field.
  Error field_error_at(const Error& e) const;
  Result<TraceItem> parse_line(const Json& j);
  // The line read by the fast path (line_fast.hpp) into `item_`, or false
  // when it declines it; then parse_line reads it.
  bool fast_line();

  std::unique_ptr<std::istream> in_;
  std::string name_;
  std::string raw_;
  // The bytes read from the stream and not yet handed out as lines.
  static constexpr std::size_t kChunkBytes = 64 * 1024;
  std::vector<char> chunk_;
  std::size_t chunk_begin_ = 0, chunk_end_ = 0;
  bool terminated_ = true;
  std::size_t line_ = 0;
  TraceHeader header_;
  std::uint64_t next_seq_ = 0;
  std::size_t functions_ = 0;
  std::optional<std::size_t> last_action_;
  std::vector<std::string> warnings_;
  bool truncated_ = false;
  FastLineReader fast_;  // most lines; the rest go through parse_line
  FastLine fast_out_;    // kept across lines
  TraceItem item_;       // advance()'s
  bool fast_on_ = true;
  std::size_t fast_lines_ = 0;
};

}  // namespace capsim
