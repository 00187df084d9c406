// One event of a Chrome trace (the Trace Event Format's "traceEvents"), as
// the export draws it: typed, so that the streaming check reads fields, not
// a parsed object, and the writer prints it with no Json value in between.
//
// The export draws five phases; a document of any other producer is checked
// by validate_chrome_trace (chrome_export.hpp) on its parsed JSON instead.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace capsim {

// The phases the export draws; the value is the "ph" letter.
enum class ChromePhase : char {
  kMetadata = 'M',
  kComplete = 'X',
  kInstant = 'i',
  kFlowStart = 's',
  kFlowEnd = 'f',
};

// The fields each phase writes, in this order (Chrome's own key order, which
// the files of earlier exports kept):
//   M: name ph ts pid tid args
//   X: name ph ts dur pid tid args
//   i: name ph s("t") ts pid tid args
//   s: name cat ph id ts pid tid args
//   f: name cat ph bp("e") id ts pid tid args
struct ChromeEvent {
  ChromePhase ph = ChromePhase::kComplete;
  std::string name;
  int pid = 0;
  int tid = 0;
  std::uint64_t ts = 0;
  std::uint64_t dur = 0;    // kComplete only
  std::uint64_t id = 0;     // flows only
  std::string_view cat{};   // flows only: a literal
  std::string args = "{}";  // the args object, as JSON text
  // A replay's nested step slice (what the CLI counts as a replayed step).
  bool replayed_step = false;
};

// The event as one line of JSON (no newline), appended to `out`.
void append_chrome_event(std::string& out, const ChromeEvent& event);

}  // namespace capsim
