// Fuzz target for `capsim simulate` (libFuzzer's entry point): the bytes are
// a program (a trace without events, docs/trace-format.md §10), read with
// its left-out fields filled in and run in one World with the fuzz budget
// of simulated memory. Cross-checks: a refusal is one line of valid UTF-8,
// whether it comes from the reader or the World; the run's events all name
// an action of the program.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_support.hpp"
#include "traces/simulation/program_file.hpp"

namespace {
constexpr const char* kTarget = "fuzz_program_reader";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const capsim::Result<capsim::ProgramFile> file = capsim::read_program_bytes(bytes, "fuzz.jsonl");
  if (!file) {
    capsim::fuzz::check_message(kTarget, file.error());
    return 0;
  }
  capsim::ProgramRunOptions options;
  options.memory_budget_bytes = capsim::fuzz::kFuzzMemoryBudget;
  const capsim::Result<capsim::ProgramRun> run =
      capsim::simulate_program(*file, "fuzz.jsonl", options);
  if (!run) {
    capsim::fuzz::check_message(kTarget, run.error());
    return 0;
  }
  for (const capsim::Event& e : run->events) {
    if (e.action >= file->program.actions.size()) {
      capsim::fuzz::fail(kTarget, "an event names an action past the program's end");
    }
  }
  return 0;
}
