// Coverage probes: how often `capsim check` reaches the model's rare paths.
//
// A probe is a path of the model that a property only tests when a generated
// program reaches it: a re-record, a checkpoint, the mutation gate, an
// alignment demotion, an E1, a CopySlices capture. Each case reports the set
// of probes its (unshrunk, sound) run hit; the runner counts cases per probe,
// `capsim check --stats` and `--json` print the counts, and
// `--require-probes` fails a run in which a probe that is not marked rare was
// never hit, so that a generator change cannot silently stop covering a path.
// Rare probes need a configuration the catalogue does not draw (the
// re-record limit only binds with inline_inbuilt_nn_modules off) or a program
// shape it seldom makes (the manager shuts down when the last cudagraphified
// function dies: an optimizer dropped when nothing else was compiled).
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <string_view>

namespace capsim {

class World;
struct AutogradProgram;

// X(enumerator, name, rare, what it counts)
#define CAPSIM_PROBES(X)                                                                          \
  X(kWarmup, "warmup", false, "a warmup run in the pool")                                         \
  X(kRecord, "record", false, "a recording")                                                      \
  X(kReplay, "replay", false, "a replay")                                                         \
  X(kManagedInput, "managed-input", false, "a recording with a cudagraph-managed input")          \
  X(kRerecord, "re-record", false, "a recording after a static or managed pointer changed")       \
  X(kLivenessSibling, "liveness-sibling", false,                                                  \
    "a sibling recorded because expected_dead_indices_before_graph did not hold")                 \
  X(kRerecordLimit, "re-record-limit", true, "E5: the re-record limit sent a call to eager")      \
  X(kUncountedRerecord, "uncounted-re-record", false,                                             \
    "a static-pointer re-record that the profile does not count toward the limit (2.13 on)")      \
  X(kCheckpoint, "checkpoint", false, "apply_checkpoint_execution_state_in_allocator")            \
  X(kGenerationDealloc, "generation-dealloc", false,                                              \
    "a new generation freed a warmup or recording path's outputs")                                \
  X(kOverwrittenOutput, "E1", false, "an output overwritten by a later generation was used")      \
  X(kGradOutputE1, "grad-output-E1", false,                                                       \
    "E1 of a BACKWARD function's output, in its own text (2.13 on)")                              \
  X(kMutationGate, "mutation-gate", false, "a mutated plain input sent a call to eager")          \
  X(kAlignmentDemotion, "alignment-demotion", false, "an unaligned static input was demoted")     \
  X(kMisalignedClone, "misaligned-clone", false, "a misaligned non-static input was cloned")      \
  X(kGuardRecompile, "guard-recompile", false, "a static-address guard failed: a recompile")      \
  X(kNewSymint, "new-symint", false, "a call with a new int key compiled a new function")         \
  X(kPartition, "partition", false, "a recording of a graph partition (graph_partition)")         \
  X(kCaptureSizeBypass, "capture-size-bypass", false,                                             \
    "a key outside cudagraph_capture_sizes ran the model directly")                               \
  X(kDynamicShapeWarning, "W2", false, "W2: more distinct int keys than the warn limit")          \
  X(kGenerationClone, "generation-clone", false,                                                  \
    "cudagraph_trees_generation_cloning moved live outputs out of the pool (2.14 on)")            \
  X(kNewerSkip, "newer-skip", false,                                                              \
    "a compile-time skip of the newer releases (S2 to S7, or silent with partitions)")            \
  X(kSkipS1, "skip-S1", false, "a compile-time S1 (input mutation support off)")                  \
  X(kSkipS2, "skip-S2", false, "S2: a cpu op without graph_partition")                            \
  X(kSkipS3, "skip-S3", false, "S3: more than one CUDA device")                                   \
  X(kSkipS4, "skip-S4", false, "S4 logged: a non-Tensor input without graph_partition")           \
  X(kSkipS4Silent, "skip-S4-silent", false, "S4 dropped silently with graph_partition")           \
  X(kSkipS5, "skip-S5", false, "S5: symbolic shapes or a cudagraph_unsafe op")                    \
  X(kSkipS6, "skip-S6", false, "S6: the caching allocator off (2.13 on)")                         \
  X(kSkipS7, "skip-S7", false, "S7: a set_ on a graph input (2.13 on)")                           \
  X(kManagedDemotion, "managed-demotion", true,                                                   \
    "2.15: a managed input's pointer changes reached the limit (a demote event, or E9)")          \
  X(kOptimizerDropped, "optimizer-dropped", false, "an optimizer's finalizer ran")                \
  X(kManagerShutdown, "manager-shutdown", true, "the tree manager was shut down")                 \
  X(kPendingBackward, "pending-backward", false, "W1: pending backwards kept a path from ending") \
  X(kCopySlicesCapture, "copyslices-capture", false, "a compiled-autograd capture of CopySlices") \
  X(kSubclassRebuild, "subclass-rebuild", false,                                                  \
    "a compiled-autograd capture that rebuilds a tensor subclass")                                \
  X(kLoopEagerBackward, "loop-eager-backward", false, "a training loop's backward ran eagerly")   \
  X(kLoopCompiledAutograd, "loop-compiled-autograd", false,                                       \
    "a training loop's backward ran through compiled autograd and the tree manager")              \
  X(kLoopAotBackward, "loop-aot-backward", false,                                                 \
    "a training loop's backward was its compiled forward's AOT backward, in the tree")            \
  X(kLoopRecordedBackward, "loop-recorded-backward", false,                                       \
    "a compiled-autograd backward replayed from its recording")                                   \
  X(kLoopZeroCopyGrads, "loop-zero-copy-grads", false,                                            \
    "an optimizer step replayed with every grad in the pool: 0 bytes copied")                     \
  X(kLoopSgd, "loop-sgd", false, "a training loop with compiled SGD")                             \
  X(kLoopAdam, "loop-adam", false, "a training loop with compiled Adam")                          \
  X(kLoopAdamW, "loop-adamw", false, "a training loop with compiled AdamW")                       \
  X(kLoopAccumulatedGrads, "loop-accumulated-grads", false,                                       \
    "a training loop kept its grads across a step (gradient accumulation)")                       \
  X(kLoopReassignedParam, "loop-reassigned-param", false,                                         \
    "a training loop reassigned a param's .data between steps")
enum class CoverageProbe : std::uint8_t {
#define CAPSIM_ENUM_(e, name, rare, what) e,
  CAPSIM_PROBES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
      kCount
};
inline constexpr std::size_t kProbeCount = static_cast<std::size_t>(CoverageProbe::kCount);

struct ProbeInfo {
  std::string_view name;
  bool rare;
  std::string_view what;
};
inline constexpr std::array<ProbeInfo, kProbeCount> kProbes = {{
#define CAPSIM_INFO_(e, name, rare, what) {name, rare, what},
    CAPSIM_PROBES(CAPSIM_INFO_)
#undef CAPSIM_INFO_
}};

using ProbeSet = std::bitset<kProbeCount>;

// Cases per probe.
struct ProbeCounts {
  std::array<std::uint64_t, kProbeCount> cases{};
  void add(const ProbeSet& hit) {
    for (std::size_t i = 0; i < kProbeCount; ++i) cases[i] += hit[i] ? 1 : 0;
  }
  void add(const ProbeCounts& other) {
    for (std::size_t i = 0; i < kProbeCount; ++i) cases[i] += other.cases[i];
  }
};

// The probes a finished World's events show.
ProbeSet tree_probes(const World& world);
// The loop probes a training loop's World shows (training_programs.hpp),
// with its tree probes.
struct TrainingPlan;
ProbeSet loop_probes(const World& world, const TrainingPlan& plan);
// The probes an autograd program reaches when compiled autograd captures it.
ProbeSet autograd_probes(const AutogradProgram& program);

}  // namespace capsim
