// The dynamo room of the world wing: what torch.compile decides before the
// cudagraph tree manager sees a call.
//
// Dynamo (torch/_dynamo) keeps a cache of compiled entries per function, each
// for one int key and guarded on the identity of the inputs marked with
// mark_static_address(guard=True) (ID_MATCH, VariableBuilder.wrap_tensor;
// the function's docstring says the data_ptr is guarded, the code guards the
// Python object, so `t.data = new` keeps the entry and a new tensor misses):
// a call that matches no entry of a key already seen is a recompile. Inductor, compiling an entry,
// computes its static_input_idxs (the graph's own, the params when
// inline_inbuilt_nn_modules, the guarded inputs), demotes the unaligned ones
// (remove_unaligned_input_idxs, torch/_inductor/utils.py), and skips
// cudagraphs for a graph that mutates a non-static input when
// cudagraph_support_input_mutation is off; at run time a misaligned
// non-static input is cloned (copy_misaligned_inputs).
//
// These are plain functions and one cache over a view of the arguments
// (DynamoArg), so that World stays action dispatch: it builds the view,
// asks, and emits the events. Nothing here touches memory or the manager.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/address.hpp"
#include "sim/core/cudagraph_config.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/function_def.hpp"
#include "sim/trees/cudagraph_node.hpp"
#include "sim/world/partitions.hpp"

namespace capsim {

// PyTorch's ALIGNMENT (torch/_inductor/utils.py).
inline constexpr Address kAlignment = 16;
inline bool is_aligned(Address ptr) {
  return ptr % kAlignment == 0;
}

// What Dynamo sees of one argument of a compiled call.
struct DynamoArg {
  Address data_ptr = 0;
  bool parameter = false;
  std::optional<bool> static_guard;  // mark_static_address(guard=...)
  std::uint64_t object = 0;          // the Python object's identity (id())
  // Inductor's complex_memory_overlap of the example input (model/tensor.hpp).
  bool complex_memory_overlap = false;
};

// The static inputs of a first compile: `idxs` sorted, and the unaligned ones
// remove_unaligned_input_idxs demoted (each an align_clone event).
struct StaticInputs {
  std::vector<std::uint32_t> idxs;
  std::vector<std::uint32_t> demoted;
};
StaticInputs static_input_idxs(const FunctionDef& def, std::span<const DynamoArg> args,
                               const CudagraphConfig& config);

// The mutated inputs that are not static: non-empty means cudagraphs are
// skipped at compile time (S1) when input mutation is not supported.
// `mutated` is mutated_input_idxs(def), which the caller keeps anyway.
std::vector<std::uint32_t> mutated_non_static(std::span<const std::uint32_t> mutated,
                                              std::span<const std::uint32_t> statics);

// How the calls of a compiled entry run. X(enumerator, the decision of the
// eager event a call of the kind emits, or kNoEagerEvent)
inline constexpr std::optional<Decision> kNoEagerEvent = std::nullopt;
#define CAPSIM_ENTRY_KINDS(X)                                                                     \
  X(kCudagraphed, kNoEagerEvent)                     /* one tree function: `fid` */               \
  X(kPartitioned, kNoEagerEvent)                     /* a tree function per partition */          \
  X(kSkipped, Decision::kEagerCompileTimeSkip)       /* a compile-time skip (S1 to S7) */         \
  X(kRaises, kNoEagerEvent)                          /* the skip is a RuntimeError (or_error) */  \
  X(kSilentSkip, Decision::kEagerSilentSkip)         /* dropped without a log (S4, partitions) */ \
  X(kNoPartitions, Decision::kEagerNoPartitions)     /* partitioned, nothing left to cudagraph */ \
  X(kCaptureSizeBypass, Decision::kEagerCaptureSize) /* its int key is not a capture size */      \
  X(kRerecordLimited, Decision::kEagerDynamicShapeLimit) /* past the 2.15 key limit */            \
  X(kNoCudagraphs, kNoEagerEvent)                        /* triton.cudagraphs off: Inductor only */
enum class EntryKind : std::uint8_t {
#define CAPSIM_ENUM_(e, decision) e,
  CAPSIM_ENTRY_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
// The decision of the eager event a call of the kind emits (none for a
// kind that emits none); its key is the event's `reason`.
std::optional<Decision> entry_eager_decision(EntryKind kind);

// One compiled entry: its FunctionId, or how it runs without one.
struct CompiledEntry {
  EntryKind kind = EntryKind::kCudagraphed;
  std::optional<FunctionId> fid;
  // kSkipped and kRaises: the skip, as it was logged; kSilentSkip: as it
  // would have been.
  std::string skip_id;
  std::string skip_reason;
  std::vector<std::uint32_t> skip_inputs;
  // kPartitioned: the pieces (owned by the World) and, per piece, its
  // FunctionId when it is cudagraphed.
  const std::vector<Segment>* pieces = nullptr;
  std::vector<std::optional<FunctionId>> piece_fids;

  // The tree functions the entry made.
  std::size_t tree_functions() const;
};

// Dynamo's cache, per function.
class CompileCache {
 public:
  struct Lookup {
    const CompiledEntry* hit = nullptr;  // null: compile a new entry
    bool recompile = false;              // an entry of this int key exists: guards failed
  };
  // The first entry of `def` whose int key and guards match `args`.
  Lookup find(const FunctionDef* def, const std::vector<std::int64_t>& int_key,
              std::span<const DynamoArg> args) const;
  // A new entry for this call, guarding the identities of its guarded inputs;
  // the caller fills in `compiled`.
  CompiledEntry& insert(const FunctionDef* def, const std::vector<std::int64_t>& int_key,
                        std::span<const DynamoArg> args);
  // Whether `def` has any entry (of any int key).
  bool has_entries(const FunctionDef* def) const { return entries_.contains(def); }
  // Forgets `def`'s entries (an optimizer's step dies with it); returns how
  // many had a FunctionId.
  std::size_t erase(const FunctionDef* def);
  void clear() { entries_.clear(); }

 private:
  struct Entry {
    std::vector<std::int64_t> int_key;
    std::vector<std::uint32_t> guarded_positions;
    std::vector<std::uint64_t> guarded_objects;
    CompiledEntry compiled;
  };
  // Entries are only appended: the reference `insert` returns stays valid
  // until the next insert or erase of the same function.
  std::map<const FunctionDef*, std::vector<Entry>> entries_;
};

}  // namespace capsim
