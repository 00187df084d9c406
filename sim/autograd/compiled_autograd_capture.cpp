// Compiled autograd's Phase B (see compiled_autograd_capture.hpp): the Capturer, whose one
// metadata accessor records every read, each NodeCall captured functionally or the legacy way,
// and end_capture.
#include "sim/autograd/compiled_autograd_capture.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <type_traits>
#include <utility>

#include "sim/autograd/end_capture_order.hpp"

namespace capsim {

namespace {

// A value bound to a proxy. Its metadata is reachable only through
// Capturer::read, which records the read.
struct Value {
  FxNodeId proxy = 0;
  TensorMeta meta;
  std::uint32_t use_count = 1;
};
using Slots = std::vector<std::optional<Value>>;

FxArg ref(FxNodeId n) {
  return FxArg::ref(n);
}

// A vector of these arguments, moved in: a braced list would copy each one,
// and a list argument's copy is a deep copy of its payload.
template <typename... A>
std::vector<FxArg> arg_vector(A&&... args) {
  std::vector<FxArg> out;
  out.reserve(sizeof...(A) + 4);  // room for the saved values that usually follow
  (out.push_back(std::forward<A>(args)), ...);
  return out;
}

class Capturer {
 public:
  Capturer(const AutogradGraph& g, const CollectedBackward& b, const CaptureOptions& o)
      : g_(g), b_(b), o_(o), rng_(o.perturb.seed), hook_positions_(b.hooks) {}

  Result<CaptureResult> run() {
    inputs_ = r_.graph.placeholder("inputs");
    sizes_ = r_.graph.placeholder("sizes");
    scalars_ = r_.graph.placeholder("scalars");
    hooks_ = r_.graph.placeholder("hooks");
    // Dynamic size slots become sizes[j]; static ones stay literals.
    std::uint32_t dyn = 0;
    for (const SizeInput& s : b_.sizes) {
      slot_arg_.push_back(s.dynamic ? FxArg::ref(getitem(sizes_, dyn++)) : FxArg::integer(s.value));
    }
    for (std::size_t i = 0; i < b_.inputs.size(); ++i) input_index_.emplace(b_.inputs[i], i);
    buffers_.assign(g_.num_nodes(), {});
    for (AutogradNodeId v = 0; v < g_.num_nodes(); ++v)
      buffers_[v].resize(g_.node(v).inputs.size());
    for (std::uint32_t i = 0; i < b_.ordered_calls.size(); ++i) CAPSIM_TRY(run_call(i));
    CAPSIM_TRY(end_capture());
    return std::move(r_);
  }

 private:
  // --- Proxies and values ---------------------------------------------------
  FxNodeId call(std::string_view target, std::vector<FxArg> args) {
    return call_moving(target, args);
  }
  // A call with its arguments listed: they are moved from an array on the
  // stack into the graph, where a braced vector would allocate and copy each
  // (a list argument's payload included).
  template <typename... A>
  requires(sizeof...(A) > 0 && (std::is_same_v<std::remove_cvref_t<A>, FxArg> && ...)) FxNodeId
      call(std::string_view target, A&&... args) {
    std::array<FxArg, sizeof...(A)> moved{FxArg(std::forward<A>(args))...};
    return call_moving(target, moved);
  }
  FxNodeId call_moving(std::string_view target, std::span<FxArg> args) {
    auto id = r_.graph.call_function_moving(target, args);
    CAPSIM_CHECK(id.ok(), "capture emitted a dangling reference");
    return *id;
  }
  FxNodeId getitem(FxNodeId from, std::int64_t index) {
    return call("operator.getitem", ref(from), FxArg::integer(index));
  }
  // A value for `proxy`. Outputs of proxied ops are dummies in the functional
  // capture; in the legacy capture they are fakes with the metadata the eager
  // formula would give (`correct`). A perturbation replaces either.
  Value value(FxNodeId proxy, const TensorMeta& correct, bool dummy, const Dims& dummy_sizes) {
    // One copy of the metadata the value keeps (its Dims are on the heap).
    const bool dummied = dummy && o_.mode == CaptureMode::kFunctional;
    Value v{proxy, dummied ? dummy_meta(dummy_sizes) : correct, 1};
    if (o_.perturb.enabled) {
      Dims sizes;
      const auto rank = 1 + rng_.next() % 3;
      for (std::uint64_t d = 0; d < rank; ++d)
        sizes.push_back(static_cast<std::int64_t>(1 + rng_.next() % 5));
      v.meta.sizes = sizes;
      v.meta.strides = contiguous_strides(sizes);
      if (rng_.next() % 2 == 0) std::reverse(v.meta.strides.begin(), v.meta.strides.end());
      static constexpr DType kTypes[] = {DType::kFloat32, DType::kFloat16, DType::kComplex64};
      v.meta.dtype = kTypes[rng_.next() % 3];
      v.use_count = static_cast<std::uint32_t>(1 + rng_.next() % 3);
    }
    return v;
  }
  // The metadata of a dummy of `sizes`; the two dummy shapes are built once.
  const TensorMeta& dummy_meta(const Dims& sizes) {
    if (sizes == kDummySizes) return dummy_;
    if (sizes == kAotDummySizes) return aot_dummy_;
    other_dummy_ = contiguous_meta(sizes).value();
    return other_dummy_;
  }
  // The one accessor of a proxy's metadata: every call is a MetadataRead.
  const Value& read(const Value& v, const char* field) {
    r_.reads.push_back({call_id_, std::string(node_name_), field, o_.mode});
    return v;
  }
  FxArg lifted(TensorId t) {
    auto it = input_index_.find(t);
    CAPSIM_CHECK(it != input_index_.end(), "a saved tensor that Phase A did not lift");
    const auto index = static_cast<std::int64_t>(it->second);
    auto [pos, fresh] = lifted_.emplace(index, 0);
    if (fresh) pos->second = getitem(inputs_, index);
    return ref(pos->second);
  }
  FxArg next_size() {
    CAPSIM_CHECK(size_cursor_ < slot_arg_.size() && b_.sizes[size_cursor_].call == call_index_,
                 "capture and Phase A disagree on size slots");
    return slot_arg_[size_cursor_++];
  }
  // hooks[k] for hook `index` of node `v` (or its backward), at the position
  // Phase A lifted it to.
  FxNodeId next_hook(AutogradNodeId v, std::size_t index, bool backward) {
    const std::size_t k =
        hook_positions_.at(v, backward ? 0 : static_cast<std::uint32_t>(index), backward, false);
    return getitem(hooks_, static_cast<std::int64_t>(k));
  }
  // The dtype each output's grad must have, for the formulas that cast
  // (ToCopyBackward0 and CopyBackwards: their saved TensorOptions). It comes
  // from the graph's InputMetadata, not from a proxy.
  FxArg dtypes_of(AutogradNodeId v) {
    std::vector<FxArg> out;
    for (const auto& e : g_.next_edges(v)) {
      out.push_back(e ? FxArg::string(std::string(
                            dtype_name(g_.node(e->target).inputs[e->input_nr].meta.dtype)))
                      : FxArg::none());
    }
    return FxArg::of(std::move(out));
  }
  static bool casts(std::string_view name) {
    return name == "ToCopyBackward0" || name == "CopyBackwards";
  }
  FxArg size_list(const Dims& dims) {
    std::vector<FxArg> out;
    for (std::size_t i = 0; i < dims.size(); ++i) out.push_back(next_size());
    return FxArg::of(std::move(out));
  }
  FxArg grads_list(const Slots& slots) {
    std::vector<FxArg> out;
    for (const auto& s : slots) out.push_back(s ? ref(s->proxy) : FxArg::none());
    return FxArg::of(std::move(out));
  }
  FxArg needs_input_grad(AutogradNodeId v) {
    std::vector<FxArg> out;
    for (const auto& e : g_.next_edges(v)) out.push_back(FxArg::boolean(e.has_value()));
    return FxArg::of(std::move(out));
  }
  // The metadata the eager formula gives output `i`: that of the input it feeds.
  // By reference: most callers hand it to value(), which keeps a dummy instead.
  const TensorMeta& output_meta(AutogradNodeId v, std::size_t i) {
    if (edges_of_ != v || edges_.empty()) {
      edges_of_ = v;
      edges_ = g_.next_edges(v);
    }
    if (i < edges_.size() && edges_[i]) {
      return g_.node(edges_[i]->target).inputs[edges_[i]->input_nr].meta;
    }
    return scalar_meta_;
  }
  // One getitem per output of `op`, bound to fresh values.
  Slots unpack(FxNodeId op, AutogradNodeId v, std::size_t n, const Dims& dummy_sizes) {
    Slots out(n);
    for (std::size_t i = 0; i < n; ++i) {
      out[i] =
          value(getitem(op, static_cast<std::int64_t>(i)), output_meta(v, i), true, dummy_sizes);
    }
    return out;
  }

  // --- One NodeCall -----------------------------------------------------------
  Status run_call(std::uint32_t index) {
    const NodeCall& nc = b_.ordered_calls[index];
    const AutogradNodeId v = nc.node;
    const AutogradNode& node = g_.node(v);
    call_index_ = index;
    call_id_ = nc.id;
    node_name_ = node.name;
    // The node takes its input buffer, as the engine moves an InputBuffer into
    // the call; the slot is left empty, not copied (each value owns metadata).
    Slots inputs = std::exchange(buffers_[v], Slots(buffers_[v].size()));
    // Hooks are proxied in both modes (call_hook); their maybe_clone reads a
    // fake's metadata without recording anything (I-3), so none is read here.
    for (std::size_t h = 0; h < node.hooks.size(); ++h) {
      if (node.hooks[h] != AutogradHookKind::kTensorPre) continue;
      const FxNodeId hook = next_hook(v, h, false);
      const std::size_t slot = h < node.hook_inputs.size() ? node.hook_inputs[h] : 0;
      if (slot < inputs.size() && inputs[slot]) {
        inputs[slot]->proxy = call("call_hook", ref(hook), ref(inputs[slot]->proxy),
                                   FxArg::string("tensor_pre_hook"));
      }
    }
    for (std::size_t h = 0; h < node.hooks.size(); ++h) {
      if (node.hooks[h] != AutogradHookKind::kPre) continue;
      const FxNodeId hooked = call("call_hook", ref(next_hook(v, h, false)), grads_list(inputs),
                                   FxArg::string("pre_hook"));
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i]) inputs[i]->proxy = getitem(hooked, static_cast<std::int64_t>(i));
      }
    }
    // Unpack hooks of packed saved tensors: capsim's own capture does not
    // model saved-tensor hooks (the release form does), so it calls none.
    CAPSIM_TRY_ASSIGN(Slots outputs, apply(v, node, inputs));
    // The functional capture validates the GraphRoot's outputs too, as
    // PyTorch 2.11 does (its graphs open with a validate_outputs of the root
    // grads; docs/fidelity.md); the legacy capture keeps the older order.
    const bool validates_root = o_.mode == CaptureMode::kFunctional;
    if (node.kind != AutogradNodeKind::kAotBackward &&
        node.kind != AutogradNodeKind::kAccumulateGrad &&
        (node.kind != AutogradNodeKind::kGraphRoot || validates_root)) {
      CAPSIM_TRY(validate_outputs(v, outputs));
    } else {
      // Keep the size cursor in step with Phase A: edge metadata sizes.
      for (const auto& e : g_.next_edges(v)) {
        if (e) (void)size_list(g_.node(e->target).inputs[e->input_nr].meta.sizes);
      }
    }
    for (std::size_t h = 0; h < node.hooks.size(); ++h) {
      if (node.hooks[h] == AutogradHookKind::kPost) {
        const FxNodeId hooked = call("call_hook", ref(next_hook(v, h, false)), grads_list(outputs),
                                     grads_list(inputs), FxArg::string("post_hook"));
        for (std::size_t i = 0; i < outputs.size(); ++i) {
          if (outputs[i]) outputs[i]->proxy = getitem(hooked, static_cast<std::int64_t>(i));
        }
      } else if (node.hooks[h] == AutogradHookKind::kPostAccGrad) {
        CAPSIM_CHECK(node.variable.has_value(), "a post-accumulate-grad hook off a leaf");
        call("call_hook", ref(next_hook(v, h, false)), lifted(*node.variable),
             FxArg::string("post_acc_grad_hook"));
      }
    }
    // Route the outputs into their targets' input buffers (fan-in).
    const auto edges = g_.next_edges(v);
    for (std::size_t i = 0; i < edges.size() && i < outputs.size(); ++i) {
      if (!edges[i] || !outputs[i]) continue;
      auto& slot = buffers_[edges[i]->target][edges[i]->input_nr];
      slot = accumulate(slot, *outputs[i]);
    }
    return {};
  }

  std::optional<Value> accumulate(const std::optional<Value>& old, const Value& incoming) {
    if (!old) return incoming;  // definedness is not metadata
    if (o_.mode == CaptureMode::kFunctional) {
      return value(call("torch.add", ref(old->proxy), ref(incoming.proxy)), old->meta, true,
                   kDummySizes);
    }
    // InputBuffer::add: in place only for a dense tensor nobody else holds.
    const bool dense = is_contiguous(read(*old, "strides").meta);
    const bool unique = read(*old, "use_count").use_count == 1;
    if (dense && unique) {
      Value v = *old;
      v.proxy = call("torch.ops.aten.add_.Tensor", ref(old->proxy), ref(incoming.proxy));
      return v;
    }
    return value(call("torch.add", ref(old->proxy), ref(incoming.proxy)), old->meta, false,
                 kDummySizes);
  }

  // What a node's call takes besides its grads, lifted in Phase A's slot
  // order: the saved tensors (and the variable), CopySlices' geometry, then
  // the saved sizes.
  struct NodeArgs {
    std::vector<FxArg> saved, geometry, saved_sizes;
  };
  NodeArgs node_args(const AutogradNode& node) {
    NodeArgs a;
    for (TensorId t : node.saved_tensors) a.saved.push_back(lifted(t));
    if (node.variable) a.saved.push_back(lifted(*node.variable));
    if (node.kind == AutogradNodeKind::kCopySlices || node.name == "AsStridedBackward0") {
      a.geometry.push_back(size_list(node.base.sizes));
      a.geometry.push_back(size_list(node.base.strides));
      a.geometry.push_back(next_size());
      a.geometry.push_back(size_list(node.view.sizes));
      a.geometry.push_back(size_list(node.view.strides));
      a.geometry.push_back(next_size());
    }
    for (std::size_t i = 0; i < node.saved_sizes.size(); ++i) a.saved_sizes.push_back(next_size());
    return a;
  }

  Result<Slots> apply(AutogradNodeId v, const AutogradNode& node, const Slots& grads) {
    const bool legacy = o_.mode == CaptureMode::kLegacy;
    const NodeArgs a = node_args(node);
    switch (node.kind) {
      case AutogradNodeKind::kGraphRoot: return apply_graph_root(v, node.num_outputs);
      case AutogradNodeKind::kAccumulateGrad:
        if (grads[0]) {
          call("torch.ops.inductor.accumulate_grad_.default", a.saved.back(), ref(grads[0]->proxy));
        }
        return Slots{};
      case AutogradNodeKind::kFunctional:
      case AutogradNodeKind::kCopyBackwards:
        if (legacy) return traced_formula(v, node, grads, a.saved);
        return apply_functional(v, node, grads, a);
      case AutogradNodeKind::kCopySlices:
        if (!grads[0]) return Slots(node.num_outputs);
        if (legacy) return apply_copy_slices_legacy(v, node, grads, a);
        return apply_copy_slices(v, node, grads, a);
      case AutogradNodeKind::kCppNode: return apply_cpp_node(v, node, grads, a.saved, legacy);
      case AutogradNodeKind::kPyNode: return apply_py_node(v, node.num_outputs, grads, a.saved);
      case AutogradNodeKind::kAotBackward: return apply_aot_backward(v, node, grads, a, legacy);
    }
    return make_error("unknown node kind");
  }

  Slots apply_graph_root(AutogradNodeId v, std::size_t n) {
    Slots out(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto index = static_cast<std::int64_t>(b_.inputs.size() + i);
      out[i] = value(getitem(inputs_, index), output_meta(v, i), false, kDummySizes);
    }
    return out;
  }

  // A functional node (and CopyBackwards) lifted as one opaque call.
  Result<Slots> apply_functional(AutogradNodeId v, const AutogradNode& node, const Slots& grads,
                                 const NodeArgs& a) {
    std::vector<FxArg> args = arg_vector(grads_list(grads), needs_input_grad(v));
    args.insert(args.end(), a.saved.begin(), a.saved.end());
    args.insert(args.end(), a.geometry.begin(), a.geometry.end());
    args.insert(args.end(), a.saved_sizes.begin(), a.saved_sizes.end());
    if (casts(node.name)) args.push_back(dtypes_of(v));
    return unpack(call("ops." + node.name, std::move(args)), v, node.num_outputs, kDummySizes);
  }

  // CopySlices as its prologue, the inner node and its epilogue.
  Result<Slots> apply_copy_slices(AutogradNodeId v, const AutogradNode& node, const Slots& grads,
                                  const NodeArgs& a) {
    std::vector<FxArg> args = arg_vector(grads_list(grads));
    args.insert(args.end(), a.geometry.begin(), a.geometry.end());
    const FxNodeId prologue = call("copy_slices_prologue", std::move(args));
    const FxNodeId result = getitem(prologue, 0), slice = getitem(prologue, 1),
                   clone = getitem(prologue, 2);
    // The inner node computes its grad for self whatever CopySlices needs.
    FxArg inner_needed = needs_input_grad(v);
    inner_needed.mutable_items().at(0) = FxArg::boolean(true);
    std::vector<FxArg> inner_args =
        arg_vector(FxArg::of(arg_vector(ref(clone))), std::move(inner_needed));
    inner_args.insert(inner_args.end(), a.saved.begin(), a.saved.end());
    inner_args.insert(inner_args.end(), a.saved_sizes.begin(), a.saved_sizes.end());
    if (casts(node.inner_name)) inner_args.push_back(dtypes_of(v));
    const FxNodeId inner = call("ops." + node.inner_name, std::move(inner_args));
    const FxNodeId epilogue =
        call("copy_slices_epilogue", needs_input_grad(v), ref(result), ref(inner), ref(slice));
    return unpack(epilogue, v, node.num_outputs, kDummySizes);
  }

  // The legacy CopySlices: apply_impl on fakes, whose new_empty_strided reads
  // the grad's dtype and device.
  Result<Slots> apply_copy_slices_legacy(AutogradNodeId v, const AutogradNode& node,
                                         const Slots& grads, const NodeArgs& a) {
    std::vector<FxArg> args = arg_vector(grads_list(grads));
    args.insert(args.end(), a.geometry.begin(), a.geometry.end());
    (void)read(*grads[0], "dtype");
    (void)read(*grads[0], "device");
    const FxNodeId result = call("torch.ops.aten.new_empty_strided.default", std::move(args));
    const FxNodeId copied = call("torch.ops.aten.copy_.default", ref(result), ref(grads[0]->proxy));
    const FxNodeId view = call("torch.ops.aten.as_strided.default", ref(copied));
    const FxNodeId clone = call("torch.ops.aten.clone.default", ref(view));
    Slots inner_in{value(clone, grads[0]->meta, false, kDummySizes)};
    AutogradNode inner = node;
    inner.kind = AutogradNodeKind::kFunctional;
    inner.name = node.inner_name;
    CAPSIM_TRY_ASSIGN(Slots res, traced_formula(v, inner, inner_in, {}));
    Slots out(node.num_outputs);
    for (std::size_t i = 0; i < out.size() && i < res.size(); ++i) {
      if (!res[i]) continue;  // branches on definedness: allowed
      out[i] = value(call("torch.ops.aten.copy_.default", ref(view), ref(res[i]->proxy)),
                     output_meta(v, i), false, kDummySizes);
    }
    return out;
  }

  Result<Slots> apply_cpp_node(AutogradNodeId v, const AutogradNode& node, const Slots& grads,
                               const std::vector<FxArg>& saved, bool legacy) {
    if (!legacy) {
      const std::string target = fmt::format("ops.{}{}", node.name, cpp_counts_[node.name]++);
      std::vector<FxArg> args = arg_vector(grads_list(grads), needs_input_grad(v));
      args.insert(args.end(), saved.begin(), saved.end());
      return unpack(call(target, std::move(args)), v, node.num_outputs, kDummySizes);
    }
    if (!node.traceable) {
      return make_error(fmt::format("{}: compiled_args not implemented for non-traceable node: {}",
                                    describe_node(g_, v), node.name));
    }
    return traced_formula(v, node, grads, saved);
  }

  // Lifted in both modes: call_backward; its outputs are fakes built from the
  // forward inputs' metadata, not dummies.
  Slots apply_py_node(AutogradNodeId v, std::size_t n, const Slots& grads,
                      const std::vector<FxArg>& saved) {
    std::vector<FxArg> args = arg_vector(ref(next_hook(v, 0, true)), FxArg::of(saved));
    for (const auto& gslot : grads) args.push_back(gslot ? ref(gslot->proxy) : FxArg::none());
    const FxNodeId op = call("call_backward", std::move(args));
    Slots out(n);
    for (std::size_t i = 0; i < n; ++i) {
      out[i] =
          value(getitem(op, static_cast<std::int64_t>(i)), output_meta(v, i), false, kDummySizes);
    }
    return out;
  }

  Result<Slots> apply_aot_backward(AutogradNodeId v, const AutogradNode& node, const Slots& grads,
                                   const NodeArgs& a, bool legacy) {
    if (legacy) {
      // The traced prologue coerces tangents: it reads their metadata.
      for (const auto& gslot : grads) {
        if (gslot) {
          (void)read(*gslot, "sizes");
          (void)read(*gslot, "strides");
        }
      }
    }
    // The region's ctx is lifted into `hooks` (Phase A), unused here.
    (void)hook_positions_.at(v, 0, true, false);
    std::vector<FxArg> args = arg_vector(FxArg::of(a.saved), FxArg::of(a.saved_sizes));
    for (const auto& gslot : grads) args.push_back(gslot ? ref(gslot->proxy) : FxArg::none());
    const FxNodeId pgrads = call("call_aot_bwd_prologue", std::move(args));
    if (node.aot_body) return copy_aot_body(v, node, *node.aot_body, pgrads, a.saved_sizes);
    // The copied bw_module: mul's backward, output i = tangent * saved[1 - i].
    if (a.saved.size() < 2) {
      return make_error(fmt::format("{}: an AOT backward needs the region's 2 saved inputs, has {}",
                                    describe_node(g_, v), a.saved.size()));
    }
    const FxNodeId tangent = getitem(pgrads, 0);
    Slots out(node.num_outputs);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const std::size_t other = 1 - std::min<std::size_t>(i, 1);
      const FxNodeId copied = call("torch.ops.aten.mul.Tensor", ref(tangent), a.saved[other]);
      FxNodeId result = copied;
      if (i < node.subclass_outputs) {
        // The epilogue rebuilds the subclass from its two inner tensors.
        const FxNodeId inner = call("torch.ops.aten.clone.default", ref(copied));
        result = call("make_subclass", ref(copied), ref(inner));
      }
      out[i] = value(result, output_meta(v, i), true, kAotDummySizes);
    }
    return out;
  }

  // A recorded region's backward graph copied in (the release form does the
  // same, sim/autograd/compiled_autograd_release_form.hpp): an input per
  // placeholder, its symints replaced by the node's size slots, then its
  // nodes, then make_subclass over every output for a subclass grad.
  Result<Slots> copy_aot_body(AutogradNodeId v, const AutogradNode& node,
                              const AotBackwardBody& body, FxNodeId pgrads,
                              const std::vector<FxArg>& symints) {
    std::vector<FxArg> value;
    for (std::uint32_t i = 0; i < body.placeholders; ++i) {
      value.push_back(i < body.symints && i < symints.size() ? symints[i]
                                                             : ref(getitem(pgrads, i)));
    }
    for (const FxNode& n : body.nodes) {
      const std::string target =
          n.target == "torch.ops.aten.view.default" ? "torch.ops.aten.reshape.default" : n.target;
      value.push_back(ref(call(target, substitute_nodes(n.args, value))));
    }
    const std::vector<FxArg> outputs = substitute_nodes(body.outputs, value);
    Slots out(node.num_outputs);
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::optional<FxNodeId> result;
      if (body.epilogue && i < body.epilogue->size() && (*body.epilogue)[i] < 0) {
        result = call("make_subclass", outputs);
      } else {
        const std::size_t k =
            body.epilogue ? static_cast<std::size_t>(std::max<std::int64_t>(0, (*body.epilogue)[i]))
                          : i;
        if (k < outputs.size() && outputs[k].kind == FxArg::Kind::kNode) result = outputs[k].node;
      }
      if (result) out[i] = value_of(v, i, *result);
    }
    return out;
  }
  Value value_of(AutogradNodeId v, std::size_t i, FxNodeId proxy) {
    return value(proxy, output_meta(v, i), true, kAotDummySizes);
  }

  // The legacy path: the eager formula runs on the proxies, reading their
  // metadata (complex grads take `real`; every output is an aten op).
  Result<Slots> traced_formula(AutogradNodeId v, const AutogradNode& node, const Slots& grads,
                               const std::vector<FxArg>& saved) {
    Slots out(node.num_outputs);
    const bool any =
        std::any_of(grads.begin(), grads.end(), [](const auto& s) { return s.has_value(); });
    if (!any) return out;
    const Value& grad =
        *std::find_if(grads.begin(), grads.end(), [](const auto& s) { return s.has_value(); })
             ->
             operator->();
    FxNodeId x = grad.proxy;
    if (is_complex(read(grad, "dtype").meta.dtype)) x = call("torch.ops.aten.real.default", ref(x));
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::vector<FxArg> args{ref(x)};
      if (i < saved.size()) args.push_back(saved[i]);
      const std::string target = node.kind == AutogradNodeKind::kCopyBackwards
                                     ? "torch.ops.aten._to_copy.default"
                                     : "torch.ops.aten.mul.Tensor";
      out[i] = value(call(target, std::move(args)), output_meta(v, i), false, kDummySizes);
    }
    return out;
  }

  Status validate_outputs(AutogradNodeId v, Slots& outputs) {
    const auto edges = g_.next_edges(v);
    if (o_.mode == CaptureMode::kFunctional) {
      std::vector<FxArg> packed;
      for (const auto& e : edges) {
        if (!e) {
          packed.push_back(FxArg::none());
          continue;
        }
        const TensorMeta& m = g_.node(e->target).inputs[e->input_nr].meta;
        packed.push_back(FxArg::of({FxArg::string(std::string(dtype_name(m.dtype))),
                                    FxArg::boolean(m.is_subclass), size_list(m.sizes)}));
      }
      const FxNodeId validated =
          call("validate_outputs", grads_list(outputs), FxArg::of(std::move(packed)));
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i]) {
          *outputs[i] = value(getitem(validated, static_cast<std::int64_t>(i)), output_meta(v, i),
                              true, kDummySizes);
        }
      }
      return {};
    }
    // C++ validate_outputs on the proxies: shapes, then dtypes.
    for (std::size_t i = 0; i < edges.size() && i < outputs.size(); ++i) {
      if (!edges[i]) continue;
      const TensorMeta& m = g_.node(edges[i]->target).inputs[edges[i]->input_nr].meta;
      const FxArg sizes = size_list(m.sizes);
      if (!outputs[i]) continue;
      Value& out = *outputs[i];
      if (read(out, "sizes").meta.sizes != m.sizes) {
        out.proxy = call("torch.ops.aten.sum_to_size.default", ref(out.proxy), sizes);
        out.meta.sizes = m.sizes;
        out.meta.strides = contiguous_strides(m.sizes);
      }
      if (read(out, "dtype").meta.dtype != m.dtype) {
        out.proxy = call("torch.ops.aten._to_copy.default", ref(out.proxy),
                         FxArg::string(std::string(dtype_name(m.dtype))));
        out.meta.dtype = m.dtype;
      }
    }
    return {};
  }

  // --- end_capture ------------------------------------------------------------
  Status end_capture() {
    call("FakeCompiledAutogradEngine._exec_final_callbacks_stub", {});
    CAPSIM_TRY(r_.graph.output({FxArg::of({})}));
    // One rebuild for both passes: dce's liveness holds in either order (a
    // node's uses precede it in both), so the reordered sequence is filtered
    // by it instead of being rebuilt twice (each rebuild moves and remaps
    // every node: a sixth of a capture).
    const std::vector<FxNodeId> order = end_capture_order(r_.graph);
    CAPSIM_TRY_ASSIGN(r_.graph, std::move(r_.graph).rebuilt(order));
    return {};
  }

  const AutogradGraph& g_;
  const CollectedBackward& b_;
  CaptureOptions o_;
  Rng rng_;
  CaptureResult r_;
  const TensorMeta dummy_ = contiguous_meta(kDummySizes).value();
  const TensorMeta aot_dummy_ = contiguous_meta(kAotDummySizes).value();
  const TensorMeta scalar_meta_ = contiguous_meta({}).value();
  TensorMeta other_dummy_;
  FxNodeId inputs_ = 0, sizes_ = 0, scalars_ = 0, hooks_ = 0;
  std::vector<FxArg> slot_arg_;
  std::size_t size_cursor_ = 0;
  LiftedHookPositions hook_positions_;
  std::vector<Slots> buffers_;
  std::map<std::int64_t, FxNodeId> lifted_;
  std::map<TensorId, std::size_t> input_index_;
  // next_edges of the node being captured, fetched once per node (a node with
  // k outputs must not copy its k edges k times).
  AutogradNodeId edges_of_ = 0;
  std::vector<std::optional<NextEdge>> edges_;
  std::map<std::string, std::uint32_t> cpp_counts_;
  std::uint32_t call_index_ = 0;
  std::uint32_t call_id_ = 0;
  std::string_view node_name_;
};

}  // namespace

Result<CaptureResult> capture_backward(const AutogradGraph& graph,
                                       const CollectedBackward& backward,
                                       const CaptureOptions& options) {
  Capturer capturer(graph, backward, options);
  return capturer.run();
}

}  // namespace capsim
