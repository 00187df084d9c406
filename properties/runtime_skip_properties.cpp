// The run-time skip properties (`cudagraphs.skips-as-documented.s1-runtime`,
// `.e5` and `.e9`) of the catalogue (catalogue.hpp): one per run-time skip of
// docs/cudagraph-trees.md (the mutation gate of §2.3, the re-record limit of
// §4, 2.15's managed-input limit of §4.1), each over programs that reach
// that skip (runtime_skip_programs_rc.hpp), each checking every compile-time
// (skip_checks.hpp) and run-time (runtime_skip_checks.hpp) skip decision
// against the doc's conditions, and each with its own control: a World whose
// tree manager ignores that one skip (model/fault.hpp) and cudagraphs the
// call anyway.
#include "properties/catalogue.hpp"
#include "properties/probes.hpp"
#include "properties/property.hpp"
#include "properties/runtime_skip_checks.hpp"
#include "properties/runtime_skip_programs_rc.hpp"
#include "properties/skip_checks.hpp"
#include "properties/trace_checks.hpp"

namespace capsim {

namespace {

struct RuntimeSkipEntry {
  std::string_view name;
  std::string_view statement;
  std::string_view spec;
  std::string_view control;
  Fault fault;
};

constexpr RuntimeSkipEntry kRuntimeSkipEntries[rc_gen::kRuntimeSkipFoci] = {
    {"cudagraphs.skips-as-documented.s1-runtime",
     "every run-time skip decision is the documented one, over graphs that write an input "
     "that is neither static nor cudagraph-managed at that call (the mutation gate, S1)",
     "cudagraph-trees.md §2.3 steps 3-4, §7 (S1), §10 invariant 17",
     "tree fault ignore_skip_s1_runtime: the mutation gate never blocks",
     Fault::kIgnoreSkipS1Runtime},
    {"cudagraphs.skips-as-documented.e5",
     "every run-time skip decision is the documented one, over a graph whose managed and static "
     "inputs move under a low cudagraph_unexpected_rerecord_limit (E5)",
     "cudagraph-trees.md §2.3 step 7, §4, §7 (E5), Version profiles",
     "tree fault ignore_skip_e5: the re-record limit is never exceeded", Fault::kIgnoreSkipE5},
    {"cudagraphs.skips-as-documented.e9",
     "every run-time skip decision is the documented one, over a graph whose managed input "
     "moves under 2.15's cudagraph_managed_input_rerecord_limit with action \"skip\" (E9)",
     "cudagraph-trees.md §4.1, §7 (E9)",
     "tree fault ignore_skip_e9: the managed-input limit under \"skip\" is never reached",
     Fault::kIgnoreSkipE9},
};

constexpr std::string_view kRuntimeSkipPrograms =
    "steps of src(x) then g(a, q) in one invocation, a a row of src's output or a fresh "
    "tensor and q one of two Parameters, or g alone; g maybe writing a or q; under every "
    "profile and the knobs the run-time skips read; the named skip's condition always on";

WorldOptions runtime_world(const RuntimeProgram& program, Fault fault) {
  WorldOptions o;
  o.verify_replays = true;
  o.config = program.config;
  o.fault = fault_at(fault, FaultSite::kTree);
  return o;
}

CheckResult check_runtime_case(const RuntimePlan& plan, Fault fault, ProbeSet* probes) {
  const RuntimeProgram program = lower_runtime_skips(plan);
  Status status;
  const std::unique_ptr<World> world =
      run_generated(program.generated, runtime_world(program, fault), status);
  if (!status) return "bad input: " + status.error().message;
  if (probes != nullptr) *probes = tree_probes(*world);
  if (CheckResult compile =
          check_skips_as_documented(*world, program.generated.program, world->config())) {
    return compile;
  }
  return check_runtime_skips_as_documented(*world, program);
}

CaseFunction runtime_skip_property(std::uint32_t focus, Fault own, CaseSetting setting) {
  const auto fault_of = [own, setting](bool control) { return control ? own : setting.injected; };
  return make_probed_case<RuntimePlan>(
      rc_gen::runtime_plan(focus, setting.torch),
      [fault_of](const RuntimePlan& plan, bool control, ProbeSet* probes) {
        return check_runtime_case(plan, fault_of(control), probes);
      },
      [](const RuntimePlan& plan) { return describe(lower_runtime_skips(plan)); },
      [fault_of](const RuntimePlan& plan, bool control) {
        const RuntimeProgram program = lower_runtime_skips(plan);
        return generated_trace_lines(program.generated, runtime_world(program, fault_of(control)),
                                     "capsim-check counterexample");
      });
}

}  // namespace

void add_runtime_skip_properties(std::vector<Property>& c, const CaseSetting& setting) {
  for (std::uint32_t focus = 0; focus < rc_gen::kRuntimeSkipFoci; ++focus) {
    const RuntimeSkipEntry& e = kRuntimeSkipEntries[focus];
    Property p{e.name, e.statement, e.spec, kRuntimeSkipPrograms, e.control, e.fault};
    p.run = runtime_skip_property(focus, e.fault, setting);
    c.push_back(std::move(p));
  }
}

}  // namespace capsim
