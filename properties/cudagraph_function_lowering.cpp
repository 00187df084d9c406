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

// A body value: 0-d, or 1-d of `length` elements.
struct Value {
  bool scalar = false;
  std::int64_t length = 0;
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

// The values shaped like `a` (itself included), in index order: the partners
// a binary op may take without broadcasting.
std::vector<ValueIndex> same_shape(const std::vector<Value>& values, ValueIndex a) {
  std::vector<ValueIndex> c;
  for (ValueIndex v = 0; v < values.size(); ++v) {
    if (values[v].scalar == values[a].scalar && values[v].length == values[a].length) {
      c.push_back(v);
    }
  }
  return c;
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
Value lower_slice(const OpPlan& op, FunctionBuilder& f, const std::vector<Value>& values,
                  LoweredFunction& out) {
  const auto nv = static_cast<std::uint32_t>(values.size());
  std::vector<ValueIndex> c;
  for (ValueIndex v = 0; v < nv; ++v) {
    if (!values[v].scalar) c.push_back(v);
  }
  const ValueIndex s = c[op.a % c.size()];
  const std::int64_t len = values[s].length;
  const std::int64_t start = op.start % len;
  const std::int64_t end = start + 1 + static_cast<std::int64_t>(op.length % (len - start));
  f.slice(s, start, end);
  out.slices = true;
  return Value{false, end - start};
}

// A generic op over `a` (and a partner of its shape for the binary one), its
// result fresh and shaped like `a`: real aten ops that capsim runs from their
// metadata (docs/trace-format.md §4.1), as the third-party scripts have them.
// Its result's sizes are recorded, so the function is not resizable.
void lower_generic(const OpPlan& op, FunctionBuilder& f, const std::vector<Value>& values,
                   ValueIndex a, LoweredFunction& out) {
  out.generics = true;
  const Dims sizes = values[a].scalar ? Dims{} : Dims{values[a].length};
  TensorMeta meta = contiguous_meta(sizes).value();
  if (op.start % 2 == 0) {
    f.generic("aten.gelu.default", {a}, std::move(meta));
    return;
  }
  const auto c = same_shape(values, a);
  f.generic("aten.gelu_backward.default", {c[op.b % c.size()], a}, std::move(meta));
}

// Emits one planned op and returns the shape of its result. An in-place add
// with no input of its kind to mutate becomes a plain add.
Value lower_op(const OpPlan& op, FunctionBuilder& f, const std::vector<Value>& values,
               LoweredFunction& out) {
  const auto nv = static_cast<std::uint32_t>(values.size());
  const ValueIndex a = op.a % nv;
  PlanOp kind = op.op;
  std::vector<ValueIndex> targets;
  if (kind == PlanOp::kAddStatic) {
    targets = inputs_of(out.slots, {SlotKind::kParam, SlotKind::kMarked});
  }
  if (kind == PlanOp::kAddData) targets = inputs_of(out.slots, {SlotKind::kData});
  if ((kind == PlanOp::kAddStatic || kind == PlanOp::kAddData) && targets.empty()) {
    kind = PlanOp::kAdd;
  }
  Value result = values[a];
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
      result = Value{true, 0};
      break;
    case PlanOp::kSlice: result = lower_slice(op, f, values, out); break;
    case PlanOp::kGeneric: lower_generic(op, f, values, a, out); break;
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

  std::vector<Value> values(n, Value{false, numel});
  for (const OpPlan& op : p.ops) values.push_back(lower_op(op, f, values, out));
  const std::vector<ValueIndex> outs = pick_outputs(p.outputs, values.size());
  for (ValueIndex v : outs)
    out.output_full.push_back(!values[v].scalar && values[v].length == numel);
  out.def = f.returns(outs);
  declare_newer_facts(p, profile, out.def);
  return out;
}

}  // namespace capsim
