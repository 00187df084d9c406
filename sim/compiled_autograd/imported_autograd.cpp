// ImportedAutograd (see imported_autograd.hpp): a recorded walk checked against its limits and
// rebuilt as an AutogradGraph over memoryless tensors, and compiled_backward over it.
#include "sim/compiled_autograd/imported_autograd.hpp"

#include <fmt/format.h>

#include "sim/autograd/autograd_engine.hpp"
#include "sim/compiled_autograd/fx_target_names.hpp"
#include "sim/compiled_autograd/runner.hpp"

namespace capsim {

struct ImportedAutograd::Built {
  OwnedAutogradDevice device;
  AutogradGraph graph;
  AutogradNodeId root = 0;  // the GraphRoot
};

ImportedAutograd::ImportedAutograd(std::optional<CaGraphForm> form) : form_(form) {}
ImportedAutograd::~ImportedAutograd() = default;

namespace {

constexpr Device kCpu{DeviceType::kCpu, 0};

Result<InputMetadata> input_metadata(const ImportedInput& in) {
  CAPSIM_TRY_ASSIGN(TensorMeta meta, contiguous_meta(in.sizes, in.dtype));
  meta.device = kCpu;
  meta.is_subclass = in.subclass;
  return InputMetadata{meta};
}

}  // namespace

namespace {

Status check_limits(const DefineAutogradGraph& walk) {
  if (walk.nodes.empty()) return make_error("an autograd graph needs at least its root node");
  if (walk.nodes.size() > kMaxRecordedNodes) {
    return make_error(
        fmt::format("{} nodes: more than the limit of {}", walk.nodes.size(), kMaxRecordedNodes));
  }
  if (walk.tensors.size() > kMaxRecordedTensors) {
    return make_error(fmt::format("{} tensors: more than the limit of {}", walk.tensors.size(),
                                  kMaxRecordedTensors));
  }
  if (walk.root >= walk.nodes.size()) {
    return make_error(
        fmt::format("root {}: no such node ({} nodes)", walk.root, walk.nodes.size()));
  }
  return {};
}

// The walk's tensors by name, and whether each one's .grad was defined.
struct NamedTensors {
  std::map<std::string, TensorId, std::less<>> ids;
  std::map<std::string, bool, std::less<>> grad_defined;

  Result<TensorId> find(const std::string& name, std::size_t node) const {
    const auto it = ids.find(name);
    if (it == ids.end()) {
      return make_error(
          fmt::format("node {}: tensor '{}' is not in the graph's tensors", node, name));
    }
    return it->second;
  }
};

Result<NamedTensors> add_tensors(const DefineAutogradGraph& walk, TensorStore& store) {
  NamedTensors named;
  for (const ImportedTensor& t : walk.tensors) {
    // Metadata only, over no memory: a capture reads a lifted tensor's
    // options, never its values, so nothing is allocated however many
    // graphs a trace defines.
    CAPSIM_TRY_ASSIGN(TensorMeta meta, contiguous_meta(t.sizes, t.dtype));
    meta.requires_grad = t.requires_grad;
    meta.device = kCpu;
    meta.is_subclass = t.subclass;
    CAPSIM_TRY_ASSIGN(const Tensor tensor, store.from_address(0, meta, kDefaultPool));
    named.grad_defined[t.name] = t.grad_defined;
    if (!named.ids.emplace(t.name, tensor.id).second) {
      return make_error(fmt::format("tensor '{}' is listed twice", t.name));
    }
  }
  return named;
}

// A node's saved_values as CollectedFields. Their tensors must be the node's
// `saved` and their sizes its `saved_sizes`, in order: Phase A lifts and keys
// those, and the release form reads the fields.
Result<std::vector<CollectedField>> collected_fields(const ImportedNode& r, std::size_t i,
                                                     const NamedTensors& named) {
  std::vector<CollectedField> out;
  std::vector<std::string> tensors;
  std::vector<std::int64_t> sizes;
  for (const ImportedField& f : *r.saved_values) {
    CollectedField c;
    c.kind = f.kind;
    c.packed = f.packed;
    c.sizes = f.sizes;
    c.list_lengths = f.list_lengths;
    c.text = f.text;
    for (const auto& name : f.tensors) {
      if (!name) {
        c.tensors.emplace_back();
        continue;
      }
      CAPSIM_TRY_ASSIGN(const TensorId id, named.find(*name, i));
      c.tensors.emplace_back(id);
      if (!f.packed) tensors.push_back(*name);
    }
    sizes.insert(sizes.end(), f.sizes.begin(), f.sizes.end());
    out.push_back(std::move(c));
  }
  if (tensors != r.saved) {
    return make_error(
        fmt::format("node {} ({}): saved_values names other tensors than saved", i, r.name));
  }
  if (sizes != r.saved_sizes) {
    return make_error(
        fmt::format("node {} ({}): saved_values holds other sizes than saved_sizes", i, r.name));
  }
  return out;
}

// Node `i` of the walk, its tensors resolved by name.
Result<AutogradNode> recorded_node(const ImportedNode& r, std::size_t i,
                                   const NamedTensors& named) {
  AutogradNode node;
  node.kind = r.kind;
  node.name = r.name;
  for (const ImportedInput& in : r.inputs) {
    CAPSIM_TRY_ASSIGN(InputMetadata m, input_metadata(in));
    node.inputs.push_back(std::move(m));
  }
  node.num_outputs = static_cast<std::uint32_t>(r.next.size());
  for (const std::string& s : r.saved) {
    CAPSIM_TRY_ASSIGN(const TensorId id, named.find(s, i));
    node.saved_tensors.push_back(id);
  }
  node.saved_sizes = r.saved_sizes;
  node.input_ranges = r.input_ranges;
  node.saved_scalars.assign(r.saved_scalars.begin(), r.saved_scalars.end());
  node.hooks = r.hooks;
  node.inner_name = r.inner;
  node.function_class = r.function;
  if (r.aot_backward) {
    if (r.aot_backward->symints != r.saved_sizes.size()) {
      return make_error(fmt::format("node {} ({}): aot_backward has {} symints, saved_sizes {}", i,
                                    r.name, r.aot_backward->symints, r.saved_sizes.size()));
    }
    node.aot_body = *r.aot_backward;
  }
  if (r.base) {
    node.base = *r.base;
    node.view = *r.view;
  }
  if (r.saved_values) {
    CAPSIM_TRY_ASSIGN(node.collected_fields, collected_fields(r, i, named));
  }
  if (r.kind == AutogradNodeKind::kCopySlices && r.inner.empty()) {
    return make_error(fmt::format("node {} (CopySlices): 'inner' names the wrapped node", i));
  }
  if (r.kind == AutogradNodeKind::kAccumulateGrad) {
    if (r.variable.empty()) {
      return make_error(fmt::format("node {} (AccumulateGrad): 'variable' names the leaf", i));
    }
    CAPSIM_TRY_ASSIGN(node.variable, named.find(r.variable, i));
    node.variable_grad_defined = named.grad_defined.at(r.variable);
  } else if (!r.variable.empty()) {
    return make_error(fmt::format("node {} ({}): only AccumulateGrad has a 'variable'", i, r.name));
  }
  return node;
}

Status add_edges(const DefineAutogradGraph& walk, AutogradGraph& graph) {
  for (std::size_t i = 0; i < walk.nodes.size(); ++i) {
    const auto& next = walk.nodes[i].next;
    for (std::size_t out = 0; out < next.size(); ++out) {
      if (!next[out]) continue;
      if (next[out]->target >= walk.nodes.size()) {
        return make_error(fmt::format("node {} output {}: edge into node {}, which does not exist",
                                      i, out, next[out]->target));
      }
      CAPSIM_TRY(graph.add_edge(static_cast<AutogradNodeId>(i), static_cast<std::uint32_t>(out),
                                next[out]->target, next[out]->input_nr));
    }
  }
  return {};
}

}  // namespace

Status ImportedAutograd::define(const DefineAutogradGraph& walk) {
  if (graphs_.count(walk.name) != 0) {
    return make_error(fmt::format("autograd graph '{}' is defined twice", walk.name));
  }
  CAPSIM_TRY(check_limits(walk));
  auto built = std::make_unique<Built>();
  CAPSIM_TRY_ASSIGN(const NamedTensors named, add_tensors(walk, built->device.store));
  for (std::size_t i = 0; i < walk.nodes.size(); ++i) {
    CAPSIM_TRY_ASSIGN(AutogradNode node, recorded_node(walk.nodes[i], i, named));
    CAPSIM_TRY_ASSIGN(const AutogradNodeId id, built->graph.add_node(std::move(node)));
    CAPSIM_CHECK(id == i);
  }
  CAPSIM_TRY(add_edges(walk, built->graph));
  // The GraphRoot: one output, into input 0 of the loss's grad_fn.
  AutogradNode root;
  root.kind = AutogradNodeKind::kGraphRoot;
  root.name = "GraphRoot";
  root.num_outputs = 1;
  CAPSIM_TRY_ASSIGN(built->root, built->graph.add_node(std::move(root)));
  CAPSIM_TRY(built->graph.add_edge(built->root, 0, walk.root, 0));
  CAPSIM_TRY(built->graph.check_acyclic());
  graphs_.emplace(walk.name, std::move(built));
  return {};
}

Result<std::vector<Event>> ImportedAutograd::compiled_backward(
    const CompiledBackward& call, const std::function<void(const BackwardView&)>& observer) {
  const auto it = graphs_.find(call.graph);
  if (it == graphs_.end()) {
    return make_error(
        fmt::format("autograd graph '{}': no autograd_graph action defined it", call.graph));
  }
  const Built& b = *it->second;
  CaptureRunLog log;
  log.backwards = backwards_;
  CAPSIM_TRY_ASSIGN(BackwardCapture capture,
                    capture_one_backward(b.graph, b.root, b.device.store, cache_,
                                         CaptureMode::kFunctional, call.dynamic, log));
  backwards_ = log.backwards;
  if (observer) {
    observer({capture.backward, CaptureMode::kFunctional, &b.graph, &b.device.store,
              capture.captured ? &*capture.captured : nullptr});
  }
  std::vector<Event> events = std::move(log.events);
  std::vector<EventField> fields{{F::backward, capture.backward},
                                 {F::captured, capture.captured.has_value()}};
  if (capture.captured) {
    const CanonicalCalls calls = canonical_calls(*capture.captured);
    fields.push_back({F::targets, calls.targets});
    fields.push_back({F::uses, int_lists(calls.uses)});
    if (form_) {
      CAPSIM_TRY_ASSIGN(const FxGraph release,
                        capture_release_form(b.graph, capture.collected, *form_));
      fields.push_back({F::fx_nodes, fx_node_lines(release)});
    }
  }
  check_event_shape(EventKind::kCaGraph, fields);
  events.push_back({EventKind::kCaGraph, 0, std::move(fields)});
  return events;
}

}  // namespace capsim
