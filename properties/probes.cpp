// Coverage probes (see probes.hpp): each read off events or off a program.
#include "properties/probes.hpp"

#include <utility>

#include "properties/autograd_programs.hpp"
#include "properties/training_programs.hpp"
#include "sim/world/world.hpp"

namespace capsim {

namespace {

bool is(const Event& e, FieldKey key, std::string_view value) {
  return e.text(key) == value;
}

bool flag(const Event& e, FieldKey key) {
  const bool* v = e.get_if<bool>(key);
  return v != nullptr && *v;
}

bool non_empty(const Event& e, FieldKey key) {
  const IntList* v = e.get_if<IntList>(key);
  return v != nullptr && !v->empty();
}

void set(ProbeSet& s, CoverageProbe p) {
  s.set(static_cast<std::size_t>(p));
}

// A recording: of a partition, with managed inputs, and why it re-recorded.
void record_probes(const World& world, const Event& e, ProbeSet& s) {
  set(s, CoverageProbe::kRecord);
  if (e.has(F::fid) && world.partition_piece(static_cast<FunctionId>(e.count(F::fid)),
                                             e.text(F::function).value_or("")) != nullptr) {
    set(s, CoverageProbe::kPartition);
  }
  if (non_empty(e, F::managed)) set(s, CoverageProbe::kManagedInput);
  if (is(e, F::reason, "static_input_idx_mismatch") ||
      is(e, F::reason, "cudagraph_managed_idx_mismatch")) {
    set(s, CoverageProbe::kRerecord);
  }
  if (is(e, F::reason, "static_input_idx_mismatch") &&
      !profile_rules(world.config().torch_profile).static_mismatch_counts) {
    set(s, CoverageProbe::kUncountedRerecord);
  }
  if (is(e, F::reason, "expected_dead_indices_before_graph_mismatch")) {
    set(s, CoverageProbe::kLivenessSibling);
  }
}

// A skip: the re-record limit, a managed input's demotion, the newer skips.
void skip_probes(const Event& e, ProbeSet& s) {
  if (is(e, F::id, "E5")) set(s, CoverageProbe::kRerecordLimit);
  if (is(e, F::id, "E9")) set(s, CoverageProbe::kManagedDemotion);
  for (std::string_view id : {"S2", "S3", "S4", "S5", "S6", "S7"}) {
    if (is(e, F::id, id)) set(s, CoverageProbe::kNewerSkip);
  }
  // A compile-time skip (no fid: no tree function was made), by its id.
  if (!e.has(F::function) || e.has(F::fid)) return;
  constexpr std::pair<std::string_view, CoverageProbe> kById[] = {
      {"S1", CoverageProbe::kSkipS1}, {"S2", CoverageProbe::kSkipS2},
      {"S3", CoverageProbe::kSkipS3}, {"S4", CoverageProbe::kSkipS4},
      {"S5", CoverageProbe::kSkipS5}, {"S6", CoverageProbe::kSkipS6},
      {"S7", CoverageProbe::kSkipS7}};
  for (const auto& [id, probe] : kById) {
    if (is(e, F::id, id)) set(s, probe);
  }
}

// An eager run, by its reason.
void eager_probes(const Event& e, ProbeSet& s) {
  if (is(e, F::reason, "mutated_inputs")) set(s, CoverageProbe::kMutationGate);
  if (is(e, F::reason, "capture_size")) set(s, CoverageProbe::kCaptureSizeBypass);
  if (is(e, F::reason, "silent_skip")) {
    set(s, CoverageProbe::kNewerSkip);
    set(s, CoverageProbe::kSkipS4Silent);
  }
  if (is(e, F::reason, "managed_input_rerecord_limit")) set(s, CoverageProbe::kManagedDemotion);
}

}  // namespace

ProbeSet tree_probes(const World& world) {
  ProbeSet s;
  for (const Event& e : world.events()) {
    switch (e.kind) {
      case EventKind::kWarmup: set(s, CoverageProbe::kWarmup); break;
      case EventKind::kRecord: record_probes(world, e, s); break;
      case EventKind::kReplay: set(s, CoverageProbe::kReplay); break;
      case EventKind::kSkip: skip_probes(e, s); break;
      case EventKind::kCheckpoint: set(s, CoverageProbe::kCheckpoint); break;
      case EventKind::kDealloc: set(s, CoverageProbe::kGenerationDealloc); break;
      case EventKind::kGenerationClone: set(s, CoverageProbe::kGenerationClone); break;
      case EventKind::kDemote: set(s, CoverageProbe::kManagedDemotion); break;
      case EventKind::kError:
        if (is(e, F::id, "E1")) set(s, CoverageProbe::kOverwrittenOutput);
        if (is(e, F::id, "E1") && e.text(F::message)
                                      .value_or("")
                                      .starts_with("Error: accessing gradient tensor output")) {
          set(s, CoverageProbe::kGradOutputE1);
        }
        break;
      case EventKind::kEager: eager_probes(e, s); break;
      case EventKind::kAlignClone:
        set(s, flag(e, F::demoted) ? CoverageProbe::kAlignmentDemotion
                                   : CoverageProbe::kMisalignedClone);
        break;
      case EventKind::kCompile:
        if (flag(e, F::recompile)) set(s, CoverageProbe::kGuardRecompile);
        if (non_empty(e, F::int_key)) set(s, CoverageProbe::kNewSymint);
        break;
      case EventKind::kOptimizer:
        if (is(e, F::what, "dropped")) set(s, CoverageProbe::kOptimizerDropped);
        break;
      case EventKind::kShutdown: set(s, CoverageProbe::kManagerShutdown); break;
      case EventKind::kWarning:
        if (is(e, F::id, "W1")) set(s, CoverageProbe::kPendingBackward);
        if (is(e, F::id, "W2")) set(s, CoverageProbe::kDynamicShapeWarning);
        break;
      default: break;
    }
  }
  return s;
}

ProbeSet autograd_probes(const AutogradProgram& program) {
  ProbeSet s;
  for (const AutogradStep& step : program.steps) {
    const auto kind = static_cast<AutogradStepKind>(step.kind);
    if (kind == AutogradStepKind::kCopySlices) set(s, CoverageProbe::kCopySlicesCapture);
    if (kind == AutogradStepKind::kAotSubclass) set(s, CoverageProbe::kSubclassRebuild);
  }
  return s;
}

ProbeSet loop_probes(const World& world, const TrainingPlan& plan) {
  ProbeSet s = tree_probes(world);
  switch (plan.backward) {
    case LoopBackward::kEager:
    case LoopBackward::kAotEager: set(s, CoverageProbe::kLoopEagerBackward); break;
    case LoopBackward::kCompiledAutograd: set(s, CoverageProbe::kLoopCompiledAutograd); break;
    case LoopBackward::kAot: set(s, CoverageProbe::kLoopAotBackward); break;
    case LoopBackward::kCount: break;
  }
  switch (plan.optimizer) {
    case OptimizerKind::kSgd: set(s, CoverageProbe::kLoopSgd); break;
    case OptimizerKind::kAdam: set(s, CoverageProbe::kLoopAdam); break;
    case OptimizerKind::kAdamW: set(s, CoverageProbe::kLoopAdamW); break;
  }
  if (plan.accumulate > 1) set(s, CoverageProbe::kLoopAccumulatedGrads);
  if (plan.reassign_before) set(s, CoverageProbe::kLoopReassignedParam);
  for (const Event& e : world.events()) {
    const std::optional<std::string_view> fn = e.text(F::function);
    if (e.kind == EventKind::kReplay && fn && fn->starts_with("CompiledAutograd")) {
      set(s, CoverageProbe::kLoopRecordedBackward);
    }
    if (e.kind == EventKind::kCopyIn && fn == "opt.step" && e.get<std::int64_t>(F::bytes) == 0 &&
        plan.backward != LoopBackward::kEager && plan.backward != LoopBackward::kAotEager) {
      set(s, CoverageProbe::kLoopZeroCopyGrads);
    }
  }
  return s;
}

}  // namespace capsim
