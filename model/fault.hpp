// Faults: the deliberately broken models that negative controls run.
//
// A property is worth only as much as its control: the same check against a
// model broken on purpose, which must fail (docs/properties.md). Every such
// break in capsim is one row of CAPSIM_FAULTS, whatever layer it lives in, so
// that the catalogue, the tests and `capsim check --inject` name faults the
// same way and no layer keeps a private list. A component takes a `Fault` in
// its options and acts only on the rows of its own site; it asserts
// (`check_fault_site`) that it was not handed another site's fault, which
// would silently run the sound model while the test believes it is broken.
//
// The table lives at the bottom layer, next to the allocator that reads the
// first rows, because the enum must be visible to every layer that takes one;
// rows name behaviour of upper layers only by name, never by type.
// Never set a fault outside tests, `capsim check`'s controls and --inject.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace capsim {

// Where a fault acts: the component that reads it.
// X(enumerator, name)
#define CAPSIM_FAULT_SITES(X)                                              \
  X(kNone, "none")                                                         \
  X(kAllocator, "allocator") /* model/caching_allocator */                 \
  X(kTree, "tree")           /* sim/ tree manager, World, optimizer */     \
  X(kRun, "run")             /* sim/compiled_autograd/compiled_backward */ \
  X(kCapture, "capture")     /* sim/ compiled-autograd capture mode */     \
  X(kCheck, "check")         /* properties/: the check itself */           \
  X(kDiff, "diff")           /* render/graph_diff */                       \
  X(kMirror, "mirror")       /* cuda_reference/reference_mirror */         \
  X(kCuda, "cuda")           /* cuda_reference/cuda_backend */

enum class FaultSite : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_FAULT_SITES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

// X(enumerator, name, site, what the broken model does)
#define CAPSIM_FAULTS(X)                                                                          \
  X(kNone, "none", kNone, "the sound model")                                                      \
  X(kOverlappingSplit, "overlapping_split", kAllocator,                                           \
    "a split's remainder overlaps the block handed out")                                          \
  X(kIgnorePools, "ignore_pools", kAllocator,                                                     \
    "every pool is served from the default pool's blocks")                                        \
  X(kPoolRestoreKeepsAll, "pool_restore_keeps_all", kAllocator,                                   \
    "the allocator's restore() keeps every checkpointed block allocated")                         \
  X(kProcessGlobalPlacement, "process_global_placement", kAllocator,                              \
    "placement depends on process-wide state")                                                    \
  X(kSkipCopyIn, "skip_copy_in", kTree, "replays copy no inputs")                                 \
  X(kSkipFirstCopy, "skip_first_copy", kTree,                                                     \
    "a replay counts its first non-static input but never copies it (the injected bug)")          \
  X(kRestoreKeepsAll, "restore_keeps_all", kTree, "checkpoints free nothing")                     \
  X(kIgnoreStaticPointers, "ignore_static_pointers", kTree,                                       \
    "a changed static pointer is not checked: never re-record")                                   \
  X(kFinalizerKeepsState, "finalizer_keeps_state", kTree,                                         \
    "the graph module keeps its attributes: optimizer state outlives a drop")                     \
  X(kMoveOptimizerState, "move_optimizer_state", kTree,                                           \
    "the optimizer state, marked without a guard, moves to new storage")                          \
  X(kDeallocFreesNothing, "dealloc_frees_nothing", kTree,                                         \
    "a new generation poisons the path's outputs but frees none of their blocks")                 \
  X(kCloneCompiledGrads, "clone_compiled_grads", kTree,                                           \
    "AccumulateGrad clones a grad that .grad would take over, out of the pool")                   \
  X(kCloneKeepsPoolBlock, "clone_keeps_pool_block", kTree,                                        \
    "generation cloning moves a live output out of the pool but leaves its pool block allocated") \
  X(kUnmappedPartitionStatics, "unmapped_partition_statics", kTree,                               \
    "a partition's static inputs are the graph's indices, not mapped to the partition's")         \
  X(kDemotedNotCopied, "demoted_not_copied", kTree,                                               \
    "a managed input demoted to a copy (2.15) is never copied at replay")                         \
  X(kIgnoreSkipS1, "ignore_skip_s1", kTree, "the compile-time mutation skip (S1) never fires")    \
  X(kIgnoreSkipS2, "ignore_skip_s2", kTree, "a cpu op without partitions does not skip (S2)")     \
  X(kIgnoreSkipS3, "ignore_skip_s3", kTree, "more than one CUDA device does not skip (S3)")       \
  X(kIgnoreSkipS4, "ignore_skip_s4", kTree,                                                       \
    "S4's tests (complex memory overlap, non-Tensor inputs; logged or silent) always pass")       \
  X(kIgnoreSkipS5, "ignore_skip_s5", kTree,                                                       \
    "neither symbolic shapes nor a cudagraph_unsafe op skips (S5)")                               \
  X(kIgnoreSkipS6, "ignore_skip_s6", kTree,                                                       \
    "the caching allocator off does not skip (S6, 2.13 on)")                                      \
  X(kIgnoreSkipS7, "ignore_skip_s7", kTree, "a set_ on a graph input never skips (S7, 2.13 on)")  \
  X(kIgnoreSkipS1Runtime, "ignore_skip_s1_runtime", kTree,                                        \
    "the mutation gate (run-time S1) never blocks a call")                                        \
  X(kIgnoreSkipE5, "ignore_skip_e5", kTree, "the re-record limit (E5) is never exceeded")         \
  X(kIgnoreSkipE9, "ignore_skip_e9", kTree,                                                       \
    "2.15's managed-input limit under action \"skip\" (E9) is never reached")                     \
  X(kDropFanInAdd, "drop_fan_in_add", kRun, "the interpreter's torch.add returns its first arg")  \
  X(kSkipPostHooks, "skip_post_hooks", kRun, "the interpreter runs no post hooks")                \
  X(kLegacyCapture, "legacy_capture", kCapture,                                                   \
    "the capture before PR 144707 (CaptureMode::kLegacy), which reads proxy metadata")            \
  X(kVarySeed, "vary_seed", kCheck, "a determinism check's second run gets another seed")         \
  X(kIgnoreInputs, "ignore_inputs", kDiff, "a node whose inputs changed compares as the same")    \
  X(kLastCandidate, "last_candidate", kDiff,                                                      \
    "passes 2 and 3 pair with the last waiting node: asymmetric")                                 \
  X(kSkipUpload, "skip_upload", kMirror, "memory is copied in before the first replay only")      \
  X(kBakeOutside, "bake_outside", kCuda,                                                          \
    "the first kernel's first pointer is baked outside every buffer")

enum class Fault : std::uint8_t {
#define CAPSIM_ENUM_(e, name, site, meaning) e,
  CAPSIM_FAULTS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

inline constexpr int kNumFaults = 0
#define CAPSIM_COUNT_(e, name, site, meaning) +1
    CAPSIM_FAULTS(CAPSIM_COUNT_)
#undef CAPSIM_COUNT_
    ;

std::string_view fault_name(Fault fault);
std::string_view fault_meaning(Fault fault);
FaultSite fault_site(Fault fault);
std::string_view fault_site_name(FaultSite site);
// nullopt for a name no row has (bad input where a name enters: --inject).
std::optional<Fault> fault_from_name(std::string_view name);

// `fault` when it acts at `site`, else kNone: what a caller that holds one
// case's fault hands each component it builds.
inline Fault fault_at(Fault fault, FaultSite site) {
  return fault_site(fault) == site ? fault : Fault::kNone;
}

// The contract of a component that reads faults of `site`: `fault` is
// kNone or one of its own. Aborts at the caller's file and line otherwise.
void check_fault_site(Fault fault, FaultSite site, const char* file, int line);
#define CAPSIM_CHECK_FAULT_SITE(fault, site) \
  ::capsim::check_fault_site((fault), (site), __FILE__, __LINE__)

}  // namespace capsim
