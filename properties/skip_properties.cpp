// The skip properties (`cudagraphs.skips-as-documented.s1` to `.s7`) of the
// catalogue (catalogue.hpp): one per compile-time skip of
// docs/cudagraph-trees.md §2.5, each over programs that reach that skip
// (skip_programs_rc.hpp), each checking every skip decision against the
// doc's conditions (skip_checks.hpp), and each with its own control: a World
// that ignores that one skip (model/fault.hpp, ignore_skip_sN) and
// cudagraphs the graph anyway, which capsim computes correctly, so that no
// other property sees it.
#include <fmt/format.h>

#include "properties/catalogue.hpp"
#include "properties/probes.hpp"
#include "properties/property.hpp"
#include "properties/skip_checks.hpp"
#include "properties/skip_programs_rc.hpp"
#include "properties/trace_checks.hpp"

namespace capsim {

namespace {

struct SkipEntry {
  std::string_view name;
  std::string_view statement;
  std::string_view control;
  Fault fault;
};

constexpr SkipEntry kSkipEntries[rc_gen::kSkipFoci] = {
    {"cudagraphs.skips-as-documented.s1",
     "every compile-time skip decision is the documented one, over graphs that mutate a plain "
     "input with cudagraph_support_input_mutation off (S1)",
     "tree fault ignore_skip_s1: the compile-time mutation skip never fires", Fault::kIgnoreSkipS1},
    {"cudagraphs.skips-as-documented.s2",
     "every compile-time skip decision is the documented one, over graphs with a cpu op and "
     "graph_partition off (S2)",
     "tree fault ignore_skip_s2: a cpu op without partitions does not skip", Fault::kIgnoreSkipS2},
    {"cudagraphs.skips-as-documented.s3",
     "every compile-time skip decision is the documented one, over graphs on more than one CUDA "
     "device (S3)",
     "tree fault ignore_skip_s3: more than one device does not skip", Fault::kIgnoreSkipS3},
    {"cudagraphs.skips-as-documented.s4",
     "every compile-time skip decision is the documented one, over graphs with non-Tensor inputs "
     "or an input whose strides overlap (S4, logged or silent)",
     "tree fault ignore_skip_s4: S4's tests (complex memory overlap, non-Tensor inputs) always "
     "pass",
     Fault::kIgnoreSkipS4},
    {"cudagraphs.skips-as-documented.s5",
     "every compile-time skip decision is the documented one, over graphs with a cudagraph_unsafe "
     "op or symint calls under cudagraph_skip_dynamic_graphs (S5)",
     "tree fault ignore_skip_s5: neither skips", Fault::kIgnoreSkipS5},
    {"cudagraphs.skips-as-documented.s6",
     "every compile-time skip decision is the documented one, with the caching allocator off "
     "(S6, 2.13 on)",
     "tree fault ignore_skip_s6: the caching allocator off does not skip", Fault::kIgnoreSkipS6},
    {"cudagraphs.skips-as-documented.s7",
     "every compile-time skip decision is the documented one, over graphs that set_ an input "
     "(S7, 2.13 on)",
     "tree fault ignore_skip_s7: a set_ on an input does not skip", Fault::kIgnoreSkipS7},
};

constexpr std::string_view kSkipPrograms =
    "one or two graphs of a plain input and a Parameter with what the compile-time skips read "
    "(a mutated input, a cut, non-Tensor inputs, devices, a set_), called with or without a "
    "symint, under every profile and the knobs the skips read; the named skip always on";

WorldOptions skip_world(const SkipProgram& program, Fault fault) {
  WorldOptions o;
  o.verify_replays = true;
  o.config = program.config;
  o.fault = fault_at(fault, FaultSite::kTree);
  return o;
}

CaseFunction skip_property(std::uint32_t focus, Fault own, CaseSetting setting) {
  const auto fault_of = [own, setting](bool control) { return control ? own : setting.injected; };
  return make_probed_case<SkipPlan>(
      rc_gen::skip_plan(focus, setting.torch),
      [fault_of](const SkipPlan& plan, bool control, ProbeSet* probes) -> CheckResult {
        const SkipProgram program = lower_skips(plan);
        Status status;
        const std::unique_ptr<World> world =
            run_generated(program.generated, skip_world(program, fault_of(control)), status);
        if (!status) return "bad input: " + status.error().message;
        if (probes != nullptr) *probes = tree_probes(*world);
        return check_skips_as_documented(*world, program.generated.program, world->config());
      },
      [](const SkipPlan& plan) { return describe(lower_skips(plan)); },
      [fault_of](const SkipPlan& plan, bool control) {
        const SkipProgram program = lower_skips(plan);
        return generated_trace_lines(program.generated, skip_world(program, fault_of(control)),
                                     "capsim-check counterexample");
      });
}

}  // namespace

void add_skip_properties(std::vector<Property>& c, const CaseSetting& setting) {
  for (std::uint32_t focus = 0; focus < rc_gen::kSkipFoci; ++focus) {
    const SkipEntry& e = kSkipEntries[focus];
    Property p{e.name,        e.statement, "cudagraph-trees.md §2.5, §7 (the skip table)",
               kSkipPrograms, e.control,   e.fault};
    p.run = skip_property(focus, e.fault, setting);
    c.push_back(std::move(p));
  }
}

}  // namespace capsim
