// The one table of event fields: every key an event may carry, its type,
// the values it may take and what it means, and per event kind which keys
// that kind carries (docs/trace-format.md §6).
//
// Emitters name a field by its `FieldKey` and give it a typed value
// (sim/core/field_value.hpp); `check_event_fields` holds every event to its
// kind's row when it is emitted, so the trace writer, the printers and every
// reader can trust the shape of an event without parsing it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "sim/core/event_kinds.hpp"

namespace capsim {

// X(enumerator, name, json form)
#define CAPSIM_FIELD_TYPES(X)                                               \
  X(kInt, "int", "integer")                                                 \
  X(kIntOrNone, "int_or_none", "integer, or null for Python's None")        \
  X(kBool, "bool", "boolean")                                               \
  X(kText, "text", "string")                                                \
  X(kIntList, "int_list", "array of integers")                              \
  X(kAddress, "address", "hex string \"0x...\", a device address in bytes") \
  X(kAddressList, "address_list", "array of hex address strings")           \
  X(kTextList, "text_list", "array of strings")                             \
  X(kIntLists, "int_lists", "array of integer arrays")                      \
  X(kDigest, "digest", "16 lower-case hex digits: FNV-1a 64 over float32 bytes")
enum class FieldType : std::uint8_t {
#define CAPSIM_ENUM_(e, name, json) e,
  CAPSIM_FIELD_TYPES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view field_type_name(FieldType type);

// The values an integer field, or each integer of a list field, may take. A
// value outside is refused where it is read, and where it is written, with
// the field named: consumers size work by these numbers (a tree drawing's
// path by `depth`, a Chrome export's slices by `steps`), so no claim of a
// trace may reach them unbounded (docs/trace-format.md §8).
struct IntRange {
  std::int64_t min;
  std::int64_t max;
  bool contains(std::int64_t v) const { return v >= min && v <= max; }
};
inline constexpr IntRange kAnyInt{INT64_MIN, INT64_MAX};  // symint values: sizes nothing
inline constexpr IntRange kIdRange{0, (std::int64_t{1} << 31) - 1};
inline constexpr IntRange kNodeIdRange{-((std::int64_t{1} << 31) - 1), (std::int64_t{1} << 31) - 1};
inline constexpr IntRange kDepthRange{0, std::int64_t{1} << 16};  // a tree holds 2^16 nodes
inline constexpr IntRange kIndexRange{0, std::int64_t{1} << 20};
inline constexpr IntRange kStepsRange{0, std::int64_t{1} << 20};  // model/step_program.hpp
inline constexpr IntRange kCountRange{0, std::int64_t{1} << 32};
inline constexpr IntRange kBytesRange{0, std::int64_t{1} << 50};

// X(enumerator, key, type, range, meaning). The enumerator is the key, but
// for `static_` (a C++ keyword) and the `x_` extensions: a producer's own
// observation, such as the CUDA driver's buffer ids, which a model cannot
// predict, so readers skip it and replays never compare it.
#define CAPSIM_EVENT_FIELDS(X)                                                                     \
  X(function, "function", kText, kAnyInt, "the compiled function's name")                          \
  X(fid, "fid", kInt, kIdRange, "FunctionId: the tree manager's index of the compiled function")   \
  X(int_key, "int_key", kIntList, kAnyInt, "the symint inputs the function was compiled for")      \
  X(static_input_idxs, "static_input_idxs", kIntList, kIndexRange,                                 \
    "compile-time static inputs after alignment filtering")                                        \
  X(recompile, "recompile", kBool, kAnyInt, "a guard failed and Dynamo recompiled")                \
  X(step_params, "step_params", kIntList, kIndexRange,                                             \
    "a compiled optimizer step over some of its params: which (the others had no grad)")           \
  X(partition, "partition", kInt, kIndexRange,                                                     \
    "the graph partition the tree function is, among its graph's cudagraphed ones")                \
  X(reason, "reason", kText, kAnyInt, "an enumerated reason (per kind, see the kind's table)")     \
  X(node, "node", kInt, kNodeIdRange, "a tree node id (warmup nodes are negative)")                \
  X(depth, "depth", kInt, kDepthRange, "the node's depth in the tree (0 for a root)")              \
  X(graph, "graph", kInt, kIdRange, "a recorded CUDAGraphNode's id (graph_counter order)")         \
  X(parent, "parent", kIntOrNone, kIdRange, "the parent graph id, or null for a root")             \
  X(static_, "static", kIntList, kIndexRange, "static_input_idxs of the recording")                \
  X(managed, "managed", kIntList, kIndexRange,                                                     \
    "cudagraph_managed_idxs: inputs that are outputs of the path")                                 \
  X(non_static, "non_static", kIntList, kIndexRange,                                               \
    "non_static_input_idxs: inputs copied in at each replay")                                      \
  X(copied_managed, "copied_managed", kIntList, kIndexRange,                                       \
    "managed inputs demoted to copies (2.15's copy_cudagraph_managed_idxs); absent when none")     \
  X(steps, "steps", kInt, kStepsRange, "steps (kernels and copies) in the recorded graph")         \
  X(static_ptrs, "static_ptrs", kAddressList, kAnyInt,                                             \
    "data pointers at the static positions, in index order")                                       \
  X(input, "input", kInt, kIndexRange, "an input index")                                           \
  X(inputs, "inputs", kIntList, kIndexRange,                                                       \
    "input indices (the mutated inputs that block cudagraphs)")                                    \
  X(old_ptr, "old_ptr", kAddress, kAnyInt, "the pointer the recording baked in")                   \
  X(new_ptr, "new_ptr", kAddress, kAnyInt, "the pointer the call passed")                          \
  X(api, "api", kText, kAnyInt, "\"plain\" for torch.cuda.graph / make_graphed_callables")         \
  X(copies, "copies", kInt, kIndexRange, "tensors copied into placeholders")                       \
  X(bytes, "bytes", kInt, kBytesRange, "bytes those copies moved")                                 \
  X(count, "count", kInt, kCountRange, "the checkpoint counter (debug_checkpointing_counter)")     \
  X(live, "live", kInt, kCountRange, "storages kept live by the checkpoint")                       \
  X(pool_blocks_before, "pool_blocks_before", kInt, kCountRange,                                   \
    "live blocks of the pool before the restore")                                                  \
  X(pool_blocks_after, "pool_blocks_after", kInt, kCountRange,                                     \
    "live blocks of the pool after the restore")                                                   \
  X(poisoned, "poisoned", kInt, kCountRange, "tensors whose storage was marked deallocated")       \
  X(cloned, "cloned", kInt, kCountRange,                                                           \
    "storages of live user-visible outputs cloned out of the pool")                                \
  X(freed, "freed", kInt, kCountRange, "storages freed")                                           \
  X(name, "name", kText, kAnyInt, "a program name (tensor, output or optimizer)")                  \
  X(ptr, "ptr", kAddress, kAnyInt, "the output's data pointer")                                    \
  X(numel, "numel", kInt, kBytesRange, "elements read")                                            \
  X(digest, "digest", kDigest, kAnyInt,                                                            \
    "FNV-1a 64 of the float32 bytes read (ca_run: every leaf's .grad; device: every range the "    \
    "graph writes, after the replay)")                                                             \
  X(values, "values", kText, kAnyInt, "a preview of the first values, for people")                 \
  X(demoted, "demoted", kBool, kAnyInt, "the input left the static set")                           \
  X(id, "id", kText, kAnyInt,                                                                      \
    "capsim's id of the PyTorch message (E1..E9, S1..S7, W1..W3, Z1, A1)")                         \
  X(exception, "exception", kText, kAnyInt, "the Python exception type")                           \
  X(message, "message", kText, kAnyInt, "PyTorch's exact text")                                    \
  X(where, "where", kText, kAnyInt,                                                                \
    "which pool check raised, which tree path raised E1, or E8's phase")                           \
  X(what, "what", kText, kAnyInt, "created, traced or dropped")                                    \
  X(kind, "kind", kText, kAnyInt, "the optimizer kind: sgd, adam or adamw")                        \
  X(params, "params", kInt, kCountRange, "params the optimizer holds")                             \
  X(static_params, "static_params", kInt, kCountRange,                                             \
    "params marked static when the step was traced")                                               \
  X(static_state, "static_state", kInt, kCountRange, "state tensors marked static")                \
  X(static_grads, "static_grads", kInt, kCountRange,                                               \
    "grads that were static (mark_static_address)")                                                \
  X(params_alive, "params_alive", kInt, kCountRange, "param storages still alive after the drop")  \
  X(state_alive, "state_alive", kInt, kCountRange,                                                 \
    "optimizer state storages still alive after the drop")                                         \
  X(set_to_none, "set_to_none", kBool, kAnyInt, "zero_grad's argument")                            \
  X(grads, "grads", kInt, kCountRange, "grads that zero_grad changed")                             \
  X(graphs, "graphs", kInt, kCountRange, "recorded graphs the tree manager held")                  \
  X(backward, "backward", kInt, kIdRange,                                                          \
    "compiled autograd: the backward's index in the scenario run, from 0")                         \
  X(node_calls, "node_calls", kInt, kCountRange, "NodeCalls in the backward's ordered_calls")      \
  X(autograd_node, "autograd_node", kText, kAnyInt,                                                \
    "an autograd node's name (MulBackward0, AccumulateGrad, ...)")                                 \
  X(call, "call", kInt, kIdRange, "a NodeCall id: the node's position in ordered_calls")           \
  X(metadata, "metadata", kText, kAnyInt,                                                          \
    "the proxy metadata read: sizes, strides, dtype, device or use_count")                         \
  X(mode, "mode", kText, kAnyInt,                                                                  \
    "the capture mode: functional (after PR 144707) or legacy (before)")                           \
  X(graph_nodes, "graph_nodes", kInt, kCountRange, "nodes of the captured FX graph")               \
  X(graph_digest, "graph_digest", kDigest, kAnyInt,                                                \
    "FNV-1a 64 of the captured FX graph's text form")                                              \
  X(leaves, "leaves", kInt, kCountRange, "leaves whose .grad the backward wrote")                  \
  X(baked, "baked", kInt, kCountRange, "pointer arguments baked into the replayed graph")          \
  X(baked_digest, "baked_digest", kDigest, kAnyInt,                                                \
    "FNV-1a 64 of each baked pointer's (step, argument, address, bytes) as 64-bit words")          \
  X(captured, "captured", kBool, kAnyInt, "compiled autograd captured a new graph (a cache miss)") \
  X(targets, "targets", kTextList, kAnyInt,                                                        \
    "the captured graph's call targets in graph order (compared in canonical names, "              \
    "docs/fidelity.md)")                                                                           \
  X(uses, "uses", kIntLists, kIndexRange,                                                          \
    "per call of `targets`, the calls its arguments refer to (indices into `targets`; compared "   \
    "as canonical dataflow, docs/fidelity.md)")                                                    \
  X(fx_nodes, "fx_nodes", kTextList, kAnyInt,                                                      \
    "the captured graph node for node, one line each in the release's own form (compared line "    \
    "by line, docs/trace-format.md §6.3)")                                                         \
  X(compiled, "compiled", kBool, kAnyInt, "the backward ran through compiled autograd")            \
  X(x_buffer_ids, "x_buffer_ids", kIntList, kAnyInt,                                               \
    "extension: the CUDA driver's ids of the buffers a replay touched")

enum class FieldKey : std::uint8_t {
#define CAPSIM_ENUM_(e, key, type, range, meaning) e,
  CAPSIM_EVENT_FIELDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
// Emitters and readers write `F::graph`, as PyTorch code writes a field.
using F = FieldKey;

struct FieldSpec {
  FieldKey field;
  std::string_view key;
  FieldType type;
  IntRange range;            // integer types only
  std::string_view meaning;  // one line, for docs/trace-format.md
  // An "x_" extension: written as its text, skipped by readers and compares.
  bool extension() const { return key.starts_with("x_"); }
};

// Every field any event may carry, in the table's order.
std::span<const FieldSpec> event_field_specs();
const FieldSpec& field_spec(FieldKey field);
std::string_view field_key_name(FieldKey field);
std::optional<FieldKey> field_key_from_name(std::string_view key);

struct EventFieldUse {
  FieldKey field;
  bool required;  // every event of the kind carries it
};
// The fields an event kind may carry, in the order the simulator writes them.
std::span<const EventFieldUse> event_fields_of(EventKind kind);
const EventFieldUse* find_field_use(EventKind kind, FieldKey field);

// A set of FieldKeys, one bit each (FieldKey is a uint8_t).
class FieldMask {
 public:
  constexpr void set(FieldKey f) { words_[index(f) / 64] |= bit(f); }
  constexpr bool test(FieldKey f) const { return (words_[index(f) / 64] & bit(f)) != 0; }
  constexpr bool contains(const FieldMask& other) const {
    for (std::size_t w = 0; w < kWords; ++w) {
      if ((other.words_[w] & ~words_[w]) != 0) return false;
    }
    return true;
  }

 private:
  static constexpr std::size_t kWords = 4;
  static constexpr std::size_t index(FieldKey f) { return static_cast<std::size_t>(f); }
  static constexpr std::uint64_t bit(FieldKey f) { return std::uint64_t{1} << (index(f) % 64); }
  std::uint64_t words_[kWords] = {};
};
// event_fields_of(kind) as masks: what the kind may carry and must carry.
struct EventFieldMasks {
  FieldMask allowed;
  FieldMask required;
};
const EventFieldMasks& event_field_masks(EventKind kind);

}  // namespace capsim
