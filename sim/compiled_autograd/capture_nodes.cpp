// Each node kind's calls in a compiled-autograd capture (see
// capture_context.hpp): the functional path, which lifts a node as one
// opaque call, and the legacy one, which traces its formula on the proxies.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sim/compiled_autograd/capture_context.hpp"

namespace capsim::capture_detail {

namespace {

// What a node's call takes besides its grads, lifted in Phase A's slot
// order: the saved tensors (and the variable), CopySlices' geometry, then
// the saved sizes.
struct NodeArgs {
  std::vector<FxArg> saved, geometry, saved_sizes;
};
NodeArgs node_args(CaptureContext& c, const AutogradNode& node) {
  NodeArgs a;
  for (TensorId t : node.saved_tensors) a.saved.push_back(c.lifted(t));
  if (node.variable) a.saved.push_back(c.lifted(*node.variable));
  if (node.kind == AutogradNodeKind::kCopySlices || node.name == "AsStridedBackward0") {
    a.geometry.push_back(c.size_list(node.base.sizes));
    a.geometry.push_back(c.size_list(node.base.strides));
    a.geometry.push_back(c.next_size());
    a.geometry.push_back(c.size_list(node.view.sizes));
    a.geometry.push_back(c.size_list(node.view.strides));
    a.geometry.push_back(c.next_size());
  }
  for (std::size_t i = 0; i < node.saved_sizes.size(); ++i) {
    a.saved_sizes.push_back(c.next_size());
  }
  return a;
}

// The legacy path: the eager formula runs on the proxies, reading their
// metadata (complex grads take `real`; every output is an aten op).
Result<Slots> traced_formula(CaptureContext& c, AutogradNodeId v, const AutogradNode& node,
                             const Slots& grads, const std::vector<FxArg>& saved) {
  Slots out(node.num_outputs);
  const auto first =
      std::find_if(grads.begin(), grads.end(), [](const auto& s) { return s.has_value(); });
  if (first == grads.end()) return out;
  const CaptureValue& grad = **first;
  FxNodeId x = grad.proxy;
  if (is_complex(c.read(grad, "dtype").meta.dtype)) {
    x = c.fx.call("torch.ops.aten.real.default", ref(x));
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::vector<FxArg> args{ref(x)};
    if (i < saved.size()) args.push_back(saved[i]);
    const std::string target = node.kind == AutogradNodeKind::kCopyBackwards
                                   ? "torch.ops.aten._to_copy.default"
                                   : "torch.ops.aten.mul.Tensor";
    out[i] = c.value(c.fx.call(target, std::move(args)), c.output_meta(v, i), false, kDummySizes);
  }
  return out;
}

Slots apply_graph_root(CaptureContext& c, AutogradNodeId v, std::size_t n) {
  Slots out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto index = static_cast<std::int64_t>(c.b.inputs.size() + i);
    out[i] = c.value(c.fx.getitem(c.inputs_ph, index), c.output_meta(v, i), false, kDummySizes);
  }
  return out;
}

// A functional node (and CopyBackwards) lifted as one opaque call.
Result<Slots> apply_functional(CaptureContext& c, AutogradNodeId v, const AutogradNode& node,
                               const Slots& grads, const NodeArgs& a) {
  std::vector<FxArg> args = arg_vector(grads_list(grads), needs_input_grad(c.g, v));
  args.insert(args.end(), a.saved.begin(), a.saved.end());
  args.insert(args.end(), a.geometry.begin(), a.geometry.end());
  args.insert(args.end(), a.saved_sizes.begin(), a.saved_sizes.end());
  if (casts(node.name)) args.push_back(dtypes_of(c.g, v));
  return c.unpack(c.fx.call("ops." + node.name, std::move(args)), v, node.num_outputs, true,
                  kDummySizes);
}

// CopySlices as its prologue, the inner node and its epilogue.
Result<Slots> apply_copy_slices(CaptureContext& c, AutogradNodeId v, const AutogradNode& node,
                                const Slots& grads, const NodeArgs& a) {
  std::vector<FxArg> args = arg_vector(grads_list(grads));
  args.insert(args.end(), a.geometry.begin(), a.geometry.end());
  const FxNodeId prologue = c.fx.call("copy_slices_prologue", std::move(args));
  const FxNodeId result = c.fx.getitem(prologue, 0), slice = c.fx.getitem(prologue, 1),
                 clone = c.fx.getitem(prologue, 2);
  // The inner node computes its grad for self whatever CopySlices needs.
  FxArg inner_needed = needs_input_grad(c.g, v);
  inner_needed.mutable_items().at(0) = FxArg::boolean(true);
  std::vector<FxArg> inner_args =
      arg_vector(FxArg::of(arg_vector(ref(clone))), std::move(inner_needed));
  inner_args.insert(inner_args.end(), a.saved.begin(), a.saved.end());
  inner_args.insert(inner_args.end(), a.saved_sizes.begin(), a.saved_sizes.end());
  if (casts(node.inner_name)) inner_args.push_back(dtypes_of(c.g, v));
  const FxNodeId inner = c.fx.call("ops." + node.inner_name, std::move(inner_args));
  const FxNodeId epilogue = c.fx.call("copy_slices_epilogue", needs_input_grad(c.g, v), ref(result),
                                      ref(inner), ref(slice));
  return c.unpack(epilogue, v, node.num_outputs, true, kDummySizes);
}

// The legacy CopySlices: apply_impl on fakes, whose new_empty_strided reads
// the grad's dtype and device.
Result<Slots> apply_copy_slices_legacy(CaptureContext& c, AutogradNodeId v,
                                       const AutogradNode& node, const Slots& grads,
                                       const NodeArgs& a) {
  std::vector<FxArg> args = arg_vector(grads_list(grads));
  args.insert(args.end(), a.geometry.begin(), a.geometry.end());
  (void)c.read(*grads[0], "dtype");
  (void)c.read(*grads[0], "device");
  const FxNodeId result = c.fx.call("torch.ops.aten.new_empty_strided.default", std::move(args));
  const FxNodeId copied =
      c.fx.call("torch.ops.aten.copy_.default", ref(result), ref(grads[0]->proxy));
  const FxNodeId view = c.fx.call("torch.ops.aten.as_strided.default", ref(copied));
  const FxNodeId clone = c.fx.call("torch.ops.aten.clone.default", ref(view));
  Slots inner_in{c.value(clone, grads[0]->meta, false, kDummySizes)};
  AutogradNode inner = node;
  inner.kind = AutogradNodeKind::kFunctional;
  inner.name = node.inner_name;
  CAPSIM_TRY_ASSIGN(Slots res, traced_formula(c, v, inner, inner_in, {}));
  Slots out(node.num_outputs);
  for (std::size_t i = 0; i < out.size() && i < res.size(); ++i) {
    if (!res[i]) continue;  // branches on definedness: allowed
    out[i] = c.value(c.fx.call("torch.ops.aten.copy_.default", ref(view), ref(res[i]->proxy)),
                     c.output_meta(v, i), false, kDummySizes);
  }
  return out;
}

Result<Slots> apply_cpp_node(CaptureContext& c, AutogradNodeId v, const AutogradNode& node,
                             const Slots& grads, const std::vector<FxArg>& saved, bool legacy) {
  if (!legacy) {
    const std::string target = fmt::format("ops.{}{}", node.name, c.cpp_counts[node.name]++);
    std::vector<FxArg> args = arg_vector(grads_list(grads), needs_input_grad(c.g, v));
    args.insert(args.end(), saved.begin(), saved.end());
    return c.unpack(c.fx.call(target, std::move(args)), v, node.num_outputs, true, kDummySizes);
  }
  if (!node.traceable) {
    return make_error(fmt::format("{}: compiled_args not implemented for non-traceable node: {}",
                                  describe_node(c.g, v), node.name));
  }
  return traced_formula(c, v, node, grads, saved);
}

// Lifted in both modes: call_backward; its outputs are fakes built from the
// forward inputs' metadata, not dummies.
Slots apply_py_node(CaptureContext& c, AutogradNodeId v, std::size_t n, const Slots& grads,
                    const std::vector<FxArg>& saved) {
  std::vector<FxArg> args = arg_vector(ref(c.next_hook(v, 0, true)), FxArg::of(saved));
  for (const auto& gslot : grads) args.push_back(gslot ? ref(gslot->proxy) : FxArg::none());
  return c.unpack(c.fx.call("call_backward", std::move(args)), v, n, false, kDummySizes);
}

// A recorded region's backward graph copied in (the release form does the
// same, sim/compiled_autograd/release_form.hpp): an input per
// placeholder, its symints replaced by the node's size slots, then its
// nodes, then make_subclass over every output for a subclass grad.
Result<Slots> copy_aot_body(CaptureContext& c, AutogradNodeId v, const AutogradNode& node,
                            const AotBackwardBody& body, FxNodeId pgrads,
                            const std::vector<FxArg>& symints) {
  std::vector<FxArg> value;
  for (std::uint32_t i = 0; i < body.placeholders; ++i) {
    value.push_back(i < body.symints && i < symints.size() ? symints[i]
                                                           : ref(c.fx.getitem(pgrads, i)));
  }
  for (const FxNode& n : body.nodes) {
    const std::string target =
        n.target == "torch.ops.aten.view.default" ? "torch.ops.aten.reshape.default" : n.target;
    value.push_back(ref(c.fx.call(target, substitute_nodes(n.args, value))));
  }
  const std::vector<FxArg> outputs = substitute_nodes(body.outputs, value);
  Slots out(node.num_outputs);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::optional<FxNodeId> result;
    if (body.epilogue && i < body.epilogue->size() && (*body.epilogue)[i] < 0) {
      result = c.fx.call("make_subclass", outputs);
    } else {
      const std::size_t k =
          body.epilogue ? static_cast<std::size_t>(std::max<std::int64_t>(0, (*body.epilogue)[i]))
                        : i;
      if (k < outputs.size() && outputs[k].kind == FxArg::Kind::kNode) result = outputs[k].node;
    }
    if (result) out[i] = c.value(*result, c.output_meta(v, i), true, kAotDummySizes);
  }
  return out;
}

Result<Slots> apply_aot_backward(CaptureContext& c, AutogradNodeId v, const AutogradNode& node,
                                 const Slots& grads, const NodeArgs& a, bool legacy) {
  if (legacy) {
    // The traced prologue coerces tangents: it reads their metadata.
    for (const auto& gslot : grads) {
      if (gslot) {
        (void)c.read(*gslot, "sizes");
        (void)c.read(*gslot, "strides");
      }
    }
  }
  // The region's ctx is lifted into `hooks` (Phase A), unused here.
  (void)c.hook_positions.at(v, 0, true, false);
  std::vector<FxArg> args = arg_vector(FxArg::of(a.saved), FxArg::of(a.saved_sizes));
  for (const auto& gslot : grads) args.push_back(gslot ? ref(gslot->proxy) : FxArg::none());
  const FxNodeId pgrads = c.fx.call("call_aot_bwd_prologue", std::move(args));
  if (node.aot_body) return copy_aot_body(c, v, node, *node.aot_body, pgrads, a.saved_sizes);
  // The copied bw_module: mul's backward, output i = tangent * saved[1 - i].
  if (a.saved.size() < 2) {
    return make_error(fmt::format("{}: an AOT backward needs the region's 2 saved inputs, has {}",
                                  describe_node(c.g, v), a.saved.size()));
  }
  const FxNodeId tangent = c.fx.getitem(pgrads, 0);
  Slots out(node.num_outputs);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t other = 1 - std::min<std::size_t>(i, 1);
    const FxNodeId copied = c.fx.call("torch.ops.aten.mul.Tensor", ref(tangent), a.saved[other]);
    FxNodeId result = copied;
    if (i < node.subclass_outputs) {
      // The epilogue rebuilds the subclass from its two inner tensors.
      const FxNodeId inner = c.fx.call("torch.ops.aten.clone.default", ref(copied));
      result = c.fx.call("make_subclass", ref(copied), ref(inner));
    }
    out[i] = c.value(result, c.output_meta(v, i), true, kAotDummySizes);
  }
  return out;
}

// A node's op, emitted as its kind and the capture mode call for.
}  // namespace

Result<Slots> apply(CaptureContext& c, AutogradNodeId v, const AutogradNode& node,
                    const Slots& grads) {
  const bool legacy = c.o.mode == CaptureMode::kLegacy;
  const NodeArgs a = node_args(c, node);
  switch (node.kind) {
    case AutogradNodeKind::kGraphRoot: return apply_graph_root(c, v, node.num_outputs);
    case AutogradNodeKind::kAccumulateGrad:
      if (grads[0]) {
        c.fx.call("torch.ops.inductor.accumulate_grad_.default", a.saved.back(),
                  ref(grads[0]->proxy));
      }
      return Slots{};
    case AutogradNodeKind::kFunctional:
    case AutogradNodeKind::kCopyBackwards:
      if (legacy) return traced_formula(c, v, node, grads, a.saved);
      return apply_functional(c, v, node, grads, a);
    case AutogradNodeKind::kCopySlices:
      if (!grads[0]) return Slots(node.num_outputs);
      if (legacy) return apply_copy_slices_legacy(c, v, node, grads, a);
      return apply_copy_slices(c, v, node, grads, a);
    case AutogradNodeKind::kCppNode: return apply_cpp_node(c, v, node, grads, a.saved, legacy);
    case AutogradNodeKind::kPyNode: return apply_py_node(c, v, node.num_outputs, grads, a.saved);
    case AutogradNodeKind::kAotBackward: return apply_aot_backward(c, v, node, grads, a, legacy);
  }
  return make_error("unknown node kind");
}

}  // namespace capsim::capture_detail
