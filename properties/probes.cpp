// Coverage probes (see probes.hpp): each read off events or off a program.
#include "properties/probes.hpp"

#include <optional>
#include <utility>

#include "properties/autograd_programs.hpp"
#include "properties/training_programs.hpp"
#include "sim/core/decisions.hpp"
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
  const std::optional<Decision> d = decision_of(e);
  if (!d) return;
  switch (*d) {
    case Decision::kRerecordStaticInputMoved:
      set(s, CoverageProbe::kRerecord);
      if (!profile_rules(world.config().torch_profile).static_mismatch_counts) {
        set(s, CoverageProbe::kUncountedRerecord);
      }
      break;
    case Decision::kRerecordManagedInputMoved: set(s, CoverageProbe::kRerecord); break;
    case Decision::kRerecordExpectedDeadAlive: set(s, CoverageProbe::kLivenessSibling); break;
    default: break;
  }
}

// A compile-time skip's own probe (kSkipS1..kSkipS7), by its decision.
std::optional<CoverageProbe> compile_time_skip_probe(Decision d) {
  switch (d) {
    case Decision::kSkipMutatedInputs: return CoverageProbe::kSkipS1;
    case Decision::kSkipCpuOp: return CoverageProbe::kSkipS2;
    case Decision::kSkipMultipleDevices: return CoverageProbe::kSkipS3;
    case Decision::kSkipFailedCompileTest: return CoverageProbe::kSkipS4;
    case Decision::kSkipDynamicShapes: return CoverageProbe::kSkipS5;
    case Decision::kSkipUncachedAllocator: return CoverageProbe::kSkipS6;
    case Decision::kSkipInputStorageReplaced: return CoverageProbe::kSkipS7;
    default: return std::nullopt;
  }
}

// A skip: the re-record limit, a managed input's demotion, the newer skips.
void skip_probes(const Event& e, ProbeSet& s) {
  const std::optional<Decision> d = decision_of(e);
  if (!d) return;
  if (d == Decision::kSkipRerecordLimit) set(s, CoverageProbe::kRerecordLimit);
  if (d == Decision::kSkipManagedInputLimit) set(s, CoverageProbe::kManagedDemotion);
  const std::optional<CoverageProbe> own = compile_time_skip_probe(*d);
  if (own && d != Decision::kSkipMutatedInputs) set(s, CoverageProbe::kNewerSkip);
  // A compile-time skip (no fid: no tree function was made), by its id.
  if (own && e.has(F::function) && !e.has(F::fid)) set(s, *own);
}

// An eager run, by its reason.
void eager_probes(const Event& e, ProbeSet& s) {
  const std::optional<Decision> d = decision_of(e);
  if (!d) return;
  switch (*d) {
    case Decision::kEagerMutatedInputs: set(s, CoverageProbe::kMutationGate); break;
    case Decision::kEagerCaptureSize: set(s, CoverageProbe::kCaptureSizeBypass); break;
    case Decision::kEagerSilentSkip:
      set(s, CoverageProbe::kNewerSkip);
      set(s, CoverageProbe::kSkipS4Silent);
      break;
    case Decision::kEagerManagedInputLimit: set(s, CoverageProbe::kManagedDemotion); break;
    default: break;
  }
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
        if (decision_of(e) != Decision::kErrorOverwrittenOutput) break;
        set(s, CoverageProbe::kOverwrittenOutput);
        // PyTorch's wording for a grad output, the modelled message's own.
        if (e.text(F::message)
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
        if (decision_of(e) == Decision::kWarnPendingBackward) {
          set(s, CoverageProbe::kPendingBackward);
        }
        if (decision_of(e) == Decision::kWarnManySizes) set(s, CoverageProbe::kDynamicShapeWarning);
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
