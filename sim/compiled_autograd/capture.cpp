// Compiled autograd's Phase B (see capture.hpp): the Capturer, which runs
// each NodeCall with its hooks and validate_outputs through one
// CaptureContext (capture_context.hpp; each node kind's calls are
// capture_nodes.cpp), and end_capture.
#include "sim/compiled_autograd/capture.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "sim/compiled_autograd/capture_context.hpp"
#include "sim/compiled_autograd/end_capture_order.hpp"

namespace capsim {

// In capture_detail, beside the context and the node kinds, so that no name
// of theirs leaks into a unity build's other files.
namespace capture_detail {
namespace {

// The tensor pre-hooks of `node`, each on the grad in its input slot, then
// its pre-hooks on all its input grads. Hooks are proxied in both modes
// (call_hook); their maybe_clone reads a fake's metadata without recording
// anything (I-3), so none is read here.
void call_pre_hooks(CaptureContext& c, AutogradNodeId v, const AutogradNode& node, Slots& inputs) {
  for (std::size_t h = 0; h < node.hooks.size(); ++h) {
    if (node.hooks[h] != AutogradHookKind::kTensorPre) continue;
    const FxNodeId hook = c.next_hook(v, h, false);
    const std::size_t slot = h < node.hook_inputs.size() ? node.hook_inputs[h] : 0;
    if (slot < inputs.size() && inputs[slot]) {
      inputs[slot]->proxy = c.fx.call("call_hook", ref(hook), ref(inputs[slot]->proxy),
                                      FxArg::string("tensor_pre_hook"));
    }
  }
  for (std::size_t h = 0; h < node.hooks.size(); ++h) {
    if (node.hooks[h] != AutogradHookKind::kPre) continue;
    const FxNodeId hooked = c.fx.call("call_hook", ref(c.next_hook(v, h, false)),
                                      grads_list(inputs), FxArg::string("pre_hook"));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]) inputs[i]->proxy = c.fx.getitem(hooked, static_cast<std::int64_t>(i));
    }
  }
}

// The post-hooks of `node` on its output grads, and its post-accumulate-grad
// hooks on its leaf.
void call_post_hooks(CaptureContext& c, AutogradNodeId v, const AutogradNode& node, Slots& outputs,
                     const Slots& inputs) {
  for (std::size_t h = 0; h < node.hooks.size(); ++h) {
    if (node.hooks[h] == AutogradHookKind::kPost) {
      const FxNodeId hooked =
          c.fx.call("call_hook", ref(c.next_hook(v, h, false)), grads_list(outputs),
                    grads_list(inputs), FxArg::string("post_hook"));
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i]) outputs[i]->proxy = c.fx.getitem(hooked, static_cast<std::int64_t>(i));
      }
    } else if (node.hooks[h] == AutogradHookKind::kPostAccGrad) {
      CAPSIM_CHECK(node.variable.has_value(), "a post-accumulate-grad hook off a leaf");
      c.fx.call("call_hook", ref(c.next_hook(v, h, false)), c.lifted(*node.variable),
                FxArg::string("post_acc_grad_hook"));
    }
  }
}

// validate_outputs of a node's grads against the metadata of the inputs they
// feed: one opaque call (functional), or shapes then dtypes on the proxies.
Status validate_outputs(CaptureContext& c, AutogradNodeId v, Slots& outputs) {
  const auto edges = c.g.next_edges(v);
  if (c.o.mode == CaptureMode::kFunctional) {
    std::vector<FxArg> packed;
    for (const auto& e : edges) {
      if (!e) {
        packed.push_back(FxArg::none());
        continue;
      }
      const TensorMeta& m = c.g.node(e->target).inputs[e->input_nr].meta;
      packed.push_back(FxArg::of({FxArg::string(std::string(dtype_name(m.dtype))),
                                  FxArg::boolean(m.is_subclass), c.size_list(m.sizes)}));
    }
    const FxNodeId validated =
        c.fx.call("validate_outputs", grads_list(outputs), FxArg::of(std::move(packed)));
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i]) {
        *outputs[i] = c.value(c.fx.getitem(validated, static_cast<std::int64_t>(i)),
                              c.output_meta(v, i), true, kDummySizes);
      }
    }
    return {};
  }
  // C++ validate_outputs on the proxies: shapes, then dtypes.
  for (std::size_t i = 0; i < edges.size() && i < outputs.size(); ++i) {
    if (!edges[i]) continue;
    const TensorMeta& m = c.g.node(edges[i]->target).inputs[edges[i]->input_nr].meta;
    const FxArg sizes = c.size_list(m.sizes);
    if (!outputs[i]) continue;
    CaptureValue& out = *outputs[i];
    if (c.read(out, "sizes").meta.sizes != m.sizes) {
      out.proxy = c.fx.call("torch.ops.aten.sum_to_size.default", ref(out.proxy), sizes);
      out.meta.sizes = m.sizes;
      out.meta.strides = contiguous_strides(m.sizes);
    }
    if (c.read(out, "dtype").meta.dtype != m.dtype) {
      out.proxy = c.fx.call("torch.ops.aten._to_copy.default", ref(out.proxy),
                            FxArg::string(std::string(dtype_name(m.dtype))));
      out.meta.dtype = m.dtype;
    }
  }
  return {};
}

// end_capture: the final-callbacks stub, the output, then
// reorder_accumulate_grad_nodes and dce.
Status end_capture(FxEmitter& fx) {
  fx.call("FakeCompiledAutogradEngine._exec_final_callbacks_stub", {});
  CAPSIM_TRY(fx.graph.output({FxArg::of({})}));
  // One rebuild for both passes: dce's liveness holds in either order (a
  // node's uses precede it in both), so the reordered sequence is filtered
  // by it instead of being rebuilt twice (each rebuild moves and remaps
  // every node: a sixth of a capture).
  const std::vector<FxNodeId> order = end_capture_order(fx.graph);
  CAPSIM_TRY_ASSIGN(fx.graph, std::move(fx.graph).rebuilt(order));
  return {};
}

// The capture's walk: each NodeCall in order takes its input buffer, runs
// its hooks and op, and routes its outputs into its targets' buffers.
class Capturer {
 public:
  Capturer(const AutogradGraph& g, const CollectedBackward& b, const CaptureOptions& o)
      : c_(g, b, o, r_) {}

  Result<CaptureResult> run() {
    c_.open();
    buffers_.assign(c_.g.num_nodes(), {});
    for (AutogradNodeId v = 0; v < c_.g.num_nodes(); ++v)
      buffers_[v].resize(c_.g.node(v).inputs.size());
    for (std::uint32_t i = 0; i < c_.b.ordered_calls.size(); ++i) CAPSIM_TRY(run_call(i));
    CAPSIM_TRY(end_capture(c_.fx));
    return std::move(r_);
  }

 private:
  Status run_call(std::uint32_t index) {
    const NodeCall& nc = c_.b.ordered_calls[index];
    const AutogradNodeId v = nc.node;
    const AutogradNode& node = c_.g.node(v);
    c_.call_index = index;
    c_.call_id = nc.id;
    c_.node_name = node.name;
    // The node takes its input buffer, as the engine moves an InputBuffer into
    // the call; the slot is left empty, not copied (each value owns metadata).
    Slots inputs = std::exchange(buffers_[v], Slots(buffers_[v].size()));
    call_pre_hooks(c_, v, node, inputs);
    // Unpack hooks of packed saved tensors: capsim's own capture does not
    // model saved-tensor hooks (the release form does), so it calls none.
    CAPSIM_TRY_ASSIGN(Slots outputs, apply(c_, v, node, inputs));
    // The functional capture validates the GraphRoot's outputs too, as
    // PyTorch 2.11 does (its graphs open with a validate_outputs of the root
    // grads; docs/fidelity.md); the legacy capture keeps the older order.
    const bool validates_root = c_.o.mode == CaptureMode::kFunctional;
    if (node.kind != AutogradNodeKind::kAotBackward &&
        node.kind != AutogradNodeKind::kAccumulateGrad &&
        (node.kind != AutogradNodeKind::kGraphRoot || validates_root)) {
      CAPSIM_TRY(validate_outputs(c_, v, outputs));
    } else {
      // Keep the size cursor in step with Phase A: edge metadata sizes.
      for (const auto& e : c_.g.next_edges(v)) {
        if (e) (void)c_.size_list(c_.g.node(e->target).inputs[e->input_nr].meta.sizes);
      }
    }
    call_post_hooks(c_, v, node, outputs, inputs);
    // Route the outputs into their targets' input buffers (fan-in).
    const auto edges = c_.g.next_edges(v);
    for (std::size_t i = 0; i < edges.size() && i < outputs.size(); ++i) {
      if (!edges[i] || !outputs[i]) continue;
      auto& slot = buffers_[edges[i]->target][edges[i]->input_nr];
      slot = accumulate(slot, *outputs[i]);
    }
    return {};
  }

  std::optional<CaptureValue> accumulate(const std::optional<CaptureValue>& old,
                                         const CaptureValue& incoming) {
    if (!old) return incoming;  // definedness is not metadata
    if (c_.o.mode == CaptureMode::kFunctional) {
      return c_.value(c_.fx.call("torch.add", ref(old->proxy), ref(incoming.proxy)), old->meta,
                      true, kDummySizes);
    }
    // InputBuffer::add: in place only for a dense tensor nobody else holds.
    const bool dense = is_contiguous(c_.read(*old, "strides").meta);
    const bool unique = c_.read(*old, "use_count").use_count == 1;
    if (dense && unique) {
      CaptureValue v = *old;
      v.proxy = c_.fx.call("torch.ops.aten.add_.Tensor", ref(old->proxy), ref(incoming.proxy));
      return v;
    }
    return c_.value(c_.fx.call("torch.add", ref(old->proxy), ref(incoming.proxy)), old->meta, false,
                    kDummySizes);
  }

  CaptureResult r_;
  CaptureContext c_;
  std::vector<Slots> buffers_;  // each node's InputBuffer
};

}  // namespace
}  // namespace capture_detail

Result<CaptureResult> capture_backward(const AutogradGraph& graph,
                                       const CollectedBackward& backward,
                                       const CaptureOptions& options) {
  capture_detail::Capturer capturer(graph, backward, options);
  return capturer.run();
}

}  // namespace capsim
