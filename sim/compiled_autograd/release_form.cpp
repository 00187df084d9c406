// The capture in a release's own form (see release_form.hpp): the
// ReleaseCapturer writes the graph node for node as that release's AutogradCompilerInstance
// does, then hands it to release_form_passes.hpp's end_capture passes.
#include "sim/compiled_autograd/release_form.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "sim/compiled_autograd/release_form_passes.hpp"

namespace capsim {
// Named, so that a unity build (tests/fuzz/run-libfuzzer.sh) keeps these
// apart from the other captures' internals.
namespace release_form {
namespace {

// The targets as torch.fx's _get_qualified_name spells them in a release.
constexpr std::string_view kGetitem = "_operator.getitem";
constexpr std::string_view kUnwrap = "torch._dynamo.external_utils.unwrap_maybe_dynamic_int";
constexpr std::string_view kOps = "torch._dynamo.compiled_autograd.ops.";
constexpr std::string_view kCopyBackwards =
    "torch._dynamo.compiled_autograd.ops.torch::autograd::CopyBackwards";
constexpr std::string_view kCopySlicesPrologue =
    "torch._dynamo.compiled_autograd.copy_slices_prologue";
constexpr std::string_view kCopySlicesEpilogue =
    "torch._dynamo.compiled_autograd.copy_slices_epilogue";
constexpr std::string_view kAotPrologue = "torch._dynamo.compiled_autograd.call_aot_bwd_prologue";
constexpr std::string_view kMakeSubclass = "torch._dynamo.compiled_autograd.make_subclass";
constexpr std::string_view kCallBackward = "torch._dynamo.external_utils.call_backward";
constexpr std::string_view kFinalCallbacks =
    "torch._dynamo.external_utils._exec_final_callbacks_stub";
constexpr std::string_view kAdd = "torch.add";

// c10::ScalarType's numbers, as compiled autograd packs a dtype.
std::int64_t scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 6;
    case DType::kFloat16: return 5;
    case DType::kBFloat16: return 15;
    case DType::kFloat64: return 7;
    case DType::kComplex64: return 9;
    case DType::kInt64: return 4;
    case DType::kBool: return 11;
    case DType::kInt32: return 3;
    case DType::kInt8: return 1;
    case DType::kUInt8: return 0;
  }
  return -1;
}

std::string device_text(const Device& d) {
  return d.type == DeviceType::kCpu ? std::string("cpu") : fmt::format("cuda:{}", d.index);
}

using Slot = std::optional<FxNodeId>;
using Slots = std::vector<Slot>;

// An input of the graph: a lifted tensor, or a leaf's defined `.grad`
// (AccumulateGrad collects it after the leaf).
using InputKey = std::pair<TensorId, bool>;

FxNodeId must(Result<FxNodeId> id) {
  CAPSIM_CHECK(id.ok(), "release form emitted a dangling reference");
  return *id;
}

// A list of grads as a release passes it: None where a slot holds none.
FxArg grads(const Slots& slots) {
  std::vector<FxArg> out;
  for (const Slot& s : slots) out.push_back(s ? FxArg::ref(*s) : FxArg::none());
  return FxArg::of(std::move(out));
}

// The graph being written, its five placeholders and the lifted hooks: the
// node shapes every part of the capture emits.
struct GraphWriter {
  explicit GraphWriter(const std::vector<LiftedHook>& hooks) : hook_positions(hooks) {}

  Result<FxNodeId> call(std::string_view target, std::vector<FxArg> args) {
    return graph.call_function(std::string(target), std::move(args));
  }
  FxNodeId getitem(FxNodeId from, std::int64_t index) {
    return must(call(kGetitem, {FxArg::ref(from), FxArg::integer(index)}));
  }
  // hooks[k] for hook `index` of node `v` (its backward: index 0; its unpack
  // hook of collected field `index`), where Phase A lifted it.
  FxNodeId hook(AutogradNodeId v, std::size_t index, bool backward, bool unpack = false) {
    const std::size_t k = hook_positions.at(v, static_cast<std::uint32_t>(index), backward, unpack);
    return getitem(placeholders[3], static_cast<std::int64_t>(k));
  }
  Slots unpack(FxNodeId op, std::size_t n) {
    Slots out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = getitem(op, static_cast<std::int64_t>(i));
    return out;
  }
  FxArg call_hook(FxNodeId hook_ref, std::vector<FxArg> args, const char* type) {
    args.insert(args.begin(), FxArg::ref(hook_ref));
    args.push_back(FxArg::keyword("hook_type", FxArg::string(type)));
    return FxArg::ref(must(call("torch._dynamo.external_utils.call_hook", std::move(args))));
  }

  FxGraph graph;
  std::vector<FxNodeId> placeholders;
  LiftedHookPositions hook_positions;
  std::int64_t packed_cursor = 0;
};

// PyTorch's `inputs` and `sizes` as the graph reads them: every lifted
// tensor's getitem, then each size slot (a constant, or its unwrapped getitem).
struct LiftedInputs {
  explicit LiftedInputs(const CollectedBackward& backward) : b(backward) {}

  // The root grads, then every tensor compiled_args collects in
  // ordered_calls order (saved tensors, a leaf, its defined .grad), each
  // once. Without the grads this is Phase A's list.
  Status number(const AutogradGraph& g) {
    std::vector<TensorId> lifted;
    auto add = [&](InputKey k) {
      if (!index.emplace(k, roots + keys.size()).second) return;
      keys.push_back(k);
      if (!k.second) lifted.push_back(k.first);
    };
    for (const NodeCall& nc : b.ordered_calls) {
      const AutogradNode& node = g.node(nc.node);
      if (node.kind == AutogradNodeKind::kGraphRoot) roots += node.num_outputs;
    }
    for (const NodeCall& nc : b.ordered_calls) {
      const AutogradNode& node = g.node(nc.node);
      for (TensorId t : node.saved_tensors) add({t, false});
      if (node.variable) {
        add({*node.variable, false});
        if (node.variable_grad_defined) add({*node.variable, true});
      }
    }
    if (lifted != b.inputs) return make_error("release form: Phase A lifted other tensors");
    return {};
  }

  void hoist(GraphWriter& w) {
    for (std::size_t i = 0; i < roots + keys.size(); ++i) {
      refs.push_back(w.getitem(w.placeholders[0], static_cast<std::int64_t>(i)));
    }
    std::vector<FxNodeId> fetched;
    std::int64_t j = 0;
    for (const SizeInput& s : b.sizes) {
      if (s.dynamic) fetched.push_back(w.getitem(w.placeholders[1], j++));
    }
    std::size_t k = 0;
    for (const SizeInput& s : b.sizes) {
      if (!s.dynamic) {
        slot_args.push_back(FxArg::integer(s.value));
        continue;
      }
      slot_args.push_back(FxArg::ref(must(w.call(kUnwrap, {FxArg::ref(fetched[k++])}))));
    }
  }

  FxArg input(InputKey k) const { return FxArg::ref(refs.at(index.at(k))); }
  FxArg next_size() {
    CAPSIM_CHECK(size_cursor < slot_args.size() && b.sizes[size_cursor].call == call_index,
                 "release form and Phase A disagree on size slots");
    return slot_args[size_cursor++];
  }
  FxArg size_list(std::size_t n) {
    std::vector<FxArg> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(next_size());
    return FxArg::of(std::move(out));
  }

  const CollectedBackward& b;
  std::size_t roots = 0;
  std::size_t root_cursor = 0;
  std::vector<InputKey> keys;
  std::map<InputKey, std::size_t> index;
  std::vector<FxNodeId> refs;
  std::vector<FxArg> slot_args;
  std::size_t size_cursor = 0;
  std::uint32_t call_index = 0;  // the NodeCall whose size slots are being read
};

// One entry per forward argument: a TensorList's range of edges needs a
// grad when any of them does.
FxArg needs_input_grad(const AutogradGraph& g, AutogradNodeId v) {
  std::vector<FxArg> out;
  const auto& edges = g.next_edges(v);
  const std::vector<std::uint32_t>& ranges = g.node(v).input_ranges;
  if (ranges.empty()) {
    for (const auto& e : edges) out.push_back(FxArg::boolean(e.has_value()));
    return FxArg::of(std::move(out));
  }
  std::size_t at = 0;
  for (const std::uint32_t n : ranges) {
    bool any = false;
    for (std::uint32_t k = 0; k < n && at < edges.size(); ++k, ++at) any = any || edges[at];
    out.push_back(FxArg::boolean(any));
  }
  return FxArg::of(std::move(out));
}

// The fields of a node without a recorder's list: the saved tensors, then
// the sizes (AsStridedBackward0's geometry slots before them, as Phase A has).
std::vector<FxArg> default_fields(LiftedInputs& inputs, const AutogradNode& node) {
  std::vector<FxArg> out;
  if (node.name == "AsStridedBackward0") {
    for (const TensorGeometry* geo : {&node.base, &node.view}) {
      out.push_back(inputs.size_list(geo->sizes.size()));
      out.push_back(inputs.size_list(geo->strides.size()));
      out.push_back(inputs.next_size());
    }
  }
  for (TensorId t : node.saved_tensors) out.push_back(inputs.input({t, false}));
  for (std::size_t i = 0; i < node.saved_sizes.size(); ++i) out.push_back(inputs.next_size());
  return out;
}

// A node's collected fields in PyTorch's order: the recorder's list where
// there is one, else default_fields.
std::vector<FxArg> node_fields(GraphWriter& w, LiftedInputs& inputs, AutogradNodeId v,
                               const AutogradNode& node) {
  if (!node.collected_fields) return default_fields(inputs, node);
  std::vector<FxArg> out;
  using K = CollectedField::Kind;
  for (const CollectedField& f : *node.collected_fields) {
    switch (f.kind) {
      case K::kTensor:
        if (f.packed) {
          // hooks[k], packed_data[j], then the unpack hook's call (which
          // delay_unpack_hook_nodes moves to just before its first user).
          const auto field = static_cast<std::size_t>(&f - node.collected_fields->data());
          const FxNodeId unpack_hook = w.hook(v, field, false, true);
          const FxNodeId packed = w.getitem(w.placeholders[4], w.packed_cursor++);
          out.push_back(w.call_hook(unpack_hook, {FxArg::ref(packed)}, "unpack_hook"));
        } else {
          out.push_back(inputs.input({*f.tensors.at(0), false}));
        }
        break;
      case K::kNone: out.push_back(FxArg::none()); break;
      case K::kTensorList: {
        std::vector<FxArg> list;
        for (const auto& t : f.tensors)
          list.push_back(t ? inputs.input({*t, false}) : FxArg::none());
        out.push_back(FxArg::of(std::move(list)));
        break;
      }
      case K::kSymInt: out.push_back(inputs.next_size()); break;
      case K::kSymInts: out.push_back(inputs.size_list(f.sizes.size())); break;
      case K::kSymIntLists: {
        std::vector<FxArg> lists;
        for (const std::uint32_t n : f.list_lengths) lists.push_back(inputs.size_list(n));
        out.push_back(FxArg::of(std::move(lists)));
        break;
      }
      case K::kConstant: out.push_back(FxArg::verbatim(f.text)); break;
      case K::kUnknown: out.push_back(FxArg::verbatim("<unknown " + f.text + ">")); break;
    }
  }
  return out;
}

// validate_outputs(grads, [packed InputMetadata or None per edge]), then a
// getitem per output.
//
// Two edges into one input read one InputMetadata: SwapSavedVariables
// swaps its shape for size proxies at the first and finds them stashed at
// the second, so the second edge's own slots go unread (and dce drops them).
Slots validate_outputs(GraphWriter& w, LiftedInputs& inputs, const AutogradGraph& g,
                       const CaGraphForm& f, AutogradNodeId v, const Slots& out) {
  std::vector<FxArg> packed;
  std::map<std::pair<AutogradNodeId, std::uint32_t>, FxArg> swapped;
  for (const auto& e : g.next_edges(v)) {
    if (!e) {
      packed.push_back(FxArg::none());
      continue;
    }
    const TensorMeta& m = g.node(e->target).inputs[e->input_nr].meta;
    const std::int64_t st = scalar_type(m.dtype);
    const FxArg options =
        FxArg::verbatim(fmt::format("(None, None, {}, {}, 0, None)", device_text(m.device), st));
    FxArg sizes = inputs.size_list(m.sizes.size());
    sizes = swapped.emplace(std::pair(e->target, e->input_nr), sizes).first->second;
    std::vector<FxArg> meta{options, sizes, FxArg::boolean(m.is_subclass)};
    if (f.metadata_grad_dtype) meta.push_back(FxArg::integer(st));
    packed.push_back(FxArg::tuple(std::move(meta)));
  }
  const FxNodeId validated = must(
      w.call(std::string(kOps) + "validate_outputs", {grads(out), FxArg::of(std::move(packed))}));
  return w.unpack(validated, out.size());
}

Result<Slots> apply_accumulate_grad(GraphWriter& w, const LiftedInputs& inputs,
                                    const CaGraphForm& f, const AutogradNode& node,
                                    const Slots& in) {
  CAPSIM_CHECK(node.variable.has_value(), "an AccumulateGrad without its leaf");
  if (in.empty() || !in[0]) return Slots{};
  const bool post_hooks =
      std::count(node.hooks.begin(), node.hooks.end(), AutogradHookKind::kPost) > 0;
  std::vector<FxArg> args{inputs.input({*node.variable, false})};
  if (f.accumulate_variable_grad) {
    args.push_back(node.variable_grad_defined ? inputs.input({*node.variable, true})
                                              : FxArg::none());
  }
  args.push_back(FxArg::ref(*in[0]));
  args.push_back(FxArg::boolean(post_hooks));
  CAPSIM_TRY(w.call("torch._dynamo.external_utils.call_accumulate_grad", std::move(args)));
  return Slots{};
}

// CopySlices: its prologue (the grad and the two geometries), the wrapped
// node on the clone, its epilogue.
Result<Slots> apply_copy_slices(GraphWriter& w, LiftedInputs& inputs, const AutogradGraph& g,
                                AutogradNodeId v, const AutogradNode& node, const Slots& in) {
  std::vector<FxArg> args{grads(in)};
  for (const TensorGeometry* geo : {&node.base, &node.view}) {
    args.push_back(inputs.size_list(geo->sizes.size()));
    args.push_back(inputs.size_list(geo->strides.size()));
    args.push_back(inputs.next_size());
  }
  CAPSIM_TRY_ASSIGN(const FxNodeId prologue, w.call(kCopySlicesPrologue, std::move(args)));
  const Slots parts = w.unpack(prologue, 3);
  FxArg inner_needed = needs_input_grad(g, v);
  inner_needed.mutable_items().at(0) = FxArg::boolean(true);
  std::vector<FxArg> inner_args{FxArg::of({FxArg::ref(*parts[2])}), std::move(inner_needed)};
  for (FxArg& a : node_fields(w, inputs, v, node)) inner_args.push_back(std::move(a));
  CAPSIM_TRY_ASSIGN(const FxNodeId inner,
                    w.call(std::string(kOps) + node.inner_name, std::move(inner_args)));
  const Slots inner_out = w.unpack(inner, node.num_outputs);
  CAPSIM_TRY_ASSIGN(const FxNodeId epilogue,
                    w.call(kCopySlicesEpilogue, {needs_input_grad(g, v), FxArg::ref(*parts[0]),
                                                 grads(inner_out), FxArg::ref(*parts[1])}));
  return w.unpack(epilogue, node.num_outputs);
}

// The AOT region's recorded backward graph, copied node for node after the
// prologue's getitems (its symints replaced by the node's size slots).
Result<Slots> inline_aot_body(GraphWriter& w, const AutogradNode& node, const AotBackwardBody& body,
                              FxNodeId prologue, const FxArg& symints) {
  std::vector<FxArg> value;  // the region graph's values, by its numbering
  for (std::uint32_t i = 0; i < body.placeholders; ++i) {
    value.push_back(FxArg::ref(w.getitem(prologue, i)));
  }
  for (std::size_t i = 0; i < body.symints && i < symints.items().size(); ++i) {
    value[i] = symints.items()[i];
  }
  for (const FxNode& n : body.nodes) {
    // The region's backward compiles lazily: the view_to_reshape pass that
    // its forward had must be applied by hand.
    const std::string target =
        n.target == "torch.ops.aten.view.default" ? "torch.ops.aten.reshape.default" : n.target;
    CAPSIM_TRY_ASSIGN(const FxNodeId id, w.call(target, substitute_nodes(n.args, value)));
    value.push_back(FxArg::ref(id));
  }
  const std::vector<FxArg> outputs = substitute_nodes(body.outputs, value);
  Slots out(node.num_outputs);
  const auto as_slot = [](const FxArg& a) {
    return a.kind == FxArg::Kind::kNode ? Slot(a.node) : Slot();
  };
  if (!body.epilogue) {
    for (std::size_t i = 0; i < out.size() && i < outputs.size(); ++i) out[i] = as_slot(outputs[i]);
    return out;
  }
  for (std::size_t i = 0; i < out.size() && i < body.epilogue->size(); ++i) {
    const std::int64_t e = (*body.epilogue)[i];
    if (e >= 0) {
      out[i] = as_slot(outputs.at(static_cast<std::size_t>(e)));
      continue;
    }
    CAPSIM_TRY_ASSIGN(const FxNodeId made, w.call(kMakeSubclass, outputs));
    out[i] = made;
  }
  return out;
}

// Without a recorded body, capsim's model of the one region it knows
// (out = a * b).
Result<Slots> modelled_aot_body(GraphWriter& w, const AutogradNode& node,
                                const std::vector<FxArg>& saved, FxNodeId prologue) {
  if (saved.size() < 2) {
    return make_error(fmt::format("{}: an AOT backward needs the region's 2 saved inputs, has {}",
                                  node.name, saved.size()));
  }
  const FxNodeId tangent = w.getitem(prologue, 0);
  Slots out(node.num_outputs);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const FxArg other = saved[1 - std::min<std::size_t>(i, 1)];
    CAPSIM_TRY_ASSIGN(FxNodeId r,
                      w.call("torch.ops.aten.mul.Tensor", {FxArg::ref(tangent), other}));
    if (i < node.subclass_outputs) {
      CAPSIM_TRY_ASSIGN(r, w.call(kMakeSubclass, {FxArg::ref(r), FxArg::ref(r), FxArg::none()}));
    }
    out[i] = r;
  }
  return out;
}

// proxy_call_aot_backward: the ctx's hooks entry, the prologue, a getitem
// per input of the region's backward graph (its symints replaced by the
// node's size slots), the graph copied node for node, then the epilogue
// (make_subclass over every output for a subclass grad).
Result<Slots> apply_aot_backward(GraphWriter& w, LiftedInputs& inputs, const CaGraphForm& f,
                                 AutogradNodeId v, const AutogradNode& node, const Slots& in) {
  (void)w.hook(v, 0, true);
  std::vector<FxArg> saved;
  for (TensorId t : node.saved_tensors) saved.push_back(inputs.input({t, false}));
  const FxArg symints = inputs.size_list(node.saved_sizes.size());
  std::vector<FxArg> args{FxArg::tuple(saved), symints};
  if (f.aot_opaque_objs) args.push_back(FxArg::of({}));
  std::vector<FxArg> flat;
  for (const Slot& s : in) flat.push_back(s ? FxArg::ref(*s) : FxArg::none());
  if (f.aot_flat_args_tuple) {
    args.push_back(FxArg::tuple(std::move(flat)));
  } else {
    for (FxArg& a : flat) args.push_back(std::move(a));
  }
  CAPSIM_TRY_ASSIGN(const FxNodeId prologue, w.call(kAotPrologue, std::move(args)));
  if (node.aot_body) return inline_aot_body(w, node, *node.aot_body, prologue, symints);
  return modelled_aot_body(w, node, saved, prologue);
}

// Writes the graph node for node: the placeholders and hoisted inputs, each
// NodeCall with its hooks and grad accumulation, then end_capture's passes.
class ReleaseCapturer {
 public:
  ReleaseCapturer(const AutogradGraph& g, const CollectedBackward& b, const CaGraphForm& f)
      : g_(g), b_(b), f_(f), w_(b.hooks), inputs_(b) {}

  Result<FxGraph> run() {
    for (const char* name : {"inputs", "sizes", "scalars", "hooks", "packed_data"}) {
      w_.placeholders.push_back(w_.graph.placeholder(name));
    }
    CAPSIM_TRY(inputs_.number(g_));
    inputs_.hoist(w_);
    buffers_.assign(g_.num_nodes(), {});
    for (AutogradNodeId v = 0; v < g_.num_nodes(); ++v)
      buffers_[v].resize(g_.node(v).inputs.size());
    for (std::uint32_t i = 0; i < b_.ordered_calls.size(); ++i) CAPSIM_TRY(run_call(i));
    CAPSIM_CHECK(inputs_.size_cursor == b_.sizes.size(),
                 "release form and Phase A disagree on sizes");
    CAPSIM_TRY_ASSIGN(const FxNodeId stub, w_.call(kFinalCallbacks, {}));
    (void)stub;
    CAPSIM_TRY(w_.graph.output({FxArg::of({})}));
    return run_end_capture_passes(w_.graph, w_.placeholders);
  }

 private:
  Status run_call(std::uint32_t index) {
    const AutogradNodeId v = b_.ordered_calls[index].node;
    const AutogradNode& node = g_.node(v);
    inputs_.call_index = index;
    Slots in = buffers_[v];
    run_pre_hooks(v, node, in);
    CAPSIM_TRY_ASSIGN(Slots out, apply(v, node, in));
    if (node.kind == AutogradNodeKind::kAotBackward ||
        node.kind == AutogradNodeKind::kAccumulateGrad) {
      for (const auto& e : g_.next_edges(v)) {
        if (e) (void)inputs_.size_list(g_.node(e->target).inputs[e->input_nr].meta.sizes.size());
      }
    } else {
      out = validate_outputs(w_, inputs_, g_, f_, v, out);
    }
    run_post_hooks(v, node, in, out);
    const auto edges = g_.next_edges(v);
    for (std::size_t i = 0; i < edges.size() && i < out.size(); ++i) {
      if (!edges[i] || !out[i]) continue;
      Slot& slot = buffers_[edges[i]->target][edges[i]->input_nr];
      slot = slot ? Slot(must(w_.call(kAdd, {FxArg::ref(*slot), FxArg::ref(*out[i])}))) : out[i];
    }
    return {};
  }

  void run_pre_hooks(AutogradNodeId v, const AutogradNode& node, Slots& in) {
    for (std::size_t h = 0; h < node.hooks.size(); ++h) {
      if (node.hooks[h] != AutogradHookKind::kTensorPre) continue;
      const FxNodeId hook_ref = w_.hook(v, h, false);
      const std::size_t slot = h < node.hook_inputs.size() ? node.hook_inputs[h] : 0;
      if (slot < in.size() && in[slot]) {
        in[slot] = w_.call_hook(hook_ref, {FxArg::ref(*in[slot])}, "tensor_pre_hook").node;
      }
    }
    for (std::size_t h = 0; h < node.hooks.size(); ++h) {
      if (node.hooks[h] != AutogradHookKind::kPre) continue;
      const FxArg hooked = w_.call_hook(w_.hook(v, h, false), {grads(in)}, "pre_hook");
      for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i]) in[i] = w_.getitem(hooked.node, static_cast<std::int64_t>(i));
      }
    }
  }

  void run_post_hooks(AutogradNodeId v, const AutogradNode& node, const Slots& in, Slots& out) {
    for (std::size_t h = 0; h < node.hooks.size(); ++h) {
      if (node.hooks[h] == AutogradHookKind::kPost) {
        const FxArg hooked =
            w_.call_hook(w_.hook(v, h, false), {grads(out), grads(in)}, "post_hook");
        for (std::size_t i = 0; i < out.size(); ++i) {
          if (out[i]) out[i] = w_.getitem(hooked.node, static_cast<std::int64_t>(i));
        }
      } else if (node.hooks[h] == AutogradHookKind::kPostAccGrad) {
        CAPSIM_CHECK(node.variable.has_value(), "a post-accumulate-grad hook off a leaf");
        (void)w_.call_hook(w_.hook(v, h, false), {inputs_.input({*node.variable, false})},
                           "post_acc_grad_hook");
      }
    }
  }

  Result<Slots> apply(AutogradNodeId v, const AutogradNode& node, const Slots& in) {
    switch (node.kind) {
      case AutogradNodeKind::kGraphRoot: {
        Slots out(node.num_outputs);
        for (std::size_t i = 0; i < out.size(); ++i)
          out[i] = inputs_.refs.at(inputs_.root_cursor++);
        return out;
      }
      case AutogradNodeKind::kAccumulateGrad:
        return apply_accumulate_grad(w_, inputs_, f_, node, in);
      case AutogradNodeKind::kFunctional:
      case AutogradNodeKind::kCopyBackwards:
      case AutogradNodeKind::kCppNode: {
        const std::string target = node.kind == AutogradNodeKind::kCopyBackwards
                                       ? std::string(kCopyBackwards)
                                       : std::string(kOps) + node.name;
        std::vector<FxArg> args{grads(in), needs_input_grad(g_, v)};
        for (FxArg& a : node_fields(w_, inputs_, v, node)) args.push_back(std::move(a));
        CAPSIM_TRY_ASSIGN(const FxNodeId op, w_.call(target, std::move(args)));
        return w_.unpack(op, node.num_outputs);
      }
      case AutogradNodeKind::kCopySlices: return apply_copy_slices(w_, inputs_, g_, v, node, in);
      case AutogradNodeKind::kPyNode: {
        const FxNodeId backward = w_.hook(v, 0, true);
        std::vector<FxArg> saved;
        for (TensorId t : node.saved_tensors) saved.push_back(inputs_.input({t, false}));
        std::vector<FxArg> args{FxArg::ref(backward), FxArg::tuple(std::move(saved))};
        for (const Slot& s : in) args.push_back(s ? FxArg::ref(*s) : FxArg::none());
        // A Python backward's symints reach it through its ctx, not the call.
        for (std::size_t i = 0; i < node.saved_sizes.size(); ++i) (void)inputs_.next_size();
        CAPSIM_TRY_ASSIGN(const FxNodeId op, w_.call(kCallBackward, std::move(args)));
        return w_.unpack(op, node.num_outputs);
      }
      case AutogradNodeKind::kAotBackward: return apply_aot_backward(w_, inputs_, f_, v, node, in);
    }
    return make_error("unknown node kind");
  }

  const AutogradGraph& g_;
  const CollectedBackward& b_;
  const CaGraphForm& f_;
  GraphWriter w_;
  LiftedInputs inputs_;
  std::vector<Slots> buffers_;
};

}  // namespace
}  // namespace release_form

Result<FxGraph> capture_release_form(const AutogradGraph& graph, const CollectedBackward& backward,
                                     const CaGraphForm& form) {
  release_form::ReleaseCapturer capturer(graph, backward, form);
  return capturer.run();
}

}  // namespace capsim
