// A run as `capsim explain` reads it (see observed_run.hpp): a trace read whole, a program
// simulated first (told apart by its header), or a run without CUDA graphs simulated as on a GPU.
#include "traces/analyses/observed_run.hpp"

#include <map>
#include <memory>

#include "sim/core/decisions.hpp"
#include "sim/core/event_fields.hpp"
#include "traces/format/input_file.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/format/trace_reader.hpp"
#include "traces/simulation/program_file.hpp"

namespace capsim {

namespace {

// A trace read whole: its run, and what a program read from the same lines
// needs (each action's line, whether the last line was cut).
struct ReadTrace {
  ObservedRun run;
  std::vector<std::size_t> action_lines;
  bool truncated = false;
  std::size_t lines = 0;
};

// Reads every line of a trace.
Result<ReadTrace> read_observed(TraceReader& reader) {
  ReadTrace read;
  ObservedRun& run = read.run;
  run.header = reader.header();
  for (;;) {
    CAPSIM_TRY_ASSIGN(std::optional<TraceItem> item, reader.next());
    if (!item) break;
    if (item->type == TraceLineType::kAction) {
      run.actions.push_back(std::move(item->action));
      read.action_lines.push_back(item->line);
    }
    if (item->type == TraceLineType::kFunction) run.functions.push_back(std::move(item->function));
    if (item->type == TraceLineType::kEvent) {
      // The recorder's x_message (compiled autograd's own words) rides along.
      std::string message;
      if (item->event.kind == EventKind::kCaGraph) {
        const Json j = Json::parse(item->text, nullptr, false);
        if (j.is_object() && j.contains("x_message") && j["x_message"].is_string()) {
          message = j["x_message"].get<std::string>();
        }
      }
      run.events.push_back(std::move(item->event));
      run.event_lines.push_back(item->line);
      run.event_messages.push_back(std::move(message));
    }
  }
  run.warnings = reader.warnings();
  read.truncated = reader.truncated();
  read.lines = reader.lines_read();
  return read;
}

// A program and the events capsim predicted for it, as explain reads a run.
ObservedRun simulated_run(ProgramFile file, ProgramRun ran, OnRaise on_raise) {
  ObservedRun run;
  run.error_at = ran.error_at;
  run.stopped_at = ran.stopped_at;
  run.stop = ran.stop;
  run.kept_going = on_raise == OnRaise::kKeepGoing && ran.error_at.has_value();
  run.header = std::move(file.header);
  run.functions = std::move(file.program.functions);
  run.actions = std::move(file.program.actions);
  run.events = std::move(ran.events);
  run.pool_bytes = std::move(ran.pool_bytes);
  run.event_lines.assign(run.events.size(), 0);
  run.event_messages.assign(run.events.size(), "");
  run.simulated = true;
  return run;
}

Result<ObservedRun> simulate_observed(ProgramFile file, const std::string& name,
                                      const ProgramRunOptions& how) {
  CAPSIM_TRY_ASSIGN(ProgramRun ran, simulate_program(file, name, how));
  return simulated_run(std::move(file), std::move(ran), how.on_raise);
}

// Whether `first` is a program's short header (one that leaves out a field
// every trace header has), so that the file is read as a program.
bool short_header(const std::string& first) {
  const Json j = Json::parse(first, nullptr, false);
  if (!j.is_object()) return false;
  for (const char* key :
       {"seq", "format", "version", "producer", "capsim_version", "name", "seed", "config"}) {
    if (!j.contains(key)) return true;
  }
  return false;
}

// The first line of `in` with its newline, at most `max` bytes and one more
// of it (the reader that gets it refuses a longer line).
std::string first_line(std::istream& in, std::size_t max) {
  std::string line;
  std::streambuf* buf = in.rdbuf();
  while (line.size() <= max) {
    const int c = buf->sbumpc();
    if (c == std::char_traits<char>::eof()) break;
    line += static_cast<char>(c);
    if (c == '\n') break;
  }
  return line;
}

}  // namespace

Result<ObservedRun> observe_file(const std::string& path, const ProgramRunOptions& how) {
  // One open, one read front to back (a pipe cannot be read twice): the
  // first line says whether this is a program or a trace.
  CAPSIM_TRY_ASSIGN(std::unique_ptr<std::istream> in, open_input(path));
  const std::string name = input_name(path);
  std::string first = first_line(*in, kMaxTraceLineBytes);
  if (short_header(first)) {
    CAPSIM_TRY_ASSIGN(std::string rest, read_all(*in, name, kMaxProgramBytes, "program",
                                                 " (a trace? use capsim replay)"));
    CAPSIM_TRY_ASSIGN(ProgramFile file, read_program_bytes(first + rest, name));
    return simulate_observed(std::move(file), name, how);
  }
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceReader> reader,
                    TraceReader::open(with_prefix(std::move(first), std::move(in)), name));
  CAPSIM_TRY_ASSIGN(ReadTrace read, read_observed(*reader));
  // A full header but no events is a program only when the header says a
  // person wrote it; a run that capsim, its CUDA reference or the recorder
  // wrote is a trace, with or without events (a run may have none). The
  // program is the lines already read, checked as `capsim simulate` checks
  // one (a cut last line is refused: no killed recorder wrote it).
  if (read.run.events.empty() && read.run.header.producer == kUserProducer) {
    if (read.truncated) {
      return make_error(
          fmt::format("{}:{}: the last line is cut", printable_message(name), read.lines));
    }
    ProgramFile file{std::move(read.run.header),
                     Program{std::move(read.run.functions), std::move(read.run.actions)},
                     std::move(read.action_lines)};
    return simulate_observed(std::move(file), name, how);
  }
  return std::move(read.run);
}

namespace {

// The recorder's x_message of each recorded backward (PyTorch's own cache-miss
// words), given to the simulation's compiled-autograd events of the same
// backward, so that explain quotes PyTorch's key sizes, not capsim's; and the
// reason the recorder classified them into, given to the simulation's
// ca_graph of that backward, so that explain names PyTorch's cause.
struct RecordedWords {
  std::string message;
  std::optional<std::string> reason;
};

// Out of line, the field built first: GCC 12 inlining a braced temporary sees a FieldValue's
// variant as maybe uninitialized (-Wmaybe-uninitialized, a false positive).
[[gnu::noinline]] void add_reason(Event& e, std::string reason) {
  EventField field{F::reason, FieldValue(std::move(reason))};
  e.fields.push_back(std::move(field));
}

void carry_recorded_messages(const ObservedRun& recorded, ObservedRun& simulated) {
  std::map<std::int64_t, RecordedWords> by_backward;
  for (std::size_t i = 0; i < recorded.events.size(); ++i) {
    const Event& e = recorded.events[i];
    const std::int64_t* b = e.get_if<std::int64_t>(F::backward);
    if (e.kind == EventKind::kCaGraph && b && !recorded.event_messages[i].empty()) {
      const std::optional<std::string_view> reason = e.text(F::reason);
      by_backward[*b] = {recorded.event_messages[i],
                         reason ? std::optional<std::string>(*reason) : std::nullopt};
    }
  }
  for (std::size_t i = 0; i < simulated.events.size(); ++i) {
    Event& e = simulated.events[i];
    const std::int64_t* b = e.get_if<std::int64_t>(F::backward);
    if ((e.kind != EventKind::kCaGraph && e.kind != EventKind::kCaCacheMiss) || b == nullptr) {
      continue;
    }
    const auto it = by_backward.find(*b);
    if (it == by_backward.end()) continue;
    simulated.event_messages[i] = it->second.message;
    if (e.kind == EventKind::kCaGraph && it->second.reason && !e.has(F::reason)) {
      add_reason(e, *it->second.reason);
    }
  }
}

}  // namespace

Result<ObservedRun> as_on_a_gpu(const ObservedRun& run, const ProgramRunOptions& how) {
  ProgramFile file{run.header, Program{run.functions, run.actions}, {}};
  file.header.config.cudagraphs = true;
  CAPSIM_TRY_ASSIGN(ProgramRun ran, simulate_program(file, "as on a GPU", how));
  ObservedRun out = simulated_run(std::move(file), std::move(ran), how.on_raise);
  out.header = run.header;  // the run had no CUDA graphs; its header says so
  out.as_on_a_gpu = true;
  carry_recorded_messages(run, out);
  return out;
}

bool belongs_to_function(std::string_view function, std::string_view line) {
  return function == line || (function.size() > line.size() && function.starts_with(line) &&
                              function[line.size()] == '.');
}

bool is_rerecording(const Event& record) {
  CAPSIM_CHECK(record.kind == EventKind::kRecord, "a record event");
  return decision_of(record) != Decision::kRecordFirst;
}

Result<std::vector<PoolBytes>> modelled_pool_bytes(const ObservedRun& run,
                                                   const ProgramRunOptions& how) {
  if (run.simulated) return run.pool_bytes;
  const ProgramFile file{run.header, Program{run.functions, run.actions}, {}};
  ProgramRunOptions stop = how;
  stop.on_raise = OnRaise::kStop;
  CAPSIM_TRY_ASSIGN(ProgramRun ran, simulate_program(file, "the pool's model", stop));
  return std::move(ran.pool_bytes);
}

}  // namespace capsim
