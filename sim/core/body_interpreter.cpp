#include "sim/core/body_interpreter.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace capsim {

Result<TensorArg> tensor_arg(const TensorStore& store, TensorId id) {
  CAPSIM_TRY_ASSIGN(const Tensor t, store.tensor(id));
  CAPSIM_TRY_ASSIGN(const Address address, store.data_address(id));
  return TensorArg{address, t.meta};
}

TensorArg held_tensor_arg(const TensorStore& store, TensorId id) {
  const Tensor& t = store.at(id);
  const Result<Address> address = store.data_address(id);
  CAPSIM_CHECK(address.ok(), "a held tensor has an address");
  return TensorArg{*address, t.meta};
}

namespace {

class Interpreter {
 public:
  Interpreter(const FunctionDef& def, BodyEnv& env) : def_(def), env_(env) {}
  ~Interpreter() {
    for (TensorId id : created_) (void)env_.refs.drop(id);
  }

  Result<std::vector<TensorId>> run(std::span<const TensorId> inputs) {
    CAPSIM_CHECK(inputs.size() == def_.num_inputs());
    values_.assign(inputs.begin(), inputs.end());
    for (std::size_t k = 0; k < def_.ops.size(); ++k) {
      auto value = run_op(def_.ops[k]);
      if (!value) {
        return with_context(
            fmt::format("function '{}': op {} ({})", def_.name, k, body_op_name(def_.ops[k].kind)),
            value.error());
      }
      values_.push_back(*value);
    }
    std::vector<TensorId> outputs;
    for (ValueIndex v : def_.outputs) {
      CAPSIM_TRY_ASSIGN(const Tensor t, store().tensor(values_[v]));
      CAPSIM_TRY_ASSIGN(const Tensor out, store().view(t.id, t.meta));
      env_.refs.hold(out.id);
      outputs.push_back(out.id);
    }
    return outputs;
  }

 private:
  TensorStore& store() { return env_.refs.store(); }

  Result<TensorId> fresh(const Dims& sizes) {
    CAPSIM_TRY(check_value_sizes(sizes));  // broadcasting and mm can grow a result
    CAPSIM_TRY_ASSIGN(const Tensor t, store().empty(sizes, DType::kFloat32, env_.pool));
    env_.refs.hold(t.id);
    created_.push_back(t.id);
    return t.id;
  }
  Result<TensorId> view(TensorId base, const TensorMeta& meta) {
    CAPSIM_TRY_ASSIGN(const Tensor t, store().view(base, meta));
    env_.refs.hold(t.id);
    created_.push_back(t.id);
    return t.id;
  }
  Result<TensorArg> arg(TensorId id) { return tensor_arg(store(), id); }

  Status launch(const KernelLaunch& launch) {
    if (grid_size(launch) == 0) return {};
    if (env_.capture != nullptr) {
      std::vector<StepIndex> deps;
      if (!env_.capture->steps.empty()) {
        deps.push_back(static_cast<StepIndex>(env_.capture->steps.size() - 1));
      }
      env_.capture->add(launch, std::move(deps));
      return {};
    }
    return env_.backend.run_step(Step{launch, {}});
  }

  Result<TensorId> run_op(const BodyOp& op) {
    std::vector<TensorArg> a;
    for (ValueIndex v : op.args) {
      CAPSIM_TRY_ASSIGN(TensorArg t, arg(values_[v]));
      a.push_back(std::move(t));
    }
    switch (op.kind) {
      case BodyOpKind::kAdd:
      case BodyOpKind::kSub:
      case BodyOpKind::kMul: {
        const KernelKind k = op.kind == BodyOpKind::kAdd   ? KernelKind::kAdd
                             : op.kind == BodyOpKind::kSub ? KernelKind::kSub
                                                           : KernelKind::kMul;
        // Broadcasting, as torch's binary ops do (a compiled backward's
        // SumBackward0 multiplies a 0-d grad into its input's shape).
        CAPSIM_TRY_ASSIGN(const Dims sizes, broadcast_shape(a[0].meta.sizes, a[1].meta.sizes));
        CAPSIM_TRY_ASSIGN(a[0].meta, expand(a[0].meta, sizes));
        CAPSIM_TRY_ASSIGN(a[1].meta, expand(a[1].meta, sizes));
        CAPSIM_TRY_ASSIGN(const TensorId out, fresh(sizes));
        CAPSIM_TRY_ASSIGN(const TensorArg o, arg(out));
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_binary(k, o, a[0], a[1]));
        CAPSIM_TRY(launch(l));
        return out;
      }
      case BodyOpKind::kNeg:
      case BodyOpKind::kRelu: {
        const KernelKind k = op.kind == BodyOpKind::kNeg ? KernelKind::kNeg : KernelKind::kRelu;
        CAPSIM_TRY_ASSIGN(const TensorId out, fresh(a[0].meta.sizes));
        CAPSIM_TRY_ASSIGN(const TensorArg o, arg(out));
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_unary(k, o, a[0]));
        CAPSIM_TRY(launch(l));
        return out;
      }
      case BodyOpKind::kSum: {
        CAPSIM_TRY_ASSIGN(const TensorId out, fresh({}));
        CAPSIM_TRY_ASSIGN(const TensorArg o, arg(out));
        std::vector<std::int64_t> dims;
        for (std::size_t d = 0; d < a[0].meta.sizes.size(); ++d) {
          dims.push_back(static_cast<std::int64_t>(d));
        }
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_sum(o, a[0], dims));
        CAPSIM_TRY(launch(l));
        return out;
      }
      case BodyOpKind::kMm: {
        if (a[0].meta.sizes.size() != 2 || a[1].meta.sizes.size() != 2) {
          return make_error("mm: both operands must be 2-d");
        }
        // Checked before the output is allocated (launch_mm refuses shapes
        // that do not match); an overflowing product is over the limit too.
        const Dims& x = a[0].meta.sizes;
        const Dims& y = a[1].meta.sizes;
        std::int64_t work = 0;
        if (x[1] == y[0] &&
            (__builtin_mul_overflow(x[0], x[1], &work) ||
             __builtin_mul_overflow(work, y[1], &work) || work > kMaxMmMultiplyAdds)) {
          return make_error(
              fmt::format("mm of {} by {} needs more than {} multiply-adds, the limit for one op",
                          x, y, kMaxMmMultiplyAdds));
        }
        CAPSIM_TRY_ASSIGN(const TensorId out, fresh({a[0].meta.sizes[0], a[1].meta.sizes[1]}));
        CAPSIM_TRY_ASSIGN(const TensorArg o, arg(out));
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_mm(o, a[0], a[1]));
        CAPSIM_TRY(launch(l));
        return out;
      }
      case BodyOpKind::kClone: {
        CAPSIM_TRY_ASSIGN(const TensorId out, fresh(a[0].meta.sizes));
        CAPSIM_TRY_ASSIGN(const TensorArg o, arg(out));
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_copy(o, a[0]));
        CAPSIM_TRY(launch(l));
        return out;
      }
      case BodyOpKind::kFull: {
        CAPSIM_TRY_ASSIGN(const TensorId out, fresh(op.sizes));
        CAPSIM_TRY_ASSIGN(const TensorArg o, arg(out));
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_fill(o, op.scalar));
        CAPSIM_TRY(launch(l));
        return out;
      }
      case BodyOpKind::kAddInplace: {
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_binary(KernelKind::kAdd, a[0], a[0], a[1]));
        CAPSIM_TRY(launch(l));
        return view(values_[op.args[0]], a[0].meta);
      }
      case BodyOpKind::kCopyInplace: {
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_copy(a[0], a[1]));
        CAPSIM_TRY(launch(l));
        return view(values_[op.args[0]], a[0].meta);
      }
      case BodyOpKind::kAlias: return view(values_[op.args[0]], a[0].meta);
      case BodyOpKind::kTranspose: {
        if (a[0].meta.sizes.size() != 2) return make_error("t: the operand must be 2-d");
        TensorMeta meta = a[0].meta;
        std::swap(meta.sizes[0], meta.sizes[1]);
        std::swap(meta.strides[0], meta.strides[1]);
        return view(values_[op.args[0]], meta);
      }
      case BodyOpKind::kReluBackward: {
        CAPSIM_TRY_ASSIGN(const TensorId out, fresh(a[0].meta.sizes));
        CAPSIM_TRY_ASSIGN(const TensorArg o, arg(out));
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_relu_backward(o, a[0], a[1]));
        CAPSIM_TRY(launch(l));
        return out;
      }
      case BodyOpKind::kSlice: {
        CAPSIM_TRY_ASSIGN(const TensorMeta meta, slice(a[0].meta, 0, op.start, op.end));
        return view(values_[op.args[0]], meta);
      }
      case BodyOpKind::kSgd: {
        CAPSIM_TRY_ASSIGN(const KernelLaunch l, launch_sgd(a[0], a[1], a[2], op.sgd));
        CAPSIM_TRY(launch(l));
        return view(values_[op.args[0]], a[0].meta);
      }
      case BodyOpKind::kAdam:
      case BodyOpKind::kAdamW: {
        const KernelKind k = op.kind == BodyOpKind::kAdam ? KernelKind::kAdam : KernelKind::kAdamW;
        CAPSIM_TRY_ASSIGN(const KernelLaunch powers, launch_adam_powers(a[4], op.adam));
        CAPSIM_TRY(launch(powers));
        CAPSIM_TRY_ASSIGN(const KernelLaunch l,
                          launch_adam(k, a[0], a[1], a[2], a[3], a[4], op.adam));
        CAPSIM_TRY(launch(l));
        return view(values_[op.args[0]], a[0].meta);
      }
    }
    return make_error("unknown op");
  }

  const FunctionDef& def_;
  BodyEnv& env_;
  std::vector<TensorId> values_;
  std::vector<TensorId> created_;
};

}  // namespace

Result<std::vector<TensorId>> run_body(const FunctionDef& def, std::span<const TensorId> inputs,
                                       BodyEnv& env) {
  Interpreter interpreter(def, env);
  return interpreter.run(inputs);
}

}  // namespace capsim
