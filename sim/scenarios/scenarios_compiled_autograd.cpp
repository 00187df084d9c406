// Built-in scenarios, part 5: compiled autograd's capture scenarios, each as
// a one-action program (ca_<name>), and the legacy capture of one as a
// negative control. The two seeds joined in a program are part 6
// (scenarios_training.cpp).
#include <fmt/format.h>

#include "sim/scenarios/autograd_scenarios.hpp"
#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

// A capture scenario (`capsim capture`) as a one-action program, so that
// compiled autograd's observations are traces too: ca_<name>, and
// ca_<name>_legacy for the capture before PR 144707. The legacy one is the
// corpus's negative control: it reads proxy metadata, which replay reports as
// a violation of no_proxy_metadata_reads.
ProgramScenario capture_program(const AutogradScenario& c, CaptureMode mode,
                                std::int64_t expected_reads = 0) {
  ProgramScenario s;
  const bool legacy = mode == CaptureMode::kLegacy;
  s.name = fmt::format("ca_{}{}", c.name, legacy ? "_legacy" : "");
  s.mirrors = c.mirrors;
  s.description = legacy ? fmt::format("{} (legacy capture: reads proxy metadata)", c.description)
                         : c.description;
  s.options.autograd_scenarios = find_autograd_scenario;
  ProgramWriter p(s);
  p.add(RunCaptureScenario{c.name, mode});
  const std::int64_t captures = static_cast<std::int64_t>(c.expected_captures);
  s.expect = [captures, expected_reads](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"captures (cache misses), as PyTorch's test asserts", captures,
         events_of(w, EventKind::kCaCacheMiss)},
        {"proxy metadata reads", expected_reads, events_of(w, EventKind::kMetadataRead)},
        {"compiled backwards whose grads differ from eager", 0,
         static_cast<std::int64_t>(w.counters().ca_mismatches)}};
  };
  return s;
}

// The legacy capture of `basic` (mm, relu, sum) reads these proxy metadata
// fields (`capsim capture basic --mode legacy` lists them).
constexpr std::int64_t kLegacyBasicReads = 9;

}  // namespace

void add_compiled_autograd_scenarios(std::vector<ProgramScenario>& out) {
  for (const AutogradScenario& c : builtin_autograd_scenarios()) {
    out.push_back(capture_program(c, CaptureMode::kFunctional));
  }
  out.push_back(
      capture_program(*find_autograd_scenario("basic"), CaptureMode::kLegacy, kLegacyBasicReads));
}

}  // namespace capsim
