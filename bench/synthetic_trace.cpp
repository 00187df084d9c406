// The synthetic trace writer of the trace benchmarks (see synthetic_trace.hpp): the loop's
// program, streamed action by action through a World, and the damage put in once asked for.
#include "synthetic_trace.hpp"

#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <vector>

#include "sim/core/function_builder.hpp"
#include "sim/world/world.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim::bench {
namespace {

NewTensor new_tensor(const std::string& name, Dims sizes, std::optional<float> fill,
                     bool parameter) {
  NewTensor t;
  t.name = name;
  t.sizes = std::move(sizes);
  t.fill = fill;
  t.parameter = parameter;
  return t;
}

Call call(const std::string& fn, std::vector<std::string> args) {
  Call c;
  c.function = fn;
  c.args = std::move(args);
  c.outputs = {""};  // the output is dropped at once
  return c;
}

// g(x, w) = x * w + x, compiled for inference with w a parameter.
Program loop_program() {
  Program program;
  FunctionBuilder f("g", CompilationMode::kInference, {"arg0_1", "primals_1"});
  f.params({1});
  const ValueIndex x = f.input(0);
  program.functions.push_back(f.returns({f.add(f.mul(x, f.input(1)), x)}));
  return program;
}

// The line sink: counts what it writes and fails once the stream does.
class LineWriter {
 public:
  LineWriter(const std::string& path, SyntheticTrace& t)
      : path_(path), out_(path, std::ios::binary | std::ios::trunc), t_(t) {}
  Status opened() const {
    if (!out_) return make_error(fmt::format("{}: cannot write", path_));
    return {};
  }
  Status put(const std::string& line) {
    out_ << line << '\n';
    if (!out_) return make_error(fmt::format("{}: write failed", path_));
    t_.bytes += line.size() + 1;
    ++t_.lines;
    ++seq_;
    return {};
  }
  // The first half of `line`, without its newline: a recorder killed mid-line.
  Status put_cut(const std::string& line) {
    out_ << line.substr(0, line.size() / 2);
    t_.damaged_line = t_.lines + 1;
    return flushed();
  }
  // `line` without its closing brace: invalid JSON at its last column.
  Status put_malformed(const std::string& line) {
    t_.damaged_line = t_.lines + 1;
    return put(line.substr(0, line.size() - 1));
  }
  Status flushed() {
    out_.flush();
    if (!out_) return make_error(fmt::format("{}: write failed", path_));
    return {};
  }
  std::uint64_t seq() const { return seq_; }

 private:
  std::string path_;
  std::ofstream out_;
  SyntheticTrace& t_;
  std::uint64_t seq_ = 0;
};

}  // namespace

Status write_synthetic_trace(const std::string& path, const SyntheticTraceOptions& options,
                             SyntheticTrace& t) {
  CAPSIM_CHECK(
      options.damage == TraceDamage::kNone || options.fault_after_events < options.min_events,
      "the damage goes inside the trace");
  t = SyntheticTrace{};
  const Program program = loop_program();
  TraceHeader header;
  header.name = fmt::format("bench_traces_{}", options.min_events);
  WorldOptions world_options;
  world_options.config = header.config;
  world_options.seed = header.seed;
  World world(world_options);
  CAPSIM_TRY(world.begin(program));

  LineWriter out(path, t);
  CAPSIM_TRY(out.opened());
  CAPSIM_TRY(out.put(header_line(header)));
  for (const FunctionDef& def : program.functions)
    CAPSIM_TRY(out.put(function_line(out.seq(), def)));
  bool damaged = false;
  bool cut = false;
  std::size_t written = 0;  // events, the ones after a malformed line included
  auto run = [&](const Action& action) -> Status {
    const std::string line = action_line(out.seq(), t.actions, action);
    if (!damaged && options.damage != TraceDamage::kNone &&
        t.events >= options.fault_after_events) {
      damaged = true;
      cut = options.damage == TraceDamage::kCut;
      if (cut) return out.put_cut(line);
      CAPSIM_TRY(out.put_malformed(line));
    } else {
      CAPSIM_TRY(out.put(line));
    }
    CAPSIM_TRY(world.run_action(t.actions, action));
    ++t.actions;
    for (const Event& e : world.take_events()) {
      CAPSIM_TRY_ASSIGN(const std::string event, event_line(out.seq(), e));
      CAPSIM_TRY(out.put(event));
      ++written;
      if (!damaged) ++t.events;
    }
    return {};
  };
  CAPSIM_TRY(run(new_tensor("w", {64}, 0.25f, true)));
  while (written < options.min_events && !cut) {
    CAPSIM_TRY(run(MarkStepBegin{}));
    if (!cut) CAPSIM_TRY(run(new_tensor("x", {64}, std::nullopt, false)));
    if (!cut) CAPSIM_TRY(run(call("g", {"x", "w"})));
  }
  return out.flushed();
}

}  // namespace capsim::bench
