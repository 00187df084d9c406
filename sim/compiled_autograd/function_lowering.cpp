// A functional capture lowered to a cudagraph-tree FunctionDef, and the inputs it is called
// with (see function_lowering.hpp).
#include "sim/compiled_autograd/function_lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "sim/core/function_builder.hpp"

namespace capsim {

namespace {

// What an FX node lowers to: a body value with its sizes, a list, or a constant.
struct Lowered {
  enum class Kind : std::uint8_t { kNone, kValue, kList, kInt, kBool, kString, kOpaque };
  Kind kind = Kind::kNone;
  ValueIndex value = 0;
  Dims sizes;
  std::vector<Lowered> list;
  std::int64_t i = 0;
  bool b = false;
  std::string s;

  static Lowered of(ValueIndex v, Dims sizes) {
    Lowered l;
    l.kind = Kind::kValue;
    l.value = v;
    l.sizes = std::move(sizes);
    return l;
  }
};
using Kind = Lowered::Kind;

// An FX argument as a lowered value: a node's by its lowering in `values`,
// a constant as itself.
Lowered lowered_arg(const FxArg& a, const std::vector<Lowered>& values) {
  Lowered l;
  switch (a.kind) {
    case FxArg::Kind::kNone: break;
    case FxArg::Kind::kNode: return values[a.node];
    case FxArg::Kind::kInt:
      l.kind = Kind::kInt;
      l.i = a.i;
      break;
    case FxArg::Kind::kBool:
      l.kind = Kind::kBool;
      l.b = a.b;
      break;
    case FxArg::Kind::kString:
      l.kind = Kind::kString;
      l.s = a.text();
      break;
    case FxArg::Kind::kFloat:
    case FxArg::Kind::kVerbatim:
    case FxArg::Kind::kKeyword: l.kind = Kind::kOpaque; break;
    case FxArg::Kind::kList:
    case FxArg::Kind::kTuple:
      l.kind = Kind::kList;
      for (const FxArg& x : a.items()) l.list.push_back(lowered_arg(x, values));
      break;
  }
  return l;
}

// The body value that an argument must be (`what` names it in the error).
Result<const Lowered*> value(const Lowered& l, const char* what) {
  if (l.kind != Kind::kValue) return make_error(fmt::format("{} is not a tensor", what));
  return &l;
}

// The first defined grad of an op's grads list, and its needs_input_grad.
Result<std::pair<std::optional<Lowered>, std::vector<bool>>> grads_and_needs(
    const std::vector<Lowered>& args) {
  if (args.size() < 2 || args[0].kind != Kind::kList || args[1].kind != Kind::kList) {
    return make_error("an op takes grads and needs_input_grad first");
  }
  std::optional<Lowered> g;
  for (const Lowered& x : args[0].list) {
    if (x.kind == Kind::kValue) {
      g = x;
      break;
    }
  }
  std::vector<bool> needed;
  for (const Lowered& x : args[1].list) needed.push_back(x.kind == Kind::kBool && x.b);
  return std::pair{g, needed};
}

// getitem of a lowered list (of the `inputs` placeholder or an op's grads).
Result<Lowered> lower_getitem(const std::vector<Lowered>& args) {
  if (!args.empty() && args[0].kind == Kind::kOpaque) {
    return make_error(fmt::format(
        "getitem of `{}`: a function body has no such input (hooks and dynamic sizes do not "
        "lower yet)",
        args[0].s));
  }
  if (args.size() != 2 || args[0].kind != Kind::kList || args[1].kind != Kind::kInt ||
      args[1].i < 0 || static_cast<std::size_t>(args[1].i) >= args[0].list.size()) {
    return make_error("a getitem this lowering cannot follow (sizes, hooks or out of range)");
  }
  return args[0].list[static_cast<std::size_t>(args[1].i)];
}

// validate_outputs, lowered only where it is the identity on its grads.
Result<Lowered> lower_validate_outputs(const std::vector<Lowered>& args) {
  // Only the identity case lowers: no sum_to and no cast.
  if (args.size() != 2 || args[0].kind != Kind::kList || args[1].kind != Kind::kList ||
      args[0].list.size() != args[1].list.size()) {
    return make_error("bad arguments");
  }
  for (std::size_t i = 0; i < args[0].list.size(); ++i) {
    const Lowered& g = args[0].list[i];
    const Lowered& m = args[1].list[i];
    if (g.kind != Kind::kValue || m.kind != Kind::kList) continue;
    if (m.list.size() != 3 || m.list[0].s != "float32") {
      return make_error(fmt::format("output {} would be cast", i));
    }
    Dims want;
    for (const Lowered& d : m.list[2].list) {
      if (d.kind != Kind::kInt) return make_error("a dynamic size");
      want.push_back(d.i);
    }
    if (want != g.sizes) return make_error(fmt::format("output {} would be reduced", i));
  }
  return args[0];
}

// The engine's backward nodes that have body ops; the rest do not lower.
bool is_lowerable_backward_op(std::string_view t) {
  return t == "ops.MulBackward0" || t == "ops.AddBackward0" || t == "ops.CloneBackward0" ||
         t == "ops.SumBackward0" || t == "ops.ReluBackward0" || t == "ops.MmBackward0";
}

// AddBackward0 and CloneBackward0: every needed input gets the grad itself.
void pass_grad_through(const Lowered& g, const std::vector<bool>& needed, Lowered& out) {
  for (std::size_t k = 0; k < needed.size(); ++k) {
    if (needed[k]) out.list[k] = g;
  }
}

// The lowering of one FxGraph into a FunctionDef body: one body op per FX node.
class FunctionLowering {
 public:
  FunctionLowering(const FxGraph& fx, std::string name, std::span<const Dims> sizes,
                   std::vector<std::string> names, std::vector<std::uint32_t> params,
                   const LowerOptions& options)
      : fx_(fx),
        options_(options),
        sizes_(sizes),
        f_(std::move(name), options.mode, std::move(names)) {
    f_.params(params);
    f_.static_inputs(std::move(params));
  }

  Result<CompiledBackwardFunction> run() {
    values_.resize(fx_.nodes().size());
    for (FxNodeId id = 0; id < fx_.nodes().size(); ++id) {
      const FxNodeView node = fx_.node(id);
      auto v = lower(node);
      if (!v) {
        return with_context(fmt::format("lowering %{} ({})", node.name(), node.target), v.error());
      }
      values_[id] = std::move(v).value();
    }
    CompiledBackwardFunction out;
    out.def = f_.returns(outputs_);
    out.grad_of = std::move(grad_of_);
    CAPSIM_TRY(validate(out.def));
    return out;
  }

 private:
  Result<Lowered> mul(const Lowered& a, const Lowered& b) {
    CAPSIM_TRY_ASSIGN(const Dims sizes, broadcast_shape(a.sizes, b.sizes));
    return Lowered::of(f_.mul(a.value, b.value), sizes);
  }

  Result<Lowered> lower(const FxNodeView& node) {
    if (node.op == FxOp::kOutput) return Lowered{};
    if (node.op == FxOp::kPlaceholder) return lower_placeholder(node);
    std::vector<Lowered> args;
    for (const FxArg& a : node.args) args.push_back(lowered_arg(a, values_));
    const std::string_view t = node.target;
    if (t == "operator.getitem") return lower_getitem(args);
    if (t == "validate_outputs") return lower_validate_outputs(args);
    if (is_lowerable_backward_op(t)) return lower_backward_op(t, args);
    if (t == "torch.add") return lower_add(args);
    if (t == "torch.ops.inductor.accumulate_grad_.default") return lower_accumulate_grad(args);
    if (t == "FakeCompiledAutogradEngine._exec_final_callbacks_stub") return Lowered{};
    return make_error("not lowerable to a cudagraph function body (no body op for it yet)");
  }

  // Only the `inputs` placeholder becomes body values; the others stay opaque.
  Lowered lower_placeholder(const FxNodeView& node) {
    Lowered l;
    if (node.target == "sizes" && !options_.sizes.empty()) {
      l.kind = Kind::kList;
      for (std::int64_t v : options_.sizes) {
        Lowered size;
        size.kind = Kind::kInt;
        size.i = v;
        l.list.push_back(std::move(size));
      }
      return l;
    }
    if (node.target != "inputs") {
      l.kind = Kind::kOpaque;  // sizes, scalars, hooks: unusable in a body
      l.s = node.target;
      return l;
    }
    l.kind = Kind::kList;
    for (std::size_t i = 0; i < sizes_.size(); ++i) {
      l.list.push_back(Lowered::of(f_.input(static_cast<std::uint32_t>(i)), sizes_[i]));
    }
    return l;
  }

  // A backward op lowers to a list with one slot per input: the grad where
  // needs_input_grad asks for one, none elsewhere (and all none without a grad).
  Result<Lowered> lower_backward_op(std::string_view t, const std::vector<Lowered>& args) {
    CAPSIM_TRY_ASSIGN(const auto gn, grads_and_needs(args));
    const auto& [g, needed] = gn;
    Lowered out;
    out.kind = Kind::kList;
    out.list.resize(needed.size());
    if (!g) return out;
    if (t == "ops.MulBackward0") {
      CAPSIM_TRY(mul_backward(args, *g, needed, out));
    } else if (t == "ops.ReluBackward0") {
      CAPSIM_TRY(relu_backward(args, *g, needed, out));
    } else if (t == "ops.MmBackward0") {
      CAPSIM_TRY(mm_backward(args, *g, needed, out));
    } else if (t == "ops.SumBackward0") {
      CAPSIM_TRY(sum_backward(args, *g, needed, out));
    } else {
      pass_grad_through(*g, needed, out);
    }
    return out;
  }

  Status mul_backward(const std::vector<Lowered>& args, const Lowered& g,
                      const std::vector<bool>& needed, Lowered& out) {
    if (args.size() < 4) return make_error("MulBackward0 without self and other");
    CAPSIM_TRY_ASSIGN(const Lowered* self, value(args[2], "self"));
    CAPSIM_TRY_ASSIGN(const Lowered* other, value(args[3], "other"));
    if (!needed.empty() && needed[0]) {
      CAPSIM_TRY_ASSIGN(out.list[0], mul(g, *other));
    }
    if (needed.size() > 1 && needed[1]) {
      CAPSIM_TRY_ASSIGN(out.list[1], mul(g, *self));
    }
    return {};
  }

  Status relu_backward(const std::vector<Lowered>& args, const Lowered& g,
                       const std::vector<bool>& needed, Lowered& out) {
    if (args.size() < 3) return make_error("ReluBackward0 without its result");
    CAPSIM_TRY_ASSIGN(const Lowered* result, value(args[2], "result"));
    if (!needed.empty() && needed[0]) {
      out.list[0] = Lowered::of(f_.relu_backward(g.value, result->value), g.sizes);
    }
    return {};
  }

  Status mm_backward(const std::vector<Lowered>& args, const Lowered& g,
                     const std::vector<bool>& needed, Lowered& out) {
    // grad_self = grad @ mat2.t(), grad_mat2 = self.t() @ grad, as the engine.
    if (args.size() < 4) return make_error("MmBackward0 without self and mat2");
    CAPSIM_TRY_ASSIGN(const Lowered* self, value(args[2], "self"));
    CAPSIM_TRY_ASSIGN(const Lowered* mat2, value(args[3], "mat2"));
    if (g.sizes.size() != 2 || self->sizes.size() != 2 || mat2->sizes.size() != 2) {
      return make_error("MmBackward0 of operands that are not 2-d");
    }
    if (!needed.empty() && needed[0]) {
      out.list[0] = Lowered::of(f_.mm(g.value, f_.t(mat2->value)), {g.sizes[0], mat2->sizes[0]});
    }
    if (needed.size() > 1 && needed[1]) {
      out.list[1] = Lowered::of(f_.mm(f_.t(self->value), g.value), {self->sizes[1], g.sizes[1]});
    }
    return {};
  }

  Status sum_backward(const std::vector<Lowered>& args, const Lowered& g,
                      const std::vector<bool>& needed, Lowered& out) {
    Dims sizes;
    for (std::size_t k = 2; k < args.size(); ++k) {
      if (args[k].kind != Kind::kInt) return make_error("a dynamic size");
      sizes.push_back(args[k].i);
    }
    // expand(grad, sizes) as a body op: ones(sizes) * grad, bitwise the grad.
    // The full op is emitted even when no grad is needed, so the body's value
    // numbering does not depend on needs_input_grad.
    const Lowered ones = Lowered::of(f_.full(sizes, 1.0f), sizes);
    if (!needed.empty() && needed[0]) {
      CAPSIM_TRY_ASSIGN(out.list[0], mul(ones, g));
    }
    return {};
  }

  Result<Lowered> lower_add(const std::vector<Lowered>& args) {
    if (args.size() != 2) return make_error("torch.add takes 2 arguments");
    CAPSIM_TRY_ASSIGN(const Lowered* a, value(args[0], "input"));
    CAPSIM_TRY_ASSIGN(const Lowered* b, value(args[1], "other"));
    if (options_.drop_fan_in_add) return *a;
    CAPSIM_TRY_ASSIGN(const Dims sizes, broadcast_shape(a->sizes, b->sizes));
    return Lowered::of(f_.add(a->value, b->value), sizes);
  }

  // Records the grad as the function's output for the param; lowers to nothing.
  Result<Lowered> lower_accumulate_grad(const std::vector<Lowered>& args) {
    if (args.size() != 2) return make_error("accumulate_grad_ takes a param and a grad");
    CAPSIM_TRY_ASSIGN(const Lowered* param, value(args[0], "param"));
    CAPSIM_TRY_ASSIGN(const Lowered* grad, value(args[1], "grad"));
    if (param->value >= sizes_.size()) return make_error("the param is not an input");
    // A grad that is an input (the root grad passed through) or another
    // param's grad too is copied, as compiled autograd's accumulate copies
    // the first grad: outputs never alias inputs or each other.
    const bool shared = grad->value < sizes_.size() ||
                        std::find(outputs_.begin(), outputs_.end(), grad->value) != outputs_.end();
    const ValueIndex v = shared ? f_.clone(grad->value) : grad->value;
    outputs_.push_back(v);
    grad_of_.push_back(param->value);
    return Lowered{};
  }

  const FxGraph& fx_;
  const LowerOptions& options_;
  std::span<const Dims> sizes_;
  FunctionBuilder f_;
  std::vector<Lowered> values_;
  std::vector<ValueIndex> outputs_;
  std::vector<std::uint32_t> grad_of_;
};

}  // namespace

Result<CompiledBackwardFunction> to_function_def(const FxGraph& fx, std::string name,
                                                 std::span<const Dims> input_sizes,
                                                 std::vector<std::string> input_names,
                                                 std::vector<std::uint32_t> param_input_idxs,
                                                 const LowerOptions& options) {
  if (input_names.size() != input_sizes.size()) {
    return make_error(fmt::format("lowering {}: {} input names for {} inputs", name,
                                  input_names.size(), input_sizes.size()));
  }
  FunctionLowering lowering(fx, std::move(name), input_sizes, std::move(input_names),
                            std::move(param_input_idxs), options);
  return lowering.run();
}

Result<FunctionInputs> function_inputs(const AutogradEngine& engine, const TensorStore& store,
                                       const CompiledBackwardCall& call) {
  FunctionInputs out;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    CAPSIM_TRY_ASSIGN(const Tensor t, store.tensor(call.inputs[i]));
    out.sizes.push_back(t.meta.sizes);
    out.names.push_back(fmt::format("inputs_{}", i));
    const Result<Variable> v = engine.variable(call.inputs[i]);
    if (v.ok() && v->requires_grad && !v->grad_fn) {
      out.params.push_back(static_cast<std::uint32_t>(i));
    }
  }
  return out;
}

}  // namespace capsim
