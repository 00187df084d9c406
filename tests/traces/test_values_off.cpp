// Values off (docs/trace-format.md §8): the same decisions as values on.
//
// The tree manager decides from pointers, sizes, dtypes, aliasing, mutation
// and liveness, never from values, so a program simulated with values off
// must give the same events as with values on, but for what a read saw
// (its digest and preview) and the compiled-autograd runs' digests. Every
// hand-written program and every third-party recording (simulated as on a
// GPU) is run both ways and compared event by event.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "traces/analyses/observed_run.hpp"
#include "traces/format/trace_format.hpp"
#include "traces/format/trace_reader.hpp"
#include "traces/simulation/program_file.hpp"
#include "traces/simulation/resimulation.hpp"

namespace capsim {
namespace {

const std::string kData = std::string(CAPSIM_SOURCE_DIR) + "/data";

// An event without what only values give: a read's digest and values.
std::string decision_text(Event e) {
  if (e.kind == EventKind::kRead || e.kind == EventKind::kCaRun) {
    Event kept{e.kind, e.action, {}};
    for (const auto& [key, value] : e.fields) {
      if (key != F::digest && key != F::values) kept.fields.emplace_back(key, value);
    }
    e = kept;
  }
  return format_event(e);
}

std::vector<std::string> decisions(const ProgramFile& file, ValuesMode values) {
  ProgramRunOptions options;
  options.values = values;
  options.memory_budget_bytes = kDefaultMemoryBudget;
  options.on_raise = OnRaise::kKeepGoing;  // every decision, the later errors too
  Result<ProgramRun> run = simulate_program(file, "values.jsonl", options);
  REQUIRE_MESSAGE(run.ok(), run.error().message);
  CHECK(run->values_off.has_value() == (values == ValuesMode::kOff));
  std::vector<std::string> out;
  for (const Event& e : run->events) out.push_back(decision_text(e));
  return out;
}

void check_same_decisions(ProgramFile file, const std::string& name) {
  INFO(name);
  const std::vector<std::string> on = decisions(file, ValuesMode::kOn);
  const std::vector<std::string> off = decisions(file, ValuesMode::kOff);
  REQUIRE(on.size() == off.size());
  for (std::size_t i = 0; i < on.size(); ++i) CHECK(on[i] == off[i]);
}

TEST_CASE("values off: every program and recording decides as with values on") {
  std::size_t programs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kData + "/programs")) {
    if (entry.path().extension() != ".jsonl") continue;
    Result<ProgramFile> file = read_program_file(entry.path().string());
    REQUIRE_MESSAGE(file.ok(), file.error().message);
    check_same_decisions(std::move(*file), entry.path().filename().string());
    ++programs;
  }
  CHECK(programs >= 4);
  for (const char* name : {"mnist", "dcgan", "wlm_transformer", "vae"}) {
    const std::string path = kData + "/third_party/2.15.0/" + name + ".compiled.jsonl";
    Result<ObservedRun> run = observe_file(path);
    REQUIRE_MESSAGE(run.ok(), run.error().message);
    ProgramFile file{run->header, Program{run->functions, run->actions}, {}};
    file.header.config.cudagraphs = true;  // as on a GPU: the tree's decisions
    check_same_decisions(std::move(file), name);
  }
}

NewTensor tensor(std::string name, Dims sizes) {
  NewTensor t;
  t.name = std::move(name);
  t.sizes = std::move(sizes);
  return t;
}

TEST_CASE("values off: auto turns values off for tensors over the limits, and says why") {
  Program small;
  small.actions.push_back(tensor("x", {4096, 4096}));
  CHECK_FALSE(values_needed_off(small).has_value());
  Program wide;
  wide.actions.push_back(tensor("embed", {32000, 4096}));
  CHECK(values_needed_off(wide) ==
        "tensor 'embed' spans 131072000 elements, over the 16777216 values are computed for");
  Program many;
  for (int k = 0; k < 17; ++k) {
    many.actions.push_back(tensor(fmt::format("w{}", k), {4096, 4096}));
  }
  CHECK(values_needed_off(many) ==
        "its tensors take 1140850688 bytes, over the 1073741824 values are computed for");
}

// A function whose exact add broadcasts [4096, 1] and [1, 8192] to 2^25
// elements: no new_tensor tells auto that values on cannot run it.
std::string broadcast_trace() {
  return header_line(TraceHeader{}) + "\n" +
         R"({"seq":1,"type":"function","function":"f","mode":"inference","inputs":["a","b"],)"
         R"("ops":[{"op":"add","args":[0,1]}],"outputs":[2],"static_input_idxs":[],)"
         R"("param_input_idxs":[]})"
         "\n"
         R"({"seq":2,"type":"action","index":0,"action":"new_tensor","name":"a","sizes":[4096,1]})"
         "\n"
         R"({"seq":3,"type":"action","index":1,"action":"new_tensor","name":"b","sizes":[1,8192]})"
         "\n"
         R"({"seq":4,"type":"action","index":2,"action":"call","function":"f","args":["a","b"],)"
         R"("outputs":["c"]})"
         "\n";
}

// The same as a trace: the one event a call makes without CUDA graphs.
std::string broadcast_recording() {
  return broadcast_trace() +
         R"({"seq":5,"type":"event","action":2,"event":"compile","function":"f","fid":0,)"
         R"("int_key":[],"static_input_idxs":[]})"
         "\n";
}

TEST_CASE("values off: an op over what values on computes turns auto's run values off") {
  Result<ProgramFile> file = read_program_bytes(broadcast_trace(), "wide.jsonl");
  REQUIRE_MESSAGE(file.ok(), file.error().message);
  CHECK_FALSE(values_needed_off(file->program).has_value());
  ProgramRunOptions on;
  on.values = ValuesMode::kOn;
  Result<ProgramRun> refused = simulate_program(*file, "wide.jsonl", on);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == ErrorKind::values_limit);
  Result<ProgramRun> run = simulate_program(*file, "wide.jsonl");  // auto
  REQUIRE_MESSAGE(run.ok(), run.error().message);
  REQUIRE(run->values_off.has_value());
  CHECK(run->values_off->find("action 2") != std::string::npos);
  CHECK(run->values_off->find("16777216 elements") != std::string::npos);
}

TEST_CASE("values off: replay of a file that values on refuses reads it again, values off") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "capsim_values_off_replay.jsonl";
  {
    std::ofstream out(path);
    out << broadcast_recording();
  }
  Result<ResimulationReport> report = resimulate_file(path.string(), {});
  std::filesystem::remove(path);
  REQUIRE_MESSAGE(report.ok(), report.error().message);
  // Re-simulated to its end (its header asks for CUDA graphs, which the
  // recording lacks: what is compared is beside the point here).
  CHECK(report->actions == 3);
  CHECK(report->events_matched == 1);
  REQUIRE(report->values_off.has_value());
  CHECK(report->values_off->find("16777216 elements") != std::string::npos);
  ResimulationReport clean = *report;
  clean.divergence.reset();
  CHECK(report_summary(clean).find("; values off, since values on refused: ") != std::string::npos);
  // Read from a stream, which cannot be read twice: the refusal stands.
  Result<std::unique_ptr<TraceReader>> reader =
      TraceReader::open(std::make_unique<std::istringstream>(broadcast_recording()), "wide.jsonl");
  REQUIRE(reader.ok());
  Result<ResimulationReport> streamed = resimulate_trace(**reader, {});
  REQUIRE_FALSE(streamed.ok());
  CHECK(streamed.error().kind == ErrorKind::values_limit);
}

}  // namespace
}  // namespace capsim
