// Compiled autograd, Phase A: walk the graph, collect inputs, build the key.
//
// What `_compiled_autograd_impl` does on every backward, with real tensors,
// before deciding whether to capture (docs/compiled-autograd.md, "Phase A"):
//  - `ordered_calls`: a LIFO worklist from the root; a node is pushed once
//    every edge into it from the reachable graph has been seen (a private
//    visit count against its dependency count), so the order is a
//    deterministic topological order. NodeCall ids are dense, in lookup order:
//    a node gets its id when it is first met as the target of an edge;
//  - per node, the specialization key bytes: its kind and name, id, hooks,
//    node-specific `compiled_args`, and for each next edge its validity, the
//    target's id, `input_nr` and the target input's InputMetadata (options,
//    is_subclass, rank: never the dimension values);
//  - the size inputs: every dimension value (InputMetadata shapes, saved
//    sizes, CopySlices geometries) as a slot, STATIC unless `dynamic` is set or
//    the node forces DYNAMIC (PyNode and AOT symints);
//  - the lifted tensors, deduplicated by identity, whose device, dtype and
//    requires_grad go into the key (their sizes do not).
// Structural rejects happen here, before any capture: a CopySlices with a
// view_fn, and nested InputMetadata. A non-traceable CppNode is accepted (after
// PR 144707; the legacy capture rejects it in Phase B).
//
// CompiledAutogradCache is the shadow-graph trie walked with those keys, with
// `check_dynamic_sizes` at its leaves: the first change of a STATIC slot
// promotes it to DYNAMIC for good and costs one recapture.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "model/autograd_graph.hpp"
#include "model/tensor_store.hpp"
#include "sim/core/decisions.hpp"

namespace capsim {

struct NodeCall {
  AutogradNodeId node = 0;
  std::uint32_t id = 0;  // dense, in lookup order
  bool needed = true;
};

struct SizeInput {
  std::int64_t value = 0;
  bool dynamic = false;    // DYNAMIC from the start (dynamic=true, or forced by the node)
  std::uint32_t call = 0;  // index into ordered_calls of the node that owns it
};

// One entry of the `hooks` list a captured graph receives when it runs:
// PyTorch lifts every hook and every Python backward into it. Per call, in
// ordered_calls order: tensor pre-hooks, pre-hooks, post-hooks (each kind in
// registration order), then the unpack hooks of the node's packed saved
// tensors (in field order), a PyNode's backward (an AOT region's ctx) and
// AccumulateGrad's post-accumulate-grad hooks. A capture calls them in graph
// order, which differs (a post hook runs after the backward it was lifted
// before), so it finds each one's position through LiftedHookPositions.
struct LiftedHook {
  AutogradNodeId node = 0;
  std::uint32_t index = 0;  // into node.hooks (into collected_fields for an unpack hook)
  bool backward = false;    // a PyNode's backward (call_backward), not a hook
  bool unpack = false;      // a packed saved tensor's unpack hook (saved_tensors_hooks)
};

// Where each lifted hook sits in the `hooks` list.
class LiftedHookPositions {
 public:
  explicit LiftedHookPositions(const std::vector<LiftedHook>& hooks);
  // The position of node v's hook `index` (its backward: index 0; its unpack
  // hook of collected field `index`). Phase A must have lifted it: a capture
  // that asks for another is a broken contract, not bad input.
  std::size_t at(AutogradNodeId v, std::uint32_t index, bool backward, bool unpack) const;

 private:
  std::map<std::tuple<AutogradNodeId, std::uint32_t, bool, bool>, std::size_t> positions_;
};

struct CollectedBackward {
  std::vector<NodeCall> ordered_calls;
  std::vector<std::string> keys;  // per call, in ordered_calls order
  std::vector<SizeInput> sizes;   // in collection order
  std::vector<TensorId> inputs;   // lifted tensors, deduplicated, first use first
  std::vector<LiftedHook> hooks;  // the runtime `hooks` list, in capture order
};

struct CollectOptions {
  bool dynamic = false;  // compiled_autograd._enable(..., dynamic=True)
};

// Errors are PyTorch's texts after the node that caused them, e.g.
// "node 4 (CopySlices): view_fn not supported by compiled autograd".
Result<CollectedBackward> collect_backward(const AutogradGraph& graph, AutogradNodeId root,
                                           const TensorStore& store,
                                           const CollectOptions& options = {});

struct CacheDecision {
  bool hit = false;
  std::string reason;  // PyTorch's verbose-log text for a miss; empty on a hit
  // A miss as data, for traces: kCaMissNewNode (a key the trie lacks) or
  // kCaMissChangedShapes (a STATIC size slot changed and became DYNAMIC),
  // and the node call the verbose log names. Empty and 0 on a hit.
  std::optional<Decision> miss_kind;
  std::string miss_node;
  std::uint32_t miss_call = 0;
  // The entry (trie leaf) that serves this backward, and its DYNAMIC mask
  // after this lookup: a capture on a miss must lift exactly those slots as
  // sizes[j] (see mark_dynamic), and a hit's graph reads exactly those.
  std::uint64_t entry = 0;
  std::vector<bool> dynamic;
};

// The miss text of a backward whose STATIC slots `changed` (positions among
// all slots) became DYNAMIC, `dynamic` being the mask after: "Cache miss due
// to 2 changed tensor shapes (total of 5): sizes[0], sizes[3]" (PyTorch 2.7 on).
std::string changed_shapes_text(const std::vector<bool>& dynamic,
                                const std::vector<std::size_t>& changed);

// Sets each size slot's `dynamic` from a cache decision's mask.
void mark_dynamic(CollectedBackward& backward, const std::vector<bool>& mask);

// The shadow-graph trie. `lookup` walks it with a backward's keys and checks
// its sizes; a miss means a capture (counted in `captures`).
class CompiledAutogradCache {
 public:
  CompiledAutogradCache();
  ~CompiledAutogradCache();
  CompiledAutogradCache(const CompiledAutogradCache&) = delete;
  CompiledAutogradCache& operator=(const CompiledAutogradCache&) = delete;

  CacheDecision lookup(const AutogradGraph& graph, const CollectedBackward& backward);
  std::uint64_t captures() const { return captures_; }
  std::uint64_t hits() const { return hits_; }

 private:
  struct TrieNode;
  std::unique_ptr<TrieNode> root_;
  std::uint64_t captures_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t entries_ = 0;
};

}  // namespace capsim
