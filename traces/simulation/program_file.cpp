// Program files (see program_file.hpp): what a hand-written program leaves out filled in line
// for line, then read as a trace without events, and run.
#include "traces/simulation/program_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "model/host_memory.hpp"
#include "traces/format/input_file.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

namespace {

Json default_header(const std::string& path) {
  TraceHeader h;
  h.producer = std::string(kUserProducer);
  h.name = std::filesystem::path(path).stem().string();
  return header_to_json(h);
}

// The header with what it leaves out filled in; config fields merge into the
// defaults. Anything that is not an object is left for the reader to refuse.
void fill_header(Json& line, const std::string& path) {
  Json full = default_header(path);
  for (auto it = line.begin(); it != line.end(); ++it) {
    if (it.key() == "config" && it.value().is_object() && full["config"].is_object()) {
      for (auto c = it.value().begin(); c != it.value().end(); ++c) full["config"][c.key()] = *c;
    } else {
      full[it.key()] = it.value();
    }
  }
  line = std::move(full);
}

// The line's "type", or "" when it has none or it is not a string (the
// reader then refuses the line; Json::value would throw on `"type":[4]`,
// which the program reader's fuzz target found).
std::string type_of(const Json& line) {
  const auto it = line.find("type");
  return it != line.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// One line with `seq` (and an action's `index`) filled in where missing;
// false when nothing was missing (the line is then passed on as written).
bool fill_line(Json& line, std::size_t seq, std::size_t& actions, const std::string& path) {
  bool filled = false;
  const std::string type = type_of(line);
  if (seq == 0 && type == "header") {
    const Json before = line;
    fill_header(line, path);
    filled = line != before;
  }
  if (!line.contains("seq")) {
    line["seq"] = seq;
    filled = true;
  }
  if (type == "function") {
    for (const char* key : {"static_input_idxs", "param_input_idxs"}) {
      if (!line.contains(key)) {
        line[key] = Json::array();
        filled = true;
      }
    }
  }
  if (type == "action") {
    if (!line.contains("index")) {
      line["index"] = actions;
      filled = true;
    }
    ++actions;
  }
  return filled;
}

// A program's text with the left-out fields filled in, line for line;
// `name` stands for the file.
std::string filled_text(std::istream& in, const std::string& name) {
  std::string out, raw;
  std::size_t seq = 0, actions = 0;
  while (std::getline(in, raw)) {
    // Parsed as the reader parses (a float's text kept where it matters),
    // since the filled-in line is written out again and read.
    Json line;
    if (parse_trace_json(raw, line) && line.is_object() && fill_line(line, seq, actions, name)) {
      out += line.dump();
    } else {
      out += raw;  // as written: the reader reports what is wrong with it
    }
    out += '\n';
    ++seq;
  }
  return out;
}

}  // namespace

namespace {

// The filled-in text, read line by line as a trace without events.
Result<ProgramFile> read_program_text(std::string text, const std::string& path) {
  CAPSIM_TRY_ASSIGN(std::unique_ptr<TraceReader> reader,
                    TraceReader::open(std::make_unique<std::istringstream>(std::move(text)), path));
  ProgramFile file;
  file.header = reader->header();
  for (;;) {
    CAPSIM_TRY_ASSIGN(std::optional<TraceItem> item, reader->next());
    if (!item) break;
    switch (item->type) {
      case TraceLineType::kHeader: break;  // the reader refuses a second header
      case TraceLineType::kFunction:
        file.program.functions.push_back(std::move(item->function));
        break;
      case TraceLineType::kAction:
        file.program.actions.push_back(std::move(item->action));
        file.action_lines.push_back(item->line);
        break;
      case TraceLineType::kEvent:
        return make_error(fmt::format(
            "{}:{}: field 'type': an event line in a program (simulate predicts the events; "
            "capsim replay compares a trace's)",
            path, item->line));
    }
  }
  if (reader->truncated()) {
    return make_error(fmt::format("{}:{}: the last line is cut", path, reader->lines_read()));
  }
  CAPSIM_CHECK(file.action_lines.size() == file.program.actions.size());
  return file;
}

}  // namespace

Result<ProgramFile> read_program_file(const std::string& path) {
  CAPSIM_TRY_ASSIGN(const std::string bytes,
                    read_input(path, kMaxProgramBytes, "program", " (a trace? use capsim replay)"));
  return read_program_bytes(bytes, input_name(path));
}

Result<ProgramFile> read_program_bytes(const std::string& bytes, const std::string& name) {
  if (bytes.size() > kMaxProgramBytes) {
    return make_error(fmt::format("{}: {} bytes, more than a program's limit of {}", name,
                                  bytes.size(), kMaxProgramBytes));
  }
  std::istringstream in(bytes);
  return read_program_text(filled_text(in, name), name);
}

std::optional<std::string> values_needed_off(const Program& program) {
  std::uint64_t bytes = 0;
  for (const Action& a : program.actions) {
    const auto* t = std::get_if<NewTensor>(&a);
    if (t == nullptr) continue;
    const std::int64_t n = needed_size(t->sizes, t->strides.value_or(contiguous_strides(t->sizes)));
    if (n > kMaxValueElements - t->offset) {
      return fmt::format("tensor '{}' spans {} elements, over the {} values are computed for",
                         t->name, n, kMaxValueElements);
    }
    // Its elements, not only its storage: a stride of 0 keeps the storage
    // small and the count (what a read or a kernel visits) huge.
    if (!check_value_sizes(t->sizes)) {
      return fmt::format("tensor '{}' has more than the {} elements values are computed for",
                         t->name, kMaxValueElements);
    }
    bytes += static_cast<std::uint64_t>(n + t->offset) * dtype_element_bytes(t->dtype);
  }
  if (bytes > kValuesOffAboveBytes) {
    return fmt::format("its tensors take {} bytes, over the {} values are computed for", bytes,
                       kValuesOffAboveBytes);
  }
  for (const FunctionDef& f : program.functions) {
    for (const BodyOp& op : f.ops) {
      if (op.kind != BodyOpKind::kGeneric) continue;
      for (const std::optional<TensorMeta>& r : op.generic.results) {
        if (r && (needed_size(r->sizes, r->strides) > kMaxValueElements - r->storage_offset ||
                  !check_value_sizes(r->sizes))) {
          return fmt::format("'{}' makes a tensor of over {} elements in '{}'", op.generic.target,
                             kMaxValueElements, f.name);
        }
      }
    }
  }
  return std::nullopt;
}

namespace {

// Keeps what every prediction reads: the events, the pool's bytes after
// each action run, the counters and where the run ended.
class RunRecorder final : public RunObserver {
 public:
  explicit RunRecorder(ProgramRun& run) : run_(run) {}
  Status after_action(const TraceItem&, World& world, std::vector<Event>& events) override {
    for (Event& e : events) run_.events.push_back(std::move(e));
    run_.pool_bytes.push_back(world.pool_bytes());
    return {};
  }
  Status on_end(const World& world, const RunEnd& end) override {
    run_.counters = world.counters();
    run_.error_at = end.error_at;
    run_.stopped_at = end.stopped_at;
    run_.stop = end.stop;
    return {};
  }

 private:
  ProgramRun& run_;
};

// The World's options for a prediction: the header's config and seed, values
// as `how` says (auto: off when the program needs it, or when the trace was
// written so), and the budget asked for or the default of its values mode.
Result<WorldOptions> prediction_options(const ProgramFile& file, const std::string& path,
                                        const ProgramRunOptions& how,
                                        std::optional<std::string>& values_off) {
  if (how.values == ValuesMode::kOff) values_off = "--values off";
  if (how.values == ValuesMode::kAuto) {
    values_off = file.header.values
                     ? values_needed_off(file.program)
                     : std::optional<std::string>("the trace was written with values off");
  }
  WorldOptions options;
  options.values = !values_off.has_value();
  options.memory_budget_bytes = how.memory_budget_bytes.value_or(
      options.values ? kDefaultMemoryBudget : kValuesOffMemoryBudget);
  // With values on the budget is host memory (values off allocates none):
  // a budget the host cannot give is refused now, not midway.
  if (options.values && how.memory_budget_bytes) {
    if (Status fits = budget_fits_host(*how.memory_budget_bytes); !fits) {
      return make_error(fmt::format("{}: field '--memory-budget': {} (values on{})",
                                    printable_message(path), fits.error().message,
                                    how.values == ValuesMode::kAuto
                                        ? ": the program's tensors fit values on; --values off "
                                          "simulates without them"
                                        : ""));
    }
  }
  options.config = file.header.config;
  if (how.torch) options.config.torch_profile = *how.torch;
  options.seed = file.header.seed;
  return options;
}

}  // namespace

Result<TraceItem*> ProgramFileSource::next() {
  const std::size_t functions = file_.program.functions.size();
  const std::size_t actions = file_.program.actions.size();
  if (next_ >= functions + actions) return nullptr;
  const std::size_t k = next_++;
  if (k < functions) {
    item_.type = TraceLineType::kFunction;
    item_.function = file_.program.functions[k];
    return &item_;
  }
  const std::size_t i = k - functions;
  item_.type = TraceLineType::kAction;
  item_.action_index = i;
  item_.action = file_.program.actions[i];
  item_.line = i < file_.action_lines.size() ? file_.action_lines[i] : 0;
  return &item_;
}

Result<ProgramRun> simulate_program(const ProgramFile& file, const std::string& path,
                                    const ProgramRunOptions& how) {
  ProgramRun run;
  CAPSIM_TRY_ASSIGN(WorldOptions options, prediction_options(file, path, how, run.values_off));
  const bool chosen_on = how.values == ValuesMode::kAuto && options.values;
  ProgramFileSource source(file, path);
  RunRecorder recorder(run);
  const Status ran = run_program(source, std::move(options), how.on_raise, recorder);
  if (ran.ok()) return run;
  // Auto chose values on from the program's new tensors, and an op made more
  // than values on computes (values_needed_off cannot see an exact op's
  // result): the same program, values off, which decides the same.
  if (!chosen_on || ran.error().kind != ErrorKind::values_limit) return ran.error();
  ProgramRunOptions off = how;
  off.values = ValuesMode::kOff;
  CAPSIM_TRY_ASSIGN(ProgramRun again, simulate_program(file, path, off));
  again.values_off = ran.error().message;
  return again;
}

}  // namespace capsim
