// The nodes of a cudagraph tree: recorded graphs and warmup runs.
//
// Mirrors torch/_inductor/cudagraph_trees.py: a CUDAGraphNode (here GraphNode)
// is one recording with GraphID k = 0, 1, 2, ..., its static sets, the
// placeholders of its non-static inputs, the classes of its outputs, weak
// references to them, the liveness it assumed, and the pool state right after
// it was recorded. A CUDAWarmupNode (WarmupNode) is one eager run inside the
// pool; its ids count down from -1. Outputs on a path are addressed by
// (depth, output index), as PyTorch's `path_weakrefs[depth][idx]`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/backend.hpp"
#include "model/caching_allocator.hpp"
#include "model/tensor.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

using FunctionId = std::uint32_t;
using GraphId = std::uint32_t;

// What the tree manager knows of one compiled function and int-input key.
struct WrappedFunction {
  FunctionId id = 0;
  const FunctionDef* def = nullptr;  // owned by the World's program
  std::vector<std::int64_t> int_key;
  // After alignment demotion at the first call of this key.
  std::vector<std::uint32_t> static_input_idxs;
  std::vector<std::uint32_t> mutated_input_idxs;
  CompilationMode mode() const { return def->mode; }
};

struct PathIndex {
  std::uint32_t depth = 0;
  std::uint32_t index = 0;
  friend auto operator<=>(const PathIndex&, const PathIndex&) = default;
};

// A weak reference to a storage: it never keeps the storage alive.
struct StorageRef {
  StorageId id;
  Address base = 0;  // the storage's data_ptr when it was recorded
};

// X(enumerator, name): the classes of _add_first_outputs
// (docs/cudagraph-trees.md §5.3).
#define CAPSIM_OUTPUT_CLASSES(X)         \
  X(kStatic, "static")                   \
  X(kAliasPrior, "aliases_prior_output") \
  X(kAliasNew, "aliases_new_output")     \
  X(kFresh, "unaliased")
enum class OutputClass : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_OUTPUT_CLASSES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

struct OutputInfo {
  OutputClass cls = OutputClass::kFresh;
  TensorMeta meta;
  Address storage_base = 0;
  std::uint64_t storage_nbytes = 0;
  PathIndex prior;                        // kAliasPrior
  std::uint32_t new_index = 0;            // kAliasNew
  std::optional<TensorId> static_tensor;  // kStatic: the recorded tensor, returned as-is
};

struct NodeRef {
  bool warmup = false;
  std::uint32_t index = 0;  // GraphId, or index into the warmup nodes
  friend auto operator<=>(const NodeRef&, const NodeRef&) = default;
};

struct GraphNode {
  GraphId id = 0;
  std::optional<GraphId> parent;
  std::uint32_t depth = 0;
  FunctionId fid = 0;
  std::map<FunctionId, std::vector<GraphId>> children;  // insertion order per fid

  // As CUDAGraphNode.__init__ (2.15.0) has them. static_input_idxs: the
  // compile-time static inputs and every cudagraph-managed one, the demoted
  // ones included (PyTorch's own test asserts a demoted index stays there);
  // static_input_data_ptrs holds a pointer for each of them.
  std::vector<std::uint32_t> static_input_idxs;
  std::vector<std::uint32_t> non_static_input_idxs;
  // The managed inputs still baked in: the demoted ones left out.
  std::vector<std::uint32_t> cudagraph_managed_idxs;
  std::vector<std::uint32_t> non_managed_static_input_idxs;
  // The set whose pointers check_invariants compares (StaticInputIdxMismatch)
  // and the graph bakes in: the compile-time static inputs and the managed
  // ones not demoted. Equal to static_input_idxs unless an input is demoted.
  std::vector<std::uint32_t> tensor_static_input_idxs;
  // Managed inputs demoted to copies (2.15, action "copy"): outputs of the
  // path that this recording copies into placeholders like non-static
  // inputs (PyTorch's copy_cudagraph_managed_idxs minus the compile-time
  // static ones), whose pointers no check compares.
  std::vector<std::uint32_t> copied_managed_idxs;
  // PyTorch's input_copy_idxs: the inputs the recording and each replay copy
  // into placeholders (the non-static ones and the demoted managed ones),
  // sorted; derived once, when the recording classifies its inputs.
  std::vector<std::uint32_t> input_copy_idxs;
  std::vector<std::optional<Address>> static_input_data_ptrs;
  std::vector<bool> preserved_aliased_inputs;
  // Placeholder (reconstructed input) per input index; only non-static ones.
  std::vector<std::optional<TensorArg>> placeholders;

  GraphHandle graph;
  std::size_t program_steps = 0;
  std::vector<OutputInfo> outputs;
  std::vector<std::optional<StorageRef>> outputs_weakrefs;
  std::vector<bool> unaliased_in_all_paths;
  std::vector<std::optional<TensorId>> cached_outputs;  // pinned by the node

  std::vector<std::vector<bool>> recorded_liveness_before_graph;
  std::vector<std::vector<bool>> recorded_liveness_after_graph;
  std::vector<PathIndex> expected_dead_indices_before_graph;
  std::vector<PathIndex> expected_dead_indices_after_graph;
  std::vector<PathIndex> live_indices_after_graph;
  PoolCheckpoint checkpointed_caching_state;
};

struct WarmupNode {
  std::int64_t id = -1;
  std::optional<NodeRef> parent;
  std::uint32_t depth = 0;
  FunctionId fid = 0;
  std::vector<std::optional<StorageRef>> outputs_weakrefs;
};

// X(enumerator, name): CheckInvariantStatus.
#define CAPSIM_INVARIANT_STATUSES(X)                             \
  X(kSuccess, "SUCCESS")                                         \
  X(kCudagraphManagedIdxMismatch, "CudagraphManagedIdxMismatch") \
  X(kStaticInputIdxMismatch, "StaticInputIdxMismatch")           \
  X(kExpectedDeadIndicesBeforeGraphMismatch, "ExpectedDeadIndicesBeforeGraphMismatch")
enum class InvariantStatus : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_INVARIANT_STATUSES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

// Why a recording was made, as traces report it (pytorch#156820 asks for
// re-record reasons): the failed check of an existing child of the same
// function, or kSuccess when no child existed (the first recording on this
// path). For a pointer mismatch, the first input whose pointer changed.
struct RecordCause {
  InvariantStatus status = InvariantStatus::kSuccess;
  std::optional<std::uint32_t> input;
  Address old_ptr = 0;
  Address new_ptr = 0;
};
// "no_child", "static_input_idx_mismatch", ...: the `reason` of a record event.
// The record decision (sim/core/decisions.def) each status stands for: its
// key is the `reason` a record event carries.
Decision record_decision(InvariantStatus s);

// X(enumerator, name): ExecutionState.
#define CAPSIM_EXECUTION_STATES(X) \
  X(kNone, "NONE")                 \
  X(kWarmup, "WARMUP")             \
  X(kRecording, "RECORDING")       \
  X(kExecution, "EXECUTION")
enum class ExecutionState : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_EXECUTION_STATES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

}  // namespace capsim
