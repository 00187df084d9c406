// One planned function lowered to a valid FunctionDef: its input slots, its
// ops (a slice's bounds inside its value, an in-place add only where an
// input of its kind exists) and its outputs.
#include "properties/cudagraph_function_lowering.hpp"

#include <fmt/format.h>

#include "model/check.hpp"
#include "properties/cudagraph_programs_newer.hpp"
#include "sim/core/function_builder.hpp"

namespace capsim {

namespace {

// A body value: 0-d, or 1-d of `length` elements, of `dtype`. Only generic
// ops make values of other dtypes than float32, and only they read them: the
// exact kernels take float32 (kernel_launch.cpp).
struct BodyValue {
  bool scalar = false;
  std::int64_t length = 0;
  DType dtype = DType::kFloat32;
};

// The function's input slots, in order: saved, params, marked, data. A
// backward takes saved tensors and no params or marked ones; every function
// takes at least one input.
std::vector<SlotKind> slot_kinds(const FunctionPlan& p, std::uint32_t program_params) {
  std::uint32_t params = 0, marked = 0, saved = 0, data = p.data % 3;
  if (p.mode == CompilationMode::kBackward) {
    saved = 1 + p.saved % 2;
  } else {
    params = std::min(p.params % 3, program_params);
    marked = p.marked % 2;
  }
  if (params + marked + saved + data == 0) data = 1;
  std::vector<SlotKind> slots;
  for (std::uint32_t i = 0; i < saved; ++i) slots.push_back(SlotKind::kSaved);
  for (std::uint32_t i = 0; i < params; ++i) slots.push_back(SlotKind::kParam);
  for (std::uint32_t i = 0; i < marked; ++i) slots.push_back(SlotKind::kMarked);
  for (std::uint32_t i = 0; i < data; ++i) slots.push_back(SlotKind::kData);
  return slots;
}

// Tells the builder which slots are static and which are params.
void declare_static_inputs(FunctionBuilder& f, const std::vector<SlotKind>& slots,
                           CompilationMode mode) {
  const auto n = static_cast<std::uint32_t>(slots.size());
  std::vector<std::uint32_t> static_idxs, param_idxs;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (slots[i] == SlotKind::kSaved) static_idxs.push_back(i);
    if (slots[i] == SlotKind::kParam) {
      param_idxs.push_back(i);
      // A forward's lifted params are in its compile-time static set.
      if (mode == CompilationMode::kForward) static_idxs.push_back(i);
    }
  }
  f.static_inputs(static_idxs).params(param_idxs);
}

bool same_shape_as(const BodyValue& v, const BodyValue& a) {
  return v.scalar == a.scalar && v.length == a.length;
}

// A value's sizes: {} or {length}.
Dims sizes_of(const BodyValue& v) {
  return v.scalar ? Dims{} : Dims{v.length};
}

// The values that satisfy `keep`, in index order.
template <typename Pred>
std::vector<ValueIndex> values_where(const std::vector<BodyValue>& values, Pred keep) {
  std::vector<ValueIndex> c;
  for (ValueIndex v = 0; v < values.size(); ++v) {
    if (keep(values[v])) c.push_back(v);
  }
  return c;
}

// The values shaped like `a` and of its dtype (itself included), in index
// order: the partners a binary op may take without broadcasting or casting.
std::vector<ValueIndex> same_shape(const std::vector<BodyValue>& values, ValueIndex a) {
  const BodyValue& of = values[a];
  return values_where(
      values, [&](const BodyValue& v) { return same_shape_as(v, of) && v.dtype == of.dtype; });
}

// The values of `dtype`, in index order (never empty for float32: every
// input is float32).
std::vector<ValueIndex> of_dtype(const std::vector<BodyValue>& values, DType dtype) {
  return values_where(values, [dtype](const BodyValue& v) { return v.dtype == dtype; });
}

// The input slots of any of `kinds`, in slot order.
std::vector<ValueIndex> inputs_of(const std::vector<SlotKind>& slots,
                                  std::initializer_list<SlotKind> kinds) {
  const auto n = static_cast<std::uint32_t>(slots.size());
  std::vector<ValueIndex> c;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (std::find(kinds.begin(), kinds.end(), slots[i]) != kinds.end()) c.push_back(i);
  }
  return c;
}

// A slice of a 1-d value, its bounds inside that value's length. Marks the
// function as slicing: its bounds hold at this numel only.
BodyValue lower_slice(const OpPlan& op, FunctionBuilder& f, const std::vector<BodyValue>& values,
                      LoweredFunction& out) {
  const std::vector<ValueIndex> c = values_where(
      values, [](const BodyValue& v) { return !v.scalar && v.dtype == DType::kFloat32; });
  const ValueIndex s = c[op.a % c.size()];
  const std::int64_t len = values[s].length;
  const std::int64_t start = op.start % len;
  const std::int64_t end = start + 1 + static_cast<std::int64_t>(op.length % (len - start));
  f.slice(s, start, end);
  out.slices = true;
  return BodyValue{false, end - start};
}

// The generic ops of generated bodies: real aten ops that capsim runs from
// their metadata (docs/trace-format.md §4.1), as the third-party scripts have
// them, in the dtypes real scripts give them: a comparison's bool mask and
// the where that reads it (leaky_relu in dcgan's trace), and the casts of
// mixed precision to and from bfloat16 and float16.
enum class GenericPick : std::uint8_t { kGelu, kGeluBackward, kGreater, kWhere, kCast };

// The op a generic plan makes, and the value it reads first. A where reads a
// mask when there is one (else it compares), a cast takes a half value back
// to float32 when there is one, and gelu reads a half value every other time
// there is one: otherwise chains through the new dtypes would be rare.
GenericPick pick_generic(const OpPlan& op, const std::vector<BodyValue>& values, ValueIndex& a) {
  auto pick = static_cast<GenericPick>(op.start % 5);
  const std::vector<ValueIndex> masks = of_dtype(values, DType::kBool);
  // Neither float32 nor bool: what casts down made.
  const std::vector<ValueIndex> halves = values_where(values, [](const BodyValue& v) {
    return v.dtype != DType::kFloat32 && v.dtype != DType::kBool;
  });
  if (pick == GenericPick::kWhere && !masks.empty()) a = masks[op.a % masks.size()];
  if (pick == GenericPick::kCast && !halves.empty() && op.b % 2 == 0) {
    a = halves[op.a % halves.size()];
  }
  if (pick == GenericPick::kGelu && !halves.empty() && op.b % 2 == 0) {
    a = halves[op.a % halves.size()];
  }
  if (values[a].dtype == DType::kBool) return GenericPick::kWhere;  // a mask is only read by where
  if (pick == GenericPick::kWhere) return GenericPick::kGreater;    // no mask: make one
  return pick;
}

// A cast of `a` to `dtype`, its result shaped like `a`.
BodyValue cast(FunctionBuilder& f, ValueIndex a, BodyValue in, DType dtype) {
  in.dtype = dtype;
  f.generic("aten._to_copy.default", {a}, contiguous_meta(sizes_of(in), dtype).value(),
            fmt::format("dtype=torch.{}", dtype_name(dtype)));
  return in;
}

// An autocast region over the float32 value `a`: a cast down to a half type,
// a gelu in it, and the cast back to float32 that is the plan op's result.
// The two half values join `values` (later ops may read them).
BodyValue lower_autocast(const OpPlan& op, FunctionBuilder& f, std::vector<BodyValue>& values,
                         ValueIndex a) {
  const DType half = op.length % 2 == 0 ? DType::kBFloat16 : DType::kFloat16;
  const BodyValue in = values[a];
  values.push_back(cast(f, a, in, half));
  const auto down = static_cast<ValueIndex>(values.size() - 1);
  CAPSIM_CHECK(f.generic("aten.gelu.default", {down},
                         contiguous_meta(sizes_of(in), half).value()) == down + 1);
  values.push_back(values[down]);
  return cast(f, down + 1, values[down], DType::kFloat32);
}

// One generic op, its first operand `a` unless pick_generic chooses another,
// with one fresh result of that operand's shape and of the dtype it returns
// (for a cast of a float32 value, an autocast region).
BodyValue lower_generic(const OpPlan& op, FunctionBuilder& f, std::vector<BodyValue>& values,
                        ValueIndex a, LoweredFunction& out) {
  out.generics = true;  // its result's sizes are recorded: not resizable
  const GenericPick pick = pick_generic(op, values, a);
  const BodyValue in = values[a];
  if (pick == GenericPick::kCast) {
    return in.dtype == DType::kFloat32 ? lower_autocast(op, f, values, a)
                                       : cast(f, a, in, DType::kFloat32);
  }
  BodyValue result = in;
  std::vector<ValueIndex> args{a};
  std::string attrs;
  const char* target = "aten.gelu.default";
  switch (pick) {
    case GenericPick::kGelu:
    case GenericPick::kCast: break;
    case GenericPick::kGeluBackward: {
      const auto c = same_shape(values, a);
      args = {c[op.b % c.size()], a};
      target = "aten.gelu_backward.default";
      break;
    }
    case GenericPick::kGreater:
      target = "aten.gt.Scalar";
      attrs = "0.0";
      result.dtype = DType::kBool;
      break;
    case GenericPick::kWhere: {
      // Both branches shaped like the mask and of one floating dtype; the
      // mask was computed from such a value, so there is one.
      const std::vector<ValueIndex> c = values_where(values, [&](const BodyValue& v) {
        return same_shape_as(v, in) && v.dtype != DType::kBool;
      });
      CAPSIM_CHECK(!c.empty());
      const ValueIndex x = c[op.b % c.size()];
      const auto y = same_shape(values, x);
      args = {a, x, y[op.length % y.size()]};
      target = "aten.where.self";
      result.dtype = values[x].dtype;
      break;
    }
  }
  f.generic(target, std::move(args), contiguous_meta(sizes_of(in), result.dtype).value(),
            std::move(attrs));
  return result;
}

// Emits one planned op and returns the shape of its result. An in-place add
// with no input of its kind to mutate becomes a plain add.
// A generic op may append values of its own before its result (an autocast
// region's half values).
BodyValue lower_op(const OpPlan& op, FunctionBuilder& f, std::vector<BodyValue>& values,
                   LoweredFunction& out) {
  const auto nv = static_cast<std::uint32_t>(values.size());
  ValueIndex a = op.a % nv;
  PlanOp kind = op.op;
  if (kind != PlanOp::kGeneric && values[a].dtype != DType::kFloat32) {
    const auto c = of_dtype(values, DType::kFloat32);  // exact kernels read float32
    a = c[op.a % c.size()];
  }
  std::vector<ValueIndex> targets;
  if (kind == PlanOp::kAddStatic) {
    targets = inputs_of(out.slots, {SlotKind::kParam, SlotKind::kMarked});
  }
  if (kind == PlanOp::kAddData) targets = inputs_of(out.slots, {SlotKind::kData});
  if ((kind == PlanOp::kAddStatic || kind == PlanOp::kAddData) && targets.empty()) {
    kind = PlanOp::kAdd;
  }
  BodyValue result = values[a];
  switch (kind) {
    case PlanOp::kAdd:
    case PlanOp::kMul: {
      const auto c = same_shape(values, a);
      const ValueIndex b = c[op.b % c.size()];
      if (kind == PlanOp::kAdd) {
        f.add(a, b);
      } else {
        f.mul(a, b);
      }
      break;
    }
    case PlanOp::kNeg: f.neg(a); break;
    case PlanOp::kRelu: f.relu(a); break;
    case PlanOp::kClone: f.clone(a); break;
    case PlanOp::kAlias: f.alias(a); break;
    case PlanOp::kSum:
      f.sum(a);
      result = BodyValue{true, 0};
      break;
    case PlanOp::kSlice: result = lower_slice(op, f, values, out); break;
    case PlanOp::kGeneric: result = lower_generic(op, f, values, a, out); break;
    case PlanOp::kAddStatic:
    case PlanOp::kAddData: {
      const ValueIndex t = targets[op.a % targets.size()];
      const auto c = same_shape(values, t);
      f.add_(t, c[op.b % c.size()]);
      result = values[t];
      out.mutates = true;
      break;
    }
  }
  return result;
}

// At most three of the planned outputs, or else the last value.
std::vector<ValueIndex> pick_outputs(const std::vector<std::uint32_t>& picks,
                                     std::size_t value_count) {
  std::vector<ValueIndex> outs;
  for (std::uint32_t pick : picks) {
    if (outs.size() == 3) break;
    outs.push_back(pick % static_cast<std::uint32_t>(value_count));
  }
  if (outs.empty()) outs.push_back(static_cast<ValueIndex>(value_count - 1));
  return outs;
}

}  // namespace

LoweredFunction lower_function(const FunctionPlan& p, std::size_t index,
                               std::uint32_t program_params, std::int64_t numel,
                               TorchProfile profile) {
  LoweredFunction out;
  out.slots = slot_kinds(p, program_params);
  const auto n = static_cast<std::uint32_t>(out.slots.size());

  FunctionBuilder f(fmt::format("f{}", index), p.mode, primal_names(n));
  declare_static_inputs(f, out.slots, p.mode);

  std::vector<BodyValue> values(n, BodyValue{false, numel});
  for (const OpPlan& op : p.ops) {
    const BodyValue result = lower_op(op, f, values, out);
    values.push_back(result);
  }
  const std::vector<ValueIndex> outs = pick_outputs(p.outputs, values.size());
  for (ValueIndex v : outs)
    out.output_full.push_back(!values[v].scalar && values[v].length == numel &&
                              values[v].dtype == DType::kFloat32);
  out.def = f.returns(outs);
  declare_newer_facts(p, profile, out.def);
  return out;
}

}  // namespace capsim
