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

// loop_properties.cpp: the training-loop properties.
void add_loop_properties(std::vector<Property>& c, const CaseSetting& setting);
// skip_properties.cpp: the compile-time skips against the doc's conditions.
void add_skip_properties(std::vector<Property>& c, const CaseSetting& setting);
// runtime_skip_properties.cpp: the run-time skips against the doc's conditions.
void add_runtime_skip_properties(std::vector<Property>& c, const CaseSetting& setting);

namespace {

// A World for one case: the tree part of `fault`, the case's fault (kNone
// for a sound case, the property's own for its control, or what --inject put
// into every sound case).
WorldOptions world_with(Fault fault) {
  WorldOptions o;
  o.verify_replays = true;
  o.fault = fault_at(fault, FaultSite::kTree);
  return o;
}

// The fault a case of `control_fault`'s property runs with: its own for the
// control, else the catalogue's injected one (kNone but under --inject).
Fault case_fault(bool control, Fault control_fault, const CaseSetting& setting) {
  return control ? control_fault : setting.injected;
}

std::string describe_plan(const ProgramPlan& plan) {
  return describe(lower(plan));
}

// A plan's run as a trace, in the World the case ran in (broken for a
// control), cut where PyTorch's contract ends when the check was (`cut`).
TraceOf<ProgramPlan> plan_trace(Fault control_fault, CaseSetting injected, bool cut = false) {
  return [control_fault, injected, cut](const ProgramPlan& plan, bool control) {
    const GeneratedProgram g = cut ? within_contract(lower(plan)) : lower(plan);
    const Fault fault = case_fault(control, control_fault, injected);
    return generated_trace_lines(g, world_with(fault), "capsim-check counterexample");
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

// A property over random cudagraph programs: `check` on a World with the
// case's fault.
CaseFunction world_property(Fault control_fault, CaseSetting injected, WorldCheck check) {
  return make_probed_case<ProgramPlan>(
      rc_gen::program(injected.torch),
      [control_fault, injected, check = std::move(check)](const ProgramPlan& plan, bool control,
                                                          ProbeSet* probes) {
        const Fault fault = case_fault(control, control_fault, injected);
        return on_world(plan, world_with(fault), check, probes);
      },
      describe_plan, plan_trace(control_fault, injected, true));
}

// A saved counterexample as the generator's bookkeeping: the program and its
// seed, with no knowledge of which inputs are static and no element count
// (the checks skip what needs them).
GeneratedProgram from_regression(const Regression& r) {
  GeneratedProgram g;
  g.program = r.program;
  g.seed = r.seed;
  g.torch_profile = r.config.torch_profile;
  g.numel = 0;
  return g;
}

// Saved counterexamples run on the sound model, even under --inject: they
// say whether a bug once found is back.
WorldOptions regression_world(const Regression& r) {
  WorldOptions o = world_with(Fault::kNone);
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

// A property over random autograd programs; `check` gets the case's fault.
CaseFunction autograd_property(Fault control_fault, CaseSetting injected,
                               std::function<CheckResult(const AutogradProgram&, Fault)> check) {
  return make_probed_case<AutogradProgram>(
      rc_gen::autograd_program(),
      [control_fault, injected, check = std::move(check)](const AutogradProgram& p, bool control,
                                                          ProbeSet* probes) {
        if (probes != nullptr) *probes = autograd_probes(p);
        return check(p, case_fault(control, control_fault, injected));
      },
      [](const AutogradProgram& p) { return describe(p); });
}

CaptureMode capture_mode(Fault fault) {
  return fault == Fault::kLegacyCapture ? CaptureMode::kLegacy : CaptureMode::kFunctional;
}

constexpr std::string_view kAutogradPrograms =
    "random autograd graphs of every node kind: functional ops, fan-in, CopySlices, "
    "CopyBackwards, PyNode, CppNode, an AOT region with a subclass output, hooks";

constexpr std::string_view kPrograms =
    "random cudagraph programs: functions over params, marked and eager tensors; steps of "
    "calls, mark_step_begin, reassigned params, a compiled optimizer";

// The compiled-autograd properties, over random autograd graphs.
void add_capture_properties(std::vector<Property>& c, const CaseSetting& injected) {
  auto entry = [&c, injected](Property p,
                              std::function<CheckResult(const AutogradProgram&, Fault)> check) {
    p.run = autograd_property(p.fault, injected, std::move(check));
    c.push_back(std::move(p));
  };
  entry(
      {"capture.no-proxy-metadata-read",
       "the initial compiled-autograd capture reads no proxy metadata",
       "compiled-autograd.md §1.3, §2.9, §3", kAutogradPrograms,
       "the legacy capture (before PR 144707)", Fault::kLegacyCapture},
      [](const AutogradProgram& p, Fault f) { return check_no_metadata_read(p, capture_mode(f)); });
  entry({"capture.independent-of-metadata",
         "perturbing every proxy's metadata leaves the captured graph byte-identical",
         "compiled-autograd.md §3", kAutogradPrograms, "the legacy capture (before PR 144707)",
         Fault::kLegacyCapture},
        [](const AutogradProgram& p, Fault f) {
          return check_independent_of_metadata(p, capture_mode(f));
        });
  entry({"capture.equals-eager",
         "the captured graph, run, leaves every .grad bitwise equal to the eager engine's",
         "compiled-autograd.md §1.3, §2", kAutogradPrograms,
         "run fault drop_fan_in_add: the interpreter drops fan-in adds", Fault::kDropFanInAdd},
        [](const AutogradProgram& p, Fault f) {
          return check_runs_like_eager(p, fault_at(f, FaultSite::kRun));
        });
}

// The cudagraph-tree and optimizer properties, each a check of one World run;
// a world property's regressions run its own check on the saved program.
void add_tree_properties(std::vector<Property>& c, const CaseSetting& injected) {
  auto world_entry = [&c, injected](Property p, const WorldCheck& check) {
    p.run = world_property(p.fault, injected, check);
    p.regression = world_regression(check);
    c.push_back(std::move(p));
  };
  world_entry({"cudagraphs.replay-equals-eager",
               "every replay's outputs equal eager execution on the same inputs",
               "cudagraph-trees.md §3.3, §10.6, §10.12", kPrograms,
               "tree fault skip_copy_in: replays copy no inputs", Fault::kSkipCopyIn},
              [](const World& w, const GeneratedProgram&) { return check_replays_match_eager(w); });
  world_entry(
      {"cudagraphs.static-inputs-stable",
       "no replay reads a static or managed input whose storage was freed or moved "
       "since its recording baked the address in",
       "cudagraph-trees.md §4, §10.8, §10.9", kPrograms,
       "tree fault ignore_static_pointers: a changed static pointer is not checked",
       Fault::kIgnoreStaticPointers},
      [](const World& w, const GeneratedProgram&) { return check_static_inputs_stable(w); });
  world_entry({"cudagraphs.copies-only-non-static",
               "a replay copies exactly its node's non-static inputs, and static inputs are "
               "never copied",
               "cudagraph-trees.md §3.2, §3.3, §10.6", kPrograms,
               "tree fault skip_copy_in: replays copy no inputs", Fault::kSkipCopyIn},
              [](const World& w, const GeneratedProgram& g) { return check_copies(w, g); });
  world_entry({"cudagraphs.partition-statics-mapped",
               "a graph partition's recordings copy the plain graph inputs it receives and "
               "never the static ones (get_partition_cudagraph_metadata)",
               "cudagraph-trees.md §2.5", kPrograms,
               "tree fault unmapped_partition_statics: a partition takes the graph's static "
               "indices as its own",
               Fault::kUnmappedPartitionStatics},
              [](const World& w, const GeneratedProgram& g) { return check_copies(w, g); });
  world_entry({"cudagraphs.demoted-inputs-copied",
               "a managed input demoted to a copy (2.15's cudagraph_managed_input_rerecord_limit) "
               "is copied in at every replay, so replays still equal eager",
               "cudagraph-trees.md §4 (managed-input demotion)", kPrograms,
               "tree fault demoted_not_copied: a demoted managed input is never copied at replay",
               Fault::kDemotedNotCopied},
              [](const World& w, const GeneratedProgram&) { return check_replays_match_eager(w); });
  world_entry({"cudagraphs.pool-accounting",
               "every pool check finds the pool's live blocks equal to the live tracked "
               "outputs, and each checkpoint leaves exactly its live set",
               "cudagraph-trees.md §5.6, §5.7, §10.5", kPrograms,
               "tree fault restore_keeps_all: a checkpoint frees nothing", Fault::kRestoreKeepsAll},
              [](const World& w, const GeneratedProgram&) { return check_pool(w); });
  world_entry(
      {"cudagraphs.static-never-reallocated",
       "between an optimizer's creation and its drop, every recording of its step "
       "bakes in the same address for each state buffer",
       "cudagraph-trees.md §6; PR 107504", kPrograms,
       "fault move_optimizer_state: the state, marked without a guard, moves to new storage "
       "before the third step",
       Fault::kMoveOptimizerState},
      [](const World& w, const GeneratedProgram&) { return check_optimizer_state_static(w); });
  world_entry({"optimizer.finalizer-releases",
               "a dropped optimizer leaves none of its state alive: the finalizer releases "
               "the static attributes",
               "cudagraph-trees.md §6; test_static_address_finalizer", kPrograms,
               "fault finalizer_keeps_state: the graph module keeps its attributes",
               Fault::kFinalizerKeepsState},
              [](const World& w, const GeneratedProgram&) { return check_finalizer_releases(w); });
}

// Two runs of one program under `options`: the same events, event for event.
CheckResult same_events(const GeneratedProgram& g, const GeneratedProgram& again,
                        const WorldOptions& options, ProbeSet* probes) {
  const TwoRuns runs = run_twice(g, again, options);
  if (runs.ending) return runs.ending;
  if (probes != nullptr) *probes = tree_probes(*runs.first);
  return check_same_events(*runs.first, *runs.second);
}

// Same program and seed, same events and same bytes. The control varies the
// second run's seed (Fault::kVarySeed): the seed must matter.
void add_determinism_properties(std::vector<Property>& c, const CaseSetting& injected) {
  Property events{"determinism.same-seed-same-events",
                  "the same program and seed give the same events, event for event",
                  "architecture.md §6",
                  kPrograms,
                  "the second run gets another seed: the seed must matter",
                  Fault::kVarySeed};
  events.run = make_probed_case<ProgramPlan>(
      rc_gen::program(injected.torch),
      [injected, own = events.fault](const ProgramPlan& plan, bool control,
                                     ProbeSet* probes) -> CheckResult {
        // The whole program, past any break of PyTorch's contract: an E1
        // must be as deterministic as the rest.
        const Fault fault = case_fault(control, own, injected);
        const GeneratedProgram g = lower(plan);
        GeneratedProgram again = g;
        if (fault == Fault::kVarySeed) ++again.seed;
        return same_events(g, again, world_with(fault), probes);
      },
      describe_plan, plan_trace(Fault::kNone, injected));
  events.regression = [](const Regression& r) -> CheckResult {
    const GeneratedProgram g = from_regression(r);
    return same_events(g, g, regression_world(r), nullptr);
  };
  c.push_back(std::move(events));
  Property bytes{"determinism.same-seed-same-bytes",
                 "the same program and seed record byte-identical traces",
                 "architecture.md §6",
                 kPrograms,
                 "the second recording gets another seed: the bytes must depend on it",
                 Fault::kVarySeed};
  bytes.run = make_case<ProgramPlan>(
      rc_gen::program(injected.torch),
      [injected, own = bytes.fault](const ProgramPlan& plan, bool control) {
        const Fault fault = case_fault(control, own, injected);
        return check_trace_bytes_deterministic(lower(plan), fault == Fault::kVarySeed,
                                               fault_at(fault, FaultSite::kTree));
      },
      describe_plan, plan_trace(Fault::kNone, injected));
  bytes.regression = [](const Regression& r) {
    return check_trace_bytes_deterministic(from_regression(r));
  };
  c.push_back(std::move(bytes));
}

void add_trace_properties(std::vector<Property>& c, const CaseSetting& injected) {
  Property p{"traces.round-trip",
             "record, write, read and replay of a run find no divergence and no invariant "
             "violation",
             "docs/trace-format.md §9",
             kPrograms,
             "the trace is recorded from a World with tree fault skip_copy_in",
             Fault::kSkipCopyIn};
  p.run = make_case<ProgramPlan>(
      rc_gen::program(injected.torch),
      [injected, own = p.fault](const ProgramPlan& plan, bool control) {
        const Fault fault = case_fault(control, own, injected);
        return check_trace_round_trip(within_contract(lower(plan)),
                                      fault_at(fault, FaultSite::kTree));
      },
      describe_plan,
      [injected, own = p.fault](const ProgramPlan& plan, bool control) {
        WorldOptions o;  // as check_trace_round_trip records: no replay checks
        o.fault = fault_at(case_fault(control, own, injected), FaultSite::kTree);
        return generated_trace_lines(within_contract(lower(plan)), o,
                                     "capsim-check counterexample");
      });
  p.regression = [](const Regression& r) {
    return check_trace_round_trip(from_regression(r), Fault::kNone);
  };
  c.push_back(std::move(p));
}

// Controls that break what only some releases do: under a pinned profile
// without it (`capsim check --torch P`) they cannot fail.
struct ControlNeed {
  std::string_view property;
  std::string_view needs;
  bool (*has)(const TorchProfileRules&);
};
constexpr ControlNeed kControlNeeds[] = {
    {"cudagraphs.partition-statics-mapped", "graph partitions (graph_partition on, 2.9 on)",
     [](const TorchProfileRules& r) { return r.graph_partition_default; }},
    {"cudagraphs.demoted-inputs-copied", "managed-input demotion (2.15)",
     [](const TorchProfileRules& r) { return r.has_managed_input_demotion; }},
    {"cudagraphs.skips-as-documented.s6", "the caching-allocator skip (S6, 2.13 on)",
     [](const TorchProfileRules& r) { return r.caching_allocator_skip; }},
    {"cudagraphs.skips-as-documented.s7", "the input-storage-mutation skip (S7, 2.13 on)",
     [](const TorchProfileRules& r) { return r.input_storage_mutation_skip; }},
    {"cudagraphs.skips-as-documented.e5", "the re-record limit (every profile but 2.12)",
     [](const TorchProfileRules& r) { return r.rerecord_limit != RerecordLimit::kNever; }},
    {"cudagraphs.skips-as-documented.e9", "the managed-input limit (E9, 2.15)",
     [](const TorchProfileRules& r) { return r.has_managed_input_demotion; }},
};

// In the order `capsim check` runs and lists them.
std::vector<Property> make_catalogue(const CaseSetting& injected) {
  std::vector<Property> c;
  add_capture_properties(c, injected);
  add_tree_properties(c, injected);
  add_skip_properties(c, injected);
  add_runtime_skip_properties(c, injected);
  add_determinism_properties(c, injected);
  add_trace_properties(c, injected);
  add_loop_properties(c, injected);
  for (Property& p : c) {
    for (const ControlNeed& need : kControlNeeds) {
      if (p.name != need.property) continue;
      p.control_needs = need.needs;
      p.control_applies = !injected.torch || need.has(profile_rules(*injected.torch));
    }
  }
  return c;
}

}  // namespace

const std::vector<Property>& property_catalogue() {
  static const std::vector<Property> catalogue = make_catalogue(CaseSetting{});
  return catalogue;
}

std::vector<Property> catalogue_with(const CaseSetting& setting) {
  CAPSIM_CHECK(setting.injected == Fault::kNone || injectable(setting.injected),
               "only tree, run and capture faults are injected");
  return make_catalogue(setting);
}

std::vector<Property> catalogue_with_injected(Fault injected) {
  CAPSIM_CHECK(injectable(injected), "only tree, run and capture faults are injected");
  return make_catalogue(CaseSetting{injected, std::nullopt});
}

bool injectable(Fault fault) {
  const FaultSite site = fault_site(fault);
  return site == FaultSite::kTree || site == FaultSite::kRun || site == FaultSite::kCapture;
}

const Property* find_property(std::string_view name) {
  for (const Property& p : property_catalogue()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace capsim
