// A run as `capsim explain` reads it: a trace's actions and the events it
// observed (capsim's, the CUDA backend's, or a real PyTorch run's), or a
// program without events, which is simulated first (traces/program_file.hpp).
#pragma once

#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/core/events.hpp"
#include "sim/core/function_def.hpp"
#include "sim/world/program.hpp"
#include "traces/trace_format.hpp"

namespace capsim {

struct ObservedRun {
  TraceHeader header;
  std::vector<FunctionDef> functions;
  std::vector<Action> actions;
  std::vector<Event> events;
  std::vector<std::size_t> event_lines;     // per event; 0 when simulated
  std::vector<std::string> event_messages;  // per event: a recorder's x_message, or ""
  bool simulated = false;                   // the file was a program without events
};

// Reads a trace, or a program (a short header, or no events in a trace that
// is not a real run's), which it simulates. Bad input is an error naming the
// file, the line and the field.
Result<ObservedRun> observe_file(const std::string& path);

}  // namespace capsim
