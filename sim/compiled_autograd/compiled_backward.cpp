// The FxGraph interpreter for functional captures, and the lowering.
//
// Each call_function target maps to what PyTorch's runtime function of the
// same name does (torch/_dynamo/compiled_autograd.py and external_utils.py):
// `ops.<Node>` runs the node's functional formula on the grads and saved
// values passed as arguments, `validate_outputs` reduces and casts, the
// CopySlices prologue and epilogue split CopySlices::apply, `call_hook` and
// `call_backward` call the lifted user code, `accumulate_grad_` accumulates
// into .grad, and the AOT prologue and copied graph run the region's backward.
#include "sim/compiled_autograd/compiled_backward.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "sim/autograd/autograd_backward_ops.hpp"

namespace capsim {

namespace {

// A value of the FX interpreter: what an FX node evaluates to.
struct FxValue {
  enum class Kind : std::uint8_t { kNone, kTensor, kInt, kFloat, kBool, kString, kList, kHook };
  Kind kind = Kind::kNone;
  TensorId tensor;
  std::int64_t i = 0;  // kInt, kHook (index into the hooks list)
  double f = 0.0;
  bool b = false;
  std::string s;
  std::vector<FxValue> list;

  static FxValue of_tensor(TensorId t) {
    FxValue v;
    v.kind = Kind::kTensor;
    v.tensor = t;
    return v;
  }
  static FxValue of_grads(const Grads& grads) {
    FxValue v;
    v.kind = Kind::kList;
    for (const auto& g : grads) v.list.push_back(g ? of_tensor(*g) : FxValue{});
    return v;
  }
};
using Kind = FxValue::Kind;

// --- Arguments ---------------------------------------------------------------

// An FX argument's value: a node's from `values` (the nodes run so far), a
// constant as itself.
FxValue fx_value(const FxArg& a, const std::vector<FxValue>& values) {
  FxValue v;
  switch (a.kind) {
    case FxArg::Kind::kNone: break;
    case FxArg::Kind::kNode: return values[a.node];
    case FxArg::Kind::kInt:
      v.kind = Kind::kInt;
      v.i = a.i;
      break;
    case FxArg::Kind::kFloat:
      v.kind = Kind::kFloat;
      v.f = a.f;
      break;
    case FxArg::Kind::kBool:
      v.kind = Kind::kBool;
      v.b = a.b;
      break;
    case FxArg::Kind::kString:
    case FxArg::Kind::kVerbatim:
    case FxArg::Kind::kKeyword:
      // Only the release form writes verbatim constants and keywords, and
      // it is printed, never run.
      v.kind = Kind::kString;
      v.s = a.text();
      break;
    case FxArg::Kind::kList:
    case FxArg::Kind::kTuple:
      v.kind = Kind::kList;
      for (const FxArg& x : a.items()) v.list.push_back(fx_value(x, values));
      break;
  }
  return v;
}

// The decoders of argument values; `what` names the argument in the error.
Result<TensorId> tensor(const FxValue& v, const char* what) {
  if (v.kind != Kind::kTensor) return make_error(fmt::format("{} is not a tensor", what));
  return v.tensor;
}
Result<std::int64_t> integer(const FxValue& v, const char* what) {
  if (v.kind != Kind::kInt) return make_error(fmt::format("{} is not an int", what));
  return v.i;
}
Result<Dims> int_list(const FxValue& v, const char* what) {
  if (v.kind != Kind::kList) return make_error(fmt::format("{} is not a list", what));
  Dims out;
  for (const FxValue& x : v.list) {
    CAPSIM_TRY_ASSIGN(const std::int64_t i, integer(x, what));
    out.push_back(i);
  }
  return out;
}
Result<Grads> grads(const FxValue& v, const char* what) {
  if (v.kind != Kind::kList) return make_error(fmt::format("{} is not a list", what));
  Grads out;
  for (const FxValue& x : v.list) {
    if (x.kind == Kind::kNone) {
      out.emplace_back();
      continue;
    }
    CAPSIM_TRY_ASSIGN(const TensorId t, tensor(x, what));
    out.emplace_back(t);
  }
  return out;
}
Result<std::vector<bool>> bools(const FxValue& v, const char* what) {
  if (v.kind != Kind::kList) return make_error(fmt::format("{} is not a list", what));
  std::vector<bool> out;
  for (const FxValue& x : v.list) {
    if (x.kind != Kind::kBool) return make_error(fmt::format("{} holds a non-bool", what));
    out.push_back(x.b);
  }
  return out;
}
Result<TensorGeometry> geometry(std::span<const FxValue> v) {
  if (v.size() < 3) return make_error("a geometry needs sizes, strides and an offset");
  TensorGeometry g;
  CAPSIM_TRY_ASSIGN(g.sizes, int_list(v[0], "geometry sizes"));
  CAPSIM_TRY_ASSIGN(g.strides, int_list(v[1], "geometry strides"));
  CAPSIM_TRY_ASSIGN(g.storage_offset, integer(v[2], "geometry offset"));
  return g;
}
Result<DType> dtype(const std::string& name) {
  const std::optional<DType> d = dtype_from_name(name);
  if (!d) return make_error(fmt::format("unknown dtype '{}'", name));
  return *d;
}

// The entry of the call's hooks list that a kHook value indexes.
Result<const LiftedHook*> lifted_hook(const CompiledBackwardCall& call, const FxValue& v) {
  if (v.kind != Kind::kHook || v.i < 0 || static_cast<std::size_t>(v.i) >= call.hooks.size()) {
    return make_error("not an entry of the hooks list");
  }
  return &call.hooks[static_cast<std::size_t>(v.i)];
}

constexpr AutogradNodeId kNoEngineNode = ~AutogradNodeId{0};

// A node of the graph being run, by the engine's id (none: no such node,
// which no engine map holds either).
AutogradNodeId engine_id(const CompiledBackwardCall& call, AutogradNodeId node) {
  return node < call.engine_ids.size() ? call.engine_ids[node] : kNoEngineNode;
}

// needs_input_grad of a node of the graph being run: which inputs have an edge.
std::vector<bool> needed_of(const AutogradGraph& graph, AutogradNodeId node) {
  std::vector<bool> out;
  for (const auto& e : graph.next_edges(node)) out.push_back(e.has_value());
  return out;
}

// The runtime lists that the graph's placeholders stand for (scalars: none).
Result<FxValue> placeholder(std::string_view name, const CompiledBackwardCall& call) {
  FxValue v;
  v.kind = Kind::kList;
  if (name == "inputs") {
    for (TensorId t : call.inputs) v.list.push_back(FxValue::of_tensor(t));
  } else if (name == "sizes") {
    for (std::int64_t s : call.sizes) {
      FxValue x;
      x.kind = Kind::kInt;
      x.i = s;
      v.list.push_back(x);
    }
  } else if (name == "hooks") {
    for (std::size_t k = 0; k < call.hooks.size(); ++k) {
      FxValue x;
      x.kind = Kind::kHook;
      x.i = static_cast<std::int64_t>(k);
      v.list.push_back(x);
    }
  } else if (name != "scalars") {
    return make_error("unknown placeholder");
  }
  return v;
}

// operator.getitem(list, index).
Result<FxValue> getitem(const std::vector<FxValue>& args) {
  if (args.size() != 2 || args[0].kind != Kind::kList) return make_error("getitem of a non-list");
  CAPSIM_TRY_ASSIGN(const std::int64_t i, integer(args[1], "the index"));
  if (i < 0 || static_cast<std::size_t>(i) >= args[0].list.size()) {
    return make_error(fmt::format("index {} out of range ({} items)", i, args[0].list.size()));
  }
  return args[0].list[static_cast<std::size_t>(i)];
}

// call_aot_bwd_prologue(saved, sizes, *grads): the grads, the copied graph's inputs.
FxValue aot_bwd_prologue(const std::vector<FxValue>& args) {
  FxValue out;
  out.kind = Kind::kList;
  for (std::size_t i = 2; i < args.size(); ++i) out.list.push_back(args[i]);
  return out;
}

// What an ops.<Node> call passes its formula after the grads and needs: the
// storage that FormulaInputs points into.
struct OpArgs {
  std::vector<TensorId> saved;
  std::optional<TensorGeometry> base, view;
  Dims sizes;
  std::vector<std::optional<DType>> dtypes;
};

// Decodes args[2...] of ops.<name>: saved..., [geometry...], sizes..., [dtypes].
Result<OpArgs> op_args(std::string_view name, const std::vector<FxValue>& args) {
  OpArgs op;
  std::size_t k = 2;
  for (; k < args.size() && args[k].kind == Kind::kTensor; ++k) op.saved.push_back(args[k].tensor);
  if (name == "AsStridedBackward0") {
    if (args.size() < k + 6) return make_error("AsStridedBackward0 without its geometry");
    CAPSIM_TRY_ASSIGN(op.base, geometry(std::span(args).subspan(k, 3)));
    CAPSIM_TRY_ASSIGN(op.view, geometry(std::span(args).subspan(k + 3, 3)));
    k += 6;
  }
  for (; k < args.size() && args[k].kind == Kind::kInt; ++k) op.sizes.push_back(args[k].i);
  if (k < args.size() && args[k].kind == Kind::kList) {
    for (const FxValue& d : args[k].list) {
      if (d.kind == Kind::kNone) {
        op.dtypes.emplace_back();
        continue;
      }
      if (d.kind != Kind::kString) return make_error("a dtype that is not a string");
      CAPSIM_TRY_ASSIGN(const DType dt, dtype(d.s));
      op.dtypes.emplace_back(dt);
    }
    ++k;
  }
  if (k != args.size()) return make_error(fmt::format("unexpected argument {}", k));
  return op;
}

}  // namespace

class CompiledBackwardRun : public BackwardOps {
 public:
  CompiledBackwardRun(AutogradEngine& engine, const AutogradGraph& graph, const FxGraph& fx,
                      const CompiledBackwardCall& call, const RunOptions& options)
      : BackwardOps(engine), graph_(graph), fx_(fx), call_(call), options_(options) {
    CAPSIM_CHECK_FAULT_SITE(options_.fault, FaultSite::kRun);
  }

  Status run() {
    values_.resize(fx_.nodes().size());
    for (FxNodeId id = 0; id < fx_.nodes().size(); ++id) {
      const FxNodeView node = fx_.node(id);
      auto v = eval(node);
      if (!v) {
        return make_error(fmt::format("compiled backward: node %{} ({}): {}", node.name(),
                                      node.target, v.error().message));
      }
      values_[id] = std::move(v).value();
    }
    return {};
  }

 private:
  Result<float> hook_scale(const FxValue& v) const {
    CAPSIM_TRY_ASSIGN(const LiftedHook* h, lifted_hook(call_, v));
    const std::optional<float> scale =
        h->backward ? std::nullopt : e_.hook_scale(engine_id(call_, h->node), h->index);
    if (!scale) return make_error(fmt::format("hooks[{}] is not a hook of node {}", v.i, h->node));
    return *scale;
  }

  // --- Evaluation ------------------------------------------------------------------
  Result<FxValue> eval(const FxNodeView& node) {
    if (node.op == FxOp::kPlaceholder) return placeholder(node.target, call_);
    if (node.op == FxOp::kOutput) return FxValue{};
    std::vector<FxValue> args;
    for (const FxArg& a : node.args) args.push_back(fx_value(a, values_));
    const std::string_view t = node.target;
    if (t == "operator.getitem") return getitem(args);
    if (t == "validate_outputs") return validate_outputs(args);
    if (t.rfind("ops.", 0) == 0) return node_op(t.substr(4), args);
    if (t == "copy_slices_prologue") return copy_slices_prologue(args);
    if (t == "copy_slices_epilogue") return copy_slices_epilogue(args);
    if (t == "call_hook") return call_hook(args);
    if (t == "call_backward") return call_backward(args);
    if (t == "call_aot_bwd_prologue") return aot_bwd_prologue(args);
    if (t == "torch.ops.aten.mul.Tensor") {
      if (args.size() != 2) return make_error("mul takes 2 arguments");
      CAPSIM_TRY_ASSIGN(const TensorId a, tensor(args[0], "self"));
      CAPSIM_TRY_ASSIGN(const TensorId b, tensor(args[1], "other"));
      CAPSIM_TRY_ASSIGN(const TensorId r, mul(a, b));
      return FxValue::of_tensor(r);
    }
    if (t == "torch.ops.aten.clone.default") {
      if (args.empty()) return make_error("clone takes 1 argument");
      CAPSIM_TRY_ASSIGN(const TensorId a, tensor(args[0], "self"));
      CAPSIM_TRY_ASSIGN(const TensorId r, clone(a));
      return FxValue::of_tensor(r);
    }
    if (t == "make_subclass") {
      if (args.size() != 2) return make_error("make_subclass takes 2 inner tensors");
      return args[0];  // ops downstream read the first inner tensor
    }
    if (t == "torch.add") {
      if (args.size() != 2) return make_error("torch.add takes 2 arguments");
      CAPSIM_TRY_ASSIGN(const TensorId a, tensor(args[0], "input"));
      CAPSIM_TRY_ASSIGN(const TensorId b, tensor(args[1], "other"));
      if (options_.fault == Fault::kDropFanInAdd) return args[0];
      CAPSIM_TRY_ASSIGN(const TensorId r, add(a, b));
      return FxValue::of_tensor(r);
    }
    if (t == "torch.ops.inductor.accumulate_grad_.default") {
      if (args.size() != 2) return make_error("accumulate_grad_ takes a param and a grad");
      CAPSIM_TRY_ASSIGN(const TensorId param, tensor(args[0], "param"));
      CAPSIM_TRY_ASSIGN(const TensorId grad, tensor(args[1], "grad"));
      // Compiled autograd's accumulate copies the first grad (no stealing).
      CAPSIM_TRY(accumulate(param, grad, /*stealable=*/false));
      return FxValue{};
    }
    if (t == "FakeCompiledAutogradEngine._exec_final_callbacks_stub") return FxValue{};
    return make_error("capsim runs functional captures only; this target is not executable");
  }
  // validate_outputs(grads, [[dtype, is_subclass, sizes] | None, ...]).
  Result<FxValue> validate_outputs(const std::vector<FxValue>& args) {
    if (args.size() != 2 || args[1].kind != Kind::kList) return make_error("bad arguments");
    CAPSIM_TRY_ASSIGN(Grads g, grads(args[0], "grads"));
    if (g.size() != args[1].list.size()) return make_error("grads and metadata differ in length");
    for (std::size_t i = 0; i < g.size(); ++i) {
      const FxValue& m = args[1].list[i];
      if (!g[i] || m.kind == Kind::kNone) continue;
      if (m.kind != Kind::kList || m.list.size() != 3 || m.list[0].kind != Kind::kString) {
        return make_error(fmt::format("metadata {} is not [dtype, is_subclass, sizes]", i));
      }
      CAPSIM_TRY_ASSIGN(const Dims sizes, int_list(m.list[2], "sizes"));
      CAPSIM_TRY_ASSIGN(TensorMeta want, contiguous_meta(sizes));
      CAPSIM_TRY_ASSIGN(want.dtype, dtype(m.list[0].s));
      CAPSIM_TRY_ASSIGN(g[i], validate_one("validate_outputs", i, *g[i], want, false));
    }
    return FxValue::of_grads(g);
  }

  // ops.<Node>(grads, needed, saved..., [geometry...], sizes..., [dtypes]).
  Result<FxValue> node_op(std::string_view name, const std::vector<FxValue>& args) {
    if (args.size() < 2) return make_error("an op takes grads and needs_input_grad first");
    CAPSIM_TRY_ASSIGN(const Grads in, grads(args[0], "grads"));
    CAPSIM_TRY_ASSIGN(const std::vector<bool> needed, bools(args[1], "needs_input_grad"));
    const auto first =
        std::find_if(in.begin(), in.end(), [](const auto& g) { return g.has_value(); });
    if (first == in.end()) return FxValue::of_grads(Grads(needed.size()));
    if (name.rfind("CppNode<", 0) == 0) {
      std::string cls(name);
      while (!cls.empty() && std::isdigit(static_cast<unsigned char>(cls.back()))) cls.pop_back();
      const auto node = call_.cpp_nodes.find(cls);
      const CustomFunction* fn =
          node == call_.cpp_nodes.end() ? nullptr : e_.custom_function(node->second);
      if (fn == nullptr) return make_error(fmt::format("no C++ Function {}", cls));
      CAPSIM_TRY_ASSIGN(const Grads out, custom(*fn, **first, needed));
      return FxValue::of_grads(out);
    }
    CAPSIM_TRY_ASSIGN(const OpArgs op, op_args(name, args));
    FormulaInputs f;
    f.name = name;
    f.saved = op.saved;
    f.sizes = op.sizes;
    f.base = op.base ? &*op.base : nullptr;
    f.view = op.view ? &*op.view : nullptr;
    f.dtypes = op.dtypes;
    CAPSIM_TRY_ASSIGN(const Grads out, formula(f, **first, needed));
    return FxValue::of_grads(out);
  }
  Result<FxValue> copy_slices_prologue(const std::vector<FxValue>& args) {
    if (args.size() != 7) return make_error("copy_slices_prologue takes grads and 2 geometries");
    CAPSIM_TRY_ASSIGN(const Grads in, grads(args[0], "grads"));
    if (in.empty() || !in[0]) return make_error("copy_slices_prologue without a grad");
    CAPSIM_TRY_ASSIGN(const TensorGeometry base, geometry(std::span(args).subspan(1, 3)));
    CAPSIM_TRY_ASSIGN(const TensorGeometry view, geometry(std::span(args).subspan(4, 3)));
    CAPSIM_TRY_ASSIGN(const CopySlicesPrologue p,
                      BackwardOps::copy_slices_prologue(*in[0], base, view));
    return FxValue::of_grads(Grads{p.result, p.grad_slice, p.grad_slice_clone});
  }

  // copy_slices_epilogue(needed, result, inner_grads, grad_slice).
  Result<FxValue> copy_slices_epilogue(const std::vector<FxValue>& args) {
    if (args.size() != 4) return make_error("copy_slices_epilogue takes 4 arguments");
    CAPSIM_TRY_ASSIGN(const std::vector<bool> needed, bools(args[0], "needs_input_grad"));
    CAPSIM_TRY_ASSIGN(const TensorId result, tensor(args[1], "result"));
    CAPSIM_TRY_ASSIGN(const Grads inner, grads(args[2], "inner grads"));
    CAPSIM_TRY_ASSIGN(const TensorId slice, tensor(args[3], "grad_slice"));
    CAPSIM_TRY_ASSIGN(
        const Grads out,
        BackwardOps::copy_slices_epilogue(needed, CopySlicesPrologue{result, slice, slice}, inner));
    return FxValue::of_grads(out);
  }

  Result<FxValue> call_hook(const std::vector<FxValue>& args) {
    if (args.size() < 3 || args.back().kind != Kind::kString) return make_error("bad call_hook");
    const std::string& type = args.back().s;
    CAPSIM_TRY_ASSIGN(const float scale, hook_scale(args[0]));
    if (type == "tensor_pre_hook") {
      CAPSIM_TRY_ASSIGN(const TensorId g, tensor(args[1], "grad"));
      CAPSIM_TRY_ASSIGN(const TensorId r, scaled(g, scale));
      return FxValue::of_tensor(r);
    }
    if (type == "pre_hook" || type == "post_hook") {
      CAPSIM_TRY_ASSIGN(Grads g, grads(args[1], "grads"));
      if (type == "post_hook" && options_.fault == Fault::kSkipPostHooks) {
        return FxValue::of_grads(g);
      }
      for (auto& x : g) {
        if (x) {
          CAPSIM_TRY_ASSIGN(x, scaled(*x, scale));
        }
      }
      return FxValue::of_grads(g);
    }
    if (type == "post_acc_grad_hook") {
      CAPSIM_TRY_ASSIGN(const TensorId leaf, tensor(args[1], "param"));
      CAPSIM_TRY(scale_grad(leaf, scale));
      return FxValue{};
    }
    return make_error(fmt::format("unknown hook type '{}'", type));
  }

  // call_backward(hooks[k], saved, grads...): a Python autograd.Function.
  Result<FxValue> call_backward(const std::vector<FxValue>& args) {
    if (args.size() < 3) return make_error("call_backward takes a backward, saved and grads");
    CAPSIM_TRY_ASSIGN(const LiftedHook* h, lifted_hook(call_, args[0]));
    const CustomFunction* fn =
        h->backward ? e_.custom_function(engine_id(call_, h->node)) : nullptr;
    if (fn == nullptr) return make_error("not a Python backward");
    std::optional<TensorId> g;
    for (std::size_t i = 2; i < args.size() && !g; ++i) {
      if (args[i].kind == Kind::kTensor) g = args[i].tensor;
    }
    const std::vector<bool> needed = needed_of(graph_, h->node);
    if (!g) return FxValue::of_grads(Grads(needed.size()));
    CAPSIM_TRY_ASSIGN(const Grads out, custom(*fn, *g, needed));
    return FxValue::of_grads(out);
  }

  const AutogradGraph& graph_;
  const FxGraph& fx_;
  const CompiledBackwardCall& call_;
  const RunOptions& options_;
  std::vector<FxValue> values_;
};

CompiledBackwardCall make_call(const AutogradEngine::BackwardGraph& bg,
                               const CollectedBackward& backward,
                               std::span<const TensorId> root_grads) {
  const AutogradGraph& graph = bg.graph;
  CompiledBackwardCall call;
  call.engine_ids = bg.engine_ids;
  call.inputs = backward.inputs;
  call.inputs.insert(call.inputs.end(), root_grads.begin(), root_grads.end());
  for (const SizeInput& s : backward.sizes) {
    if (s.dynamic) call.sizes.push_back(s.value);
  }
  call.hooks = backward.hooks;
  for (const NodeCall& nc : backward.ordered_calls) {
    const AutogradNode& node = graph.node(nc.node);
    if (node.kind == AutogradNodeKind::kCppNode) {
      call.cpp_nodes.emplace(node.name, bg.engine_id(nc.node));
    }
  }
  return call;
}

Status run_compiled_backward(AutogradEngine& engine, const AutogradGraph& graph, const FxGraph& fx,
                             const CompiledBackwardCall& call, const RunOptions& options) {
  StepProgram* const previous = engine.record_launches_into(options.record);
  Status status;
  {
    CompiledBackwardRun run(engine, graph, fx, call, options);
    status = run.run();
  }
  (void)engine.record_launches_into(previous);
  return status;
}

Result<StepProgram> lower_compiled_backward(AutogradEngine& engine, const AutogradGraph& graph,
                                            const FxGraph& fx, const CompiledBackwardCall& call) {
  StepProgram program;
  program.name = fx.name();
  RunOptions options;
  options.record = &program;
  CAPSIM_TRY(run_compiled_backward(engine, graph, fx, call, options));
  CAPSIM_TRY(validate(program));
  return program;
}

}  // namespace capsim
