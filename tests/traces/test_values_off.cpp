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

#include "traces/analyses/observed_run.hpp"
#include "traces/simulation/program_file.hpp"

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

}  // namespace
}  // namespace capsim
