// run_body_with_autograd (autograd_body.hpp).
#include "sim/autograd/autograd_body.hpp"

#include <fmt/format.h>

namespace capsim {

namespace {

// The body interpreter's limits, checked before the engine allocates.
Status check_limits(const TensorStore& store, const BodyOp& op, std::span<const Variable> a) {
  if (op.kind == BodyOpKind::kAdd || op.kind == BodyOpKind::kMul) {
    CAPSIM_TRY_ASSIGN(const Tensor x, store.tensor(a[0].tensor));
    CAPSIM_TRY_ASSIGN(const Tensor y, store.tensor(a[1].tensor));
    CAPSIM_TRY_ASSIGN(const Dims sizes, broadcast_shape(x.meta.sizes, y.meta.sizes));
    return check_value_sizes(sizes);
  }
  if (op.kind == BodyOpKind::kMm) {
    CAPSIM_TRY_ASSIGN(const Tensor x, store.tensor(a[0].tensor));
    CAPSIM_TRY_ASSIGN(const Tensor y, store.tensor(a[1].tensor));
    if (x.meta.sizes.size() != 2 || y.meta.sizes.size() != 2) {
      return make_error("mm: both operands must be 2-d");
    }
  }
  return {};
}

Result<Variable> run_op(AutogradEngine& e, const BodyOp& op, std::span<const Variable> a) {
  CAPSIM_TRY(check_limits(e.store(), op, a));
  switch (op.kind) {
    case BodyOpKind::kAdd: return e.add(a[0], a[1]);
    case BodyOpKind::kMul: return e.mul(a[0], a[1]);
    case BodyOpKind::kSum:
      if (op.dims || op.keepdim) break;  // SumBackward1 is not modelled
      return e.sum(a[0]);
    case BodyOpKind::kMm: return e.mm(a[0], a[1]);
    case BodyOpKind::kRelu: return e.relu(a[0]);
    case BodyOpKind::kClone: return e.clone(a[0]);
    default: break;
  }
  return make_error(fmt::format(
      "op '{}' has no autograd formula in capsim (those that do: add, mul, sum over every dim, "
      "mm, relu, clone)",
      body_op_name(op.kind)));
}

}  // namespace

Result<std::vector<Variable>> run_body_with_autograd(AutogradEngine& engine, const FunctionDef& def,
                                                     std::span<const Variable> inputs) {
  CAPSIM_CHECK(inputs.size() == def.num_inputs(), "one variable per input");
  std::vector<Variable> values(inputs.begin(), inputs.end());
  values.reserve(def.num_inputs() + def.ops.size());
  for (std::size_t k = 0; k < def.ops.size(); ++k) {
    const BodyOp& op = def.ops[k];
    std::vector<Variable> args;
    for (ValueIndex v : op.args) {
      CAPSIM_CHECK(v < values.size(), "validate() keeps every operand defined");
      args.push_back(values[v]);
    }
    auto out = run_op(engine, op, args);
    if (!out) {
      return with_context(
          fmt::format("function '{}': op {} ({})", def.name, k, body_op_name(op.kind)),
          out.error());
    }
    values.push_back(*out);
  }
  std::vector<Variable> outputs;
  for (ValueIndex v : def.outputs) {
    // A variable's grad_fn may have changed since (an in-place op on a view);
    // none of the ops above does that, so the snapshot is current.
    outputs.push_back(values.at(v));
  }
  return outputs;
}

}  // namespace capsim
