// Compiled autograd's Phase A (see collect.hpp): ordered_calls, each node's
// key bytes and size slots, the lifted hooks and tensors, and the shadow-graph trie of
// CompiledAutogradCache.
#include "sim/compiled_autograd/collect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

namespace capsim {

namespace {

// Builds one node's key bytes and size slots. The bytes are a readable,
// tagged text: stable, comparable, and easy to show in a failing test.
class KeyWriter {
 public:
  KeyWriter(CollectedBackward& out, std::map<TensorId, std::size_t>& input_index,
            std::uint32_t call, bool dynamic, const TensorStore& store)
      : out_(out), input_index_(input_index), call_(call), dynamic_(dynamic), store_(store) {}

  // Appended in place, without a format string: a key is built for every
  // node of every backward (a recorded trace's largest lines are its
  // autograd graphs), and formatting a temporary per tag was most of its cost.
  void tag(std::string_view name, std::string_view value) {
    key_.append(name).append(1, '=').append(value).append(1, ';');
  }
  void tag(std::string_view name, std::int64_t value) {
    const fmt::format_int digits(value);
    tag(name, std::string_view(digits.data(), digits.size()));
  }
  void size(std::int64_t value, bool force_dynamic = false) {
    out_.sizes.push_back({value, dynamic_ || force_dynamic, call_});
    key_ += "size;";
  }
  void sizes(const Dims& dims, bool force_dynamic = false) {
    tag("rank", static_cast<std::int64_t>(dims.size()));
    for (std::int64_t d : dims) size(d, force_dynamic);
  }
  // Two saved geometries (CopySlices, AsStridedBackward0): sizes, strides and
  // offset each, as size slots in that order (the capture reads them so).
  void geometry(const TensorGeometry& base, const TensorGeometry& view) {
    for (const TensorGeometry* g : {&base, &view}) {
      sizes(g->sizes);
      sizes(g->strides);
      size(g->storage_offset);
    }
  }
  // collect(TensorArg): identity, device, dtype, requires_grad; never sizes.
  Status tensor(TensorId id) {
    CAPSIM_TRY_ASSIGN(const Tensor t, store_.tensor(id));
    auto [it, fresh] = input_index_.emplace(id, out_.inputs.size());
    if (fresh) out_.inputs.push_back(id);
    const std::size_t index = it->second;
    tag("tensor", static_cast<std::int64_t>(index));
    options(t.meta);
    return {};
  }
  void options(const TensorMeta& m) {
    fmt::memory_buffer device;  // inline storage: no allocation per tensor
    fmt::format_to(std::back_inserter(device), "{}:{}",
                   m.device.type == DeviceType::kCuda ? "cuda" : "cpu", m.device.index);
    tag("device", std::string_view(device.data(), device.size()));
    tag("dtype", dtype_name(m.dtype));
    tag("requires_grad", m.requires_grad ? 1 : 0);
  }
  std::string take() { return std::move(key_); }

 private:
  CollectedBackward& out_;
  std::map<TensorId, std::size_t>& input_index_;  // dedup by identity, O(log n)
  std::uint32_t call_;
  bool dynamic_;
  const TensorStore& store_;
  std::string key_;
};

// Dependencies: in-edges from nodes reachable from the root.
std::vector<std::uint32_t> dependencies(const AutogradGraph& g, AutogradNodeId root) {
  std::vector<std::uint32_t> deps(g.num_nodes(), 0);
  std::vector<bool> seen(g.num_nodes(), false);
  std::vector<AutogradNodeId> stack{root};
  seen[root] = true;
  while (!stack.empty()) {
    const AutogradNodeId v = stack.back();
    stack.pop_back();
    for (const auto& edge : g.next_edges(v)) {
      if (!edge) continue;
      ++deps[edge->target];
      if (!seen[edge->target]) {
        seen[edge->target] = true;
        stack.push_back(edge->target);
      }
    }
  }
  return deps;
}

// The node's entries of the runtime `hooks` list, in the order PyTorch
// lifts them: CompiledNodeArgs::collect_hooks_from first (tensor pre hooks,
// pre hooks, post hooks), then the node's own compiled_args (its packed saved
// fields, a Python Function's backward, AccumulateGrad's post-accumulate-grad
// hooks). So a Function's post hook comes before its backward, and an
// AccumulateGrad's post hooks before its post-accumulate-grad hooks whatever
// the registration order (recorded on 2.8, 2.11 and 2.15:
// data/corpus/torch/*/launcher_hooks.jsonl).
void lift_hooks(AutogradNodeId v, const AutogradNode& node, std::vector<LiftedHook>& out) {
  auto each = [&](AutogradHookKind kind) {
    for (std::size_t h = 0; h < node.hooks.size(); ++h) {
      if (node.hooks[h] == kind) out.push_back({v, static_cast<std::uint32_t>(h), false});
    }
  };
  each(AutogradHookKind::kTensorPre);
  each(AutogradHookKind::kPre);
  each(AutogradHookKind::kPost);
  if (node.collected_fields) {
    for (std::size_t i = 0; i < node.collected_fields->size(); ++i) {
      if ((*node.collected_fields)[i].packed) {
        out.push_back({v, static_cast<std::uint32_t>(i), false, true});
      }
    }
  }
  // A Python Function's backward, and an AOT region's ctx (compiled
  // autograd lifts it too, though the inlined region never calls it).
  if (node.kind == AutogradNodeKind::kPyNode || node.kind == AutogradNodeKind::kAotBackward) {
    out.push_back({v, 0, true});
  }
  each(AutogradHookKind::kPostAccGrad);
}

}  // namespace

LiftedHookPositions::LiftedHookPositions(const std::vector<LiftedHook>& hooks) {
  for (std::size_t k = 0; k < hooks.size(); ++k) {
    const LiftedHook& h = hooks[k];
    const bool fresh =
        positions_.emplace(std::tuple{h.node, h.index, h.backward, h.unpack}, k).second;
    CAPSIM_CHECK(fresh, "a hook lifted twice");
  }
}

std::size_t LiftedHookPositions::at(AutogradNodeId v, std::uint32_t index, bool backward,
                                    bool unpack) const {
  const auto it = positions_.find(std::tuple{v, index, backward, unpack});
  CAPSIM_CHECK(it != positions_.end(), "capture and Phase A disagree on hooks");
  return it->second;
}

namespace {

// node_calls.lookup: NodeCall ids are dense, in the order nodes are first met.
std::uint32_t node_call_id(std::map<AutogradNodeId, std::uint32_t>& ids, AutogradNodeId n) {
  auto [it, fresh] = ids.emplace(n, static_cast<std::uint32_t>(ids.size()));
  (void)fresh;
  return it->second;
}

// The key's head: what the node is, its NodeCall id, and its hooks in order.
void key_identity_and_hooks(KeyWriter& key, const AutogradNode& node, std::uint32_t id) {
  key.tag("kind", autograd_node_kind_name(node.kind));
  key.tag("name", node.name);
  // A Python Function's class, not its name: a class defined anew each step
  // is a new node to the cache (pytorch/pytorch#155105).
  if (node.function_class) key.tag("function_class", *node.function_class);
  key.tag("id", id);
  key.tag("hooks", static_cast<std::int64_t>(node.hooks.size()));
  for (std::size_t h = 0; h < node.hooks.size(); ++h) {
    key.tag("hook", autograd_hook_kind_name(node.hooks[h]));
    if (node.hooks[h] == AutogradHookKind::kTensorPre) {
      key.tag("hook_input", h < node.hook_inputs.size() ? node.hook_inputs[h] : 0);
    }
  }
}

// compiled_args, per node kind. A CopySlices with a view_fn is rejected here,
// before any capture, as PyTorch does.
Status key_kind_specific_args(KeyWriter& key, const AutogradNode& node, const std::string& where) {
  switch (node.kind) {
    case AutogradNodeKind::kCopySlices:
      if (node.has_view_fn) {
        return make_unsupported(
            fmt::format("{}: view_fn not supported by compiled autograd", where));
      }
      key.tag("inner", node.inner_name);
      key.geometry(node.base, node.view);
      break;
    case AutogradNodeKind::kFunctional:
      if (node.name == "AsStridedBackward0") {  // self_geometry, size, stride, offset
        key.geometry(node.base, node.view);
      }
      break;
    case AutogradNodeKind::kCppNode:
      key.tag("cpp_fn", node.name);  // typeid(T): name and hash
      break;
    case AutogradNodeKind::kAotBackward: key.tag("subclass_outputs", node.subclass_outputs); break;
    default: break;
  }
  return {};
}

// The node's saved tensors, its leaf variable, and its saved SymInts.
Status key_saved_state(KeyWriter& key, const AutogradNode& node) {
  // PyNode and AOT backward symints are always DYNAMIC, whatever the options.
  const bool symints_dynamic =
      node.kind == AutogradNodeKind::kPyNode || node.kind == AutogradNodeKind::kAotBackward;
  for (TensorId t : node.saved_tensors) CAPSIM_TRY(key.tensor(t));
  if (node.variable) {
    CAPSIM_TRY(key.tensor(*node.variable));
    // AccumulateGrad collects the leaf's .grad too: None and a defined
    // grad are different specializations (zero_grad(set_to_none=False)).
    key.tag("variable_grad", node.variable_grad_defined ? "defined" : "none");
  }
  key.tag("saved_sizes", static_cast<std::int64_t>(node.saved_sizes.size()));
  for (std::int64_t s : node.saved_sizes) key.size(s, symints_dynamic);
  return {};
}

// collect(next_edges): validity, target id, input_nr, InputMetadata. Looking
// up a target here is what gives it its NodeCall id, so ids follow edge order.
Status key_next_edges(KeyWriter& key, const AutogradGraph& graph,
                      const std::vector<std::optional<NextEdge>>& next, const std::string& where,
                      std::map<AutogradNodeId, std::uint32_t>& ids) {
  for (const auto& edge : next) {
    if (!edge) {
      key.tag("edge", "invalid");
      continue;
    }
    const AutogradNode& target = graph.node(edge->target);
    const InputMetadata& meta = target.inputs[edge->input_nr];
    if (meta.meta.layout == Layout::kJagged) {
      return make_error(fmt::format("{}: edge to {}: NestedTensor support not implemented. ", where,
                                    describe_node(graph, edge->target)));
    }
    key.tag("edge", node_call_id(ids, edge->target));
    key.tag("input_nr", edge->input_nr);
    key.options(meta.meta);
    key.tag("layout", meta.meta.layout == Layout::kStrided ? "strided" : "jagged");
    key.tag("is_subclass", meta.meta.is_subclass ? 1 : 0);
    key.sizes(meta.meta.sizes);
  }
  return {};
}

// Schedule successors in next_edges order, LIFO: a target is pushed once every
// reachable edge into it has been seen, which keeps the order topological.
void schedule_ready_successors(const std::vector<std::optional<NextEdge>>& next,
                               const std::vector<std::uint32_t>& deps,
                               std::vector<std::uint32_t>& visited,
                               std::vector<AutogradNodeId>& worklist) {
  for (const auto& edge : next) {
    if (!edge) continue;
    if (++visited[edge->target] == deps[edge->target]) worklist.push_back(edge->target);
  }
}

}  // namespace

Result<CollectedBackward> collect_backward(const AutogradGraph& graph, AutogradNodeId root,
                                           const TensorStore& store,
                                           const CollectOptions& options) {
  if (root >= graph.num_nodes()) {
    return make_error(fmt::format("compiled autograd: root {} is not a node", root));
  }
  CAPSIM_TRY(graph.check_acyclic());
  CollectedBackward out;
  const std::vector<std::uint32_t> deps = dependencies(graph, root);
  std::vector<std::uint32_t> visited(graph.num_nodes(), 0);
  std::map<AutogradNodeId, std::uint32_t> ids;  // node_calls.lookup
  std::map<TensorId, std::size_t> input_index;
  std::vector<AutogradNodeId> worklist{root};
  while (!worklist.empty()) {
    const AutogradNodeId v = worklist.back();
    worklist.pop_back();
    const auto call_index = static_cast<std::uint32_t>(out.ordered_calls.size());
    out.ordered_calls.push_back({v, node_call_id(ids, v), true});
    const AutogradNode& node = graph.node(v);
    const std::string where = describe_node(graph, v);
    KeyWriter key(out, input_index, call_index, options.dynamic, store);
    key_identity_and_hooks(key, node, out.ordered_calls.back().id);
    lift_hooks(v, node, out.hooks);
    key.tag("needed", 1);
    CAPSIM_TRY(key_kind_specific_args(key, node, where));
    CAPSIM_TRY(key_saved_state(key, node));
    const auto next = graph.next_edges(v);
    CAPSIM_TRY(key_next_edges(key, graph, next, where, ids));
    out.keys.push_back(key.take());
    schedule_ready_successors(next, deps, visited, worklist);
  }
  return out;
}

// --- The shadow-graph trie -----------------------------------------------------

struct CompiledAutogradCache::TrieNode {
  std::map<std::string, std::unique_ptr<TrieNode>> children;
  // At the leaf: the sizes seen first, and which slots are DYNAMIC.
  bool has_leaf = false;
  std::uint64_t entry = 0;
  std::vector<std::int64_t> expected_sizes;
  std::vector<bool> dynamic;
};

CompiledAutogradCache::CompiledAutogradCache() : root_(std::make_unique<TrieNode>()) {}
CompiledAutogradCache::~CompiledAutogradCache() = default;

CacheDecision CompiledAutogradCache::lookup(const AutogradGraph& graph,
                                            const CollectedBackward& backward) {
  CacheDecision decision;
  decision.hit = true;
  TrieNode* node = root_.get();
  for (std::size_t i = 0; i < backward.keys.size(); ++i) {
    auto it = node->children.find(backward.keys[i]);
    if (it == node->children.end()) {
      if (decision.hit) {
        std::string previous;
        for (const auto& [k, child] : node->children) {
          if (!previous.empty()) previous += ", ";
          previous += std::to_string(k.size());
        }
        decision.hit = false;
        decision.miss_kind = Decision::kCaMissNewNode;
        decision.miss_node = graph.node(backward.ordered_calls[i].node).name;
        decision.miss_call = backward.ordered_calls[i].id;
        decision.reason = fmt::format(
            "Cache miss due to new autograd node: {} (NodeCall {}) with key size {}, previous key "
            "sizes=[{}]",
            decision.miss_node, decision.miss_call, backward.keys[i].size(), previous);
      }
      it = node->children.emplace(backward.keys[i], std::make_unique<TrieNode>()).first;
    }
    node = it->second.get();
  }
  if (!node->has_leaf) {
    node->has_leaf = true;
    node->entry = entries_++;
    for (const SizeInput& s : backward.sizes) {
      node->expected_sizes.push_back(s.value);
      node->dynamic.push_back(s.dynamic);
    }
  } else {
    // check_dynamic_sizes: a STATIC slot that changed becomes DYNAMIC for good.
    CAPSIM_CHECK(node->expected_sizes.size() == backward.sizes.size(),
                 "equal keys with different size counts");
    std::vector<std::size_t> changed;
    for (std::size_t k = 0; k < backward.sizes.size(); ++k) {
      if (node->dynamic[k] || node->expected_sizes[k] == backward.sizes[k].value) continue;
      node->dynamic[k] = true;
      changed.push_back(k);
      if (decision.hit) {
        const NodeCall& call = backward.ordered_calls[backward.sizes[k].call];
        decision.hit = false;
        decision.miss_kind = Decision::kCaMissChangedShapes;
        decision.miss_node = graph.node(call.node).name;
        decision.miss_call = call.id;
      }
    }
    if (!changed.empty()) decision.reason = changed_shapes_text(node->dynamic, changed);
  }
  if (decision.hit) {
    ++hits_;
  } else {
    ++captures_;
  }
  decision.entry = node->entry;
  decision.dynamic = node->dynamic;
  return decision;
}

std::string changed_shapes_text(const std::vector<bool>& dynamic,
                                const std::vector<std::size_t>& changed) {
  // PyTorch 2.7 on (#146386, CompiledAutogradCache's log_dynamic_shapes_miss):
  // each newly dynamic slot by its index among the dynamic ones, which is
  // its `sizes[j]` in the graph.
  std::string text =
      fmt::format("Cache miss due to {} changed tensor shapes (total of {}): ", changed.size(),
                  std::count(dynamic.begin(), dynamic.end(), true));
  for (std::size_t i = 0; i < changed.size(); ++i) {
    const auto j = std::count(dynamic.begin(),
                              dynamic.begin() + static_cast<std::ptrdiff_t>(changed[i]), true);
    text += fmt::format("{}sizes[{}]", i == 0 ? "" : ", ", j);
  }
  return text;
}

void mark_dynamic(CollectedBackward& backward, const std::vector<bool>& mask) {
  CAPSIM_CHECK(mask.size() == backward.sizes.size(), "a dynamic mask of another backward");
  for (std::size_t k = 0; k < mask.size(); ++k) backward.sizes[k].dynamic = mask[k];
}

}  // namespace capsim
