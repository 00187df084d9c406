// Fuzz target for `capsim explain --what-if EDIT` (libFuzzer's entry point):
// the bytes are the edit, as argv would hand it over (up to its first NUL),
// applied to a small program of data/programs' kind (a persistent buffer
// copied at each replay, an output kept across steps, a zero_grad) and both
// runs simulated with the fuzz budget (traces/analyses/what_if.hpp).
// Cross-checks: nothing throws out of the edit's parser; a bad edit is one
// line of valid UTF-8 naming the field '--what-if'; an edit that parses has
// an outcome that agrees with its figures (could not be simulated exactly
// when it says why), and its text form is one line.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_support.hpp"
#include "traces/analyses/what_if.hpp"
#include "traces/simulation/program_file.hpp"

namespace {

constexpr const char* kTarget = "fuzz_what_if_edit";

constexpr const char* kProgram = R"({"type":"header","name":"what_if_fuzz"}
{"type":"function","function":"step","mode":"inference","inputs":["state","w"],"ops":[{"op":"mul","args":[0,1]}],"outputs":[2]}
{"type":"action","action":"new_tensor","name":"w","sizes":[16],"parameter":true}
{"type":"action","action":"new_tensor","name":"state","sizes":[16]}
{"type":"action","action":"call","function":"step","args":["state","w"],"outputs":["y"]}
{"type":"action","action":"call","function":"step","args":["state","w"],"outputs":["y"]}
{"type":"action","action":"call","function":"step","args":["state","w"],"outputs":["z"]}
{"type":"action","action":"read","name":"y"}
{"type":"action","action":"call","function":"step","args":["state","w"],"outputs":["y"]}
)";

capsim::ObservedRun program_run() {
  capsim::ProgramFile file = CAPSIM_MUST(capsim::read_program_bytes(kProgram, "what_if_fuzz"));
  capsim::ObservedRun run;
  run.header = file.header;
  run.functions = std::move(file.program.functions);
  run.actions = std::move(file.program.actions);
  run.simulated = true;
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string edit(reinterpret_cast<const char*>(data), size);
  edit = edit.substr(0, edit.find('\0'));  // argv ends a word at its NUL
  static const capsim::ObservedRun run = program_run();
  capsim::ProgramRunOptions how;
  how.memory_budget_bytes = capsim::fuzz::kFuzzMemoryBudget;
  const capsim::Result<capsim::WhatIf> w = capsim::what_if(run, edit, how);
  if (!w) {
    capsim::fuzz::check_message(kTarget, w.error());
    if (w.error().message.find("field '--what-if'") == std::string::npos &&
        w.error().message.find("the original program") == std::string::npos) {
      capsim::fuzz::fail(kTarget, "a bad edit that does not name the field");
    }
    return 0;
  }
  if ((w->outcome == capsim::WhatIfOutcome::kNotSimulated) != w->refused.has_value()) {
    capsim::fuzz::fail(kTarget, "an outcome that disagrees with the refusal");
  }
  capsim::fuzz::check_message(kTarget, capsim::make_error(capsim::what_if_text(*w)));
  (void)capsim::printable_json(capsim::what_if_json(*w));
  return 0;
}
