// The property catalogue (see catalogue.hpp). Every entry binds a RapidCheck
// generator to one of the plain checks of cudagraph_checks.hpp or
// trace_checks.hpp, and names the broken model that its control runs.
#include "properties/catalogue.hpp"

#include <fmt/format.h>

#include "properties/autograd_checks.hpp"
#include "properties/autograd_programs_rc.hpp"
#include "properties/cudagraph_checks.hpp"
#include "properties/cudagraph_programs_rc.hpp"
#include "properties/probes.hpp"
#include "properties/regressions.hpp"
#include "properties/trace_checks.hpp"

namespace capsim {

namespace {

WorldOptions sound_world() {
  WorldOptions o;
  o.verify_replays = true;
  return o;
}

WorldOptions broken_world(TreeFault fault) {
  WorldOptions o = sound_world();
  o.fault = fault;
  return o;
}

std::string describe_plan(const ProgramPlan& plan) {
  return describe(lower(plan));
}

// A plan's run as a trace, in the World the case ran in (broken for a
// control), cut where PyTorch's contract ends when the check was (`cut`).
TraceOf<ProgramPlan> plan_trace(std::function<WorldOptions(bool control)> world_for,
                                bool cut = false) {
  return [world_for = std::move(world_for), cut](const ProgramPlan& plan, bool control) {
    const GeneratedProgram g = cut ? within_contract(lower(plan)) : lower(plan);
    return generated_trace_lines(g, world_for(control), "capsim-check counterexample");
  };
}

// A check on the World that ran the lowered plan, up to where it breaks
// PyTorch's contract; bad input fails the case, since the generator promises
// valid programs.
using WorldCheck = std::function<CheckResult(const World&, const GeneratedProgram&)>;

CheckResult on_world(const ProgramPlan& plan, const WorldOptions& options, const WorldCheck& check,
                     ProbeSet* probes) {
  const GeneratedProgram generated = within_contract(lower(plan));
  Status status;
  const std::unique_ptr<World> world = run_generated(generated, options, status);
  if (!status) return "bad input: " + status.error().message;
  if (probes != nullptr) *probes = tree_probes(*world);
  return check(*world, generated);
}

// A property over random cudagraph programs: `check` on a sound World, or on
// one with `fault` for the control.
CaseFunction world_property(TreeFault fault, WorldCheck check) {
  return make_probed_case<ProgramPlan>(
      rc_gen::program(),
      [fault, check = std::move(check)](const ProgramPlan& plan, bool control, ProbeSet* probes) {
        return on_world(plan, control ? broken_world(fault) : sound_world(), check, probes);
      },
      describe_plan,
      plan_trace([fault](bool control) { return control ? broken_world(fault) : sound_world(); },
                 true));
}

// A saved counterexample as the generator's bookkeeping: the program and its
// seed, with no knowledge of which inputs are static and no element count
// (the checks skip what needs them).
GeneratedProgram from_regression(const Regression& r) {
  GeneratedProgram g;
  g.program = r.program;
  g.seed = r.seed;
  g.numel = 0;
  return g;
}

WorldOptions regression_world(const Regression& r) {
  WorldOptions o = sound_world();
  o.config = r.config;
  return o;
}

RegressionCheck world_regression(WorldCheck check) {
  return [check = std::move(check)](const Regression& r) -> CheckResult {
    const GeneratedProgram g = from_regression(r);
    Status status;
    const std::unique_ptr<World> world = run_generated(g, regression_world(r), status);
    if (!status) return "bad input: " + status.error().message;
    return check(*world, g);
  };
}

// A property over random autograd programs; `check` gets `control`.
CaseFunction autograd_property(PropertyCheck<AutogradProgram> check) {
  return make_probed_case<AutogradProgram>(
      rc_gen::autograd_program(),
      [check = std::move(check)](const AutogradProgram& p, bool control, ProbeSet* probes) {
        if (probes != nullptr) *probes = autograd_probes(p);
        return check(p, control);
      },
      [](const AutogradProgram& p) { return describe(p); });
}

constexpr std::string_view kAutogradPrograms =
    "random autograd graphs of every node kind: functional ops, fan-in, CopySlices, "
    "CopyBackwards, PyNode, CppNode, an AOT region with a subclass output, hooks";

constexpr std::string_view kPrograms =
    "random cudagraph programs: functions over params, marked and eager tensors; steps of "
    "calls, mark_step_begin, reassigned params, a compiled optimizer";

// The compiled-autograd properties, over random autograd graphs.
void add_capture_properties(std::vector<Property>& c) {
  c.push_back({"capture.no-proxy-metadata-read",
               "the initial compiled-autograd capture reads no proxy metadata",
               "compiled-autograd.md §1.3, §2.9, §3", kAutogradPrograms,
               "the legacy capture (before PR 144707)",
               autograd_property([](const AutogradProgram& p, bool control) {
                 return check_no_metadata_read(
                     p, control ? CaptureMode::kLegacy : CaptureMode::kFunctional);
               })});
  c.push_back({"capture.independent-of-metadata",
               "perturbing every proxy's metadata leaves the captured graph byte-identical",
               "compiled-autograd.md §3", kAutogradPrograms,
               "the legacy capture (before PR 144707)",
               autograd_property([](const AutogradProgram& p, bool control) {
                 return check_independent_of_metadata(
                     p, control ? CaptureMode::kLegacy : CaptureMode::kFunctional);
               })});
  c.push_back({"capture.equals-eager",
               "the captured graph, run, leaves every .grad bitwise equal to the eager "
               "engine's",
               "compiled-autograd.md §1.3, §2", kAutogradPrograms,
               "run fault drop_fan_in_add: the interpreter drops fan-in adds",
               autograd_property([](const AutogradProgram& p, bool control) {
                 return check_runs_like_eager(p,
                                              control ? RunFault::kDropFanInAdd : RunFault::kNone);
               })});
}

// The cudagraph-tree and optimizer properties, each a check of one World run;
// a world property's regressions run its own check on the saved program.
void add_tree_properties(std::vector<Property>& c) {
  auto world_entry = [&c](Property p, TreeFault fault, const WorldCheck& check) {
    p.run = world_property(fault, check);
    p.regression = world_regression(check);
    c.push_back(std::move(p));
  };
  world_entry({"cudagraphs.replay-equals-eager",
               "every replay's outputs equal eager execution on the same inputs",
               "cudagraph-trees.md §3.3, §10.6, §10.12", kPrograms,
               "tree fault skip_copy_in: replays copy no inputs"},
              TreeFault::kSkipCopyIn,
              [](const World& w, const GeneratedProgram&) { return check_replays_match_eager(w); });
  world_entry({"cudagraphs.static-inputs-stable",
               "no replay reads a static or managed input whose storage was freed or moved "
               "since its recording baked the address in",
               "cudagraph-trees.md §4, §10.8, §10.9", kPrograms,
               "tree fault ignore_static_pointers: a changed static pointer is not checked"},
              TreeFault::kIgnoreStaticPointers, [](const World& w, const GeneratedProgram&) {
                return check_static_inputs_stable(w);
              });
  world_entry({"cudagraphs.copies-only-non-static",
               "a replay copies exactly its node's non-static inputs, and static inputs are "
               "never copied",
               "cudagraph-trees.md §3.2, §3.3, §10.6", kPrograms,
               "tree fault skip_copy_in: replays copy no inputs"},
              TreeFault::kSkipCopyIn,
              [](const World& w, const GeneratedProgram& g) { return check_copies(w, g); });
  world_entry({"cudagraphs.pool-accounting",
               "every pool check finds the pool's live blocks equal to the live tracked "
               "outputs, and each checkpoint leaves exactly its live set",
               "cudagraph-trees.md §5.6, §5.7, §10.5", kPrograms,
               "tree fault restore_keeps_all: a checkpoint frees nothing"},
              TreeFault::kRestoreKeepsAll,
              [](const World& w, const GeneratedProgram&) { return check_pool(w); });
  world_entry(
      {"cudagraphs.static-never-reallocated",
       "between an optimizer's creation and its drop, every recording of its step "
       "bakes in the same address for each state buffer",
       "cudagraph-trees.md §6; PR 107504", kPrograms,
       "fault move_optimizer_state: the state, marked without a guard, moves to new storage "
       "before the third step"},
      TreeFault::kMoveOptimizerState,
      [](const World& w, const GeneratedProgram&) { return check_optimizer_state_static(w); });
  world_entry({"optimizer.finalizer-releases",
               "a dropped optimizer leaves none of its state alive: the finalizer releases "
               "the static attributes",
               "cudagraph-trees.md §6; test_static_address_finalizer", kPrograms,
               "fault finalizer_keeps_state: the graph module keeps its attributes"},
              TreeFault::kFinalizerKeepsState,
              [](const World& w, const GeneratedProgram&) { return check_finalizer_releases(w); });
}

// Same program and seed, same events and same bytes.
void add_determinism_properties(std::vector<Property>& c) {
  c.push_back({"determinism.same-seed-same-events",
               "the same program and seed give the same events, event for event",
               "architecture.md §6", kPrograms,
               "the second run gets another seed: the seed must matter",
               make_probed_case<ProgramPlan>(
                   rc_gen::program(),
                   [](const ProgramPlan& plan, bool control, ProbeSet* probes) -> CheckResult {
                     // The whole program, past any break of PyTorch's
                     // contract: an E1 must be as deterministic as the rest.
                     const GeneratedProgram g = lower(plan);
                     GeneratedProgram again = g;
                     if (control) ++again.seed;
                     Status s1, s2;
                     const auto first = run_generated(g, sound_world(), s1);
                     const auto second = run_generated(again, sound_world(), s2);
                     if (!s1) return "bad input: " + s1.error().message;
                     if (!s2) return "bad input: " + s2.error().message;
                     if (probes != nullptr) *probes = tree_probes(*first);
                     return check_same_events(*first, *second);
                   },
                   describe_plan, plan_trace([](bool) { return sound_world(); })),
               [](const Regression& r) -> CheckResult {
                 const GeneratedProgram g = from_regression(r);
                 Status s1, s2;
                 const auto first = run_generated(g, regression_world(r), s1);
                 const auto second = run_generated(g, regression_world(r), s2);
                 if (!s1) return "bad input: " + s1.error().message;
                 if (!s2) return "bad input: " + s2.error().message;
                 return check_same_events(*first, *second);
               }});
  c.push_back(
      {"determinism.same-seed-same-bytes", "the same program and seed record byte-identical traces",
       "architecture.md §6", kPrograms,
       "the second recording gets another seed: the bytes must depend on it",
       make_case<ProgramPlan>(
           rc_gen::program(),
           [](const ProgramPlan& plan, bool control) {
             return check_trace_bytes_deterministic(lower(plan), control);
           },
           describe_plan, plan_trace([](bool) { return sound_world(); })),
       [](const Regression& r) { return check_trace_bytes_deterministic(from_regression(r)); }});
}

void add_trace_properties(std::vector<Property>& c) {
  c.push_back({"traces.round-trip",
               "record, write, read and replay of a run find no divergence and no invariant "
               "violation",
               "docs/trace-format.md §9", kPrograms,
               "the trace is recorded from a World with tree fault skip_copy_in",
               make_case<ProgramPlan>(
                   rc_gen::program(),
                   [](const ProgramPlan& plan, bool control) {
                     return check_trace_round_trip(
                         within_contract(lower(plan)),
                         control ? TreeFault::kSkipCopyIn : TreeFault::kNone);
                   },
                   describe_plan,
                   plan_trace(
                       [](bool control) {
                         WorldOptions o;  // as check_trace_round_trip records
                         if (control) o.fault = TreeFault::kSkipCopyIn;
                         return o;
                       },
                       true)),
               [](const Regression& r) {
                 return check_trace_round_trip(from_regression(r), TreeFault::kNone);
               }});
}

// In the order `capsim check` runs and lists them.
std::vector<Property> make_catalogue() {
  std::vector<Property> c;
  add_capture_properties(c);
  add_tree_properties(c);
  add_determinism_properties(c);
  add_trace_properties(c);
  return c;
}

}  // namespace

const std::vector<Property>& property_catalogue() {
  static const std::vector<Property> catalogue = make_catalogue();
  return catalogue;
}

const Property* find_property(std::string_view name) {
  for (const Property& p : property_catalogue()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace capsim
