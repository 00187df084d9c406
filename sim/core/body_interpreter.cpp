// run_body (see body_interpreter.hpp): the Interpreter that turns each BodyOp into its
// allocations and kernel launches, run now (eager) or appended to the capture.
#include "sim/core/body_interpreter.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "sim/core/generic_op.hpp"

namespace capsim {

Result<TensorArg> tensor_arg(const TensorStore& store, TensorId id) {
  const Tensor* t = store.find(id);
  if (t == nullptr) return make_error(fmt::format("unknown tensor {}", id.value));
  CAPSIM_TRY_ASSIGN(const Address address, store.data_address(id));
  return TensorArg{address, t->meta};
}

TensorArg held_tensor_arg(const TensorStore& store, TensorId id) {
  const Tensor& t = store.at(id);
  const Result<Address> address = store.data_address(id);
  CAPSIM_CHECK(address.ok(), "a held tensor has an address");
  return TensorArg{*address, t.meta};
}

namespace {

// The tensors and kernel launches of one body run: each result it allocates
// or views is held until the run ends, and each launch runs now or is captured.
class BodyResults {
 public:
  explicit BodyResults(BodyEnv& env) : env_(env) {}
  BodyResults(const BodyResults&) = delete;
  BodyResults& operator=(const BodyResults&) = delete;
  ~BodyResults() {
    for (TensorId id : created_) {
      consume_error(env_.refs.drop(id), "a destructor has no caller to tell");
    }
  }

  TensorStore& store() { return env_.refs.store(); }

  // With values on, what a body fills is held to kMaxValueElements; with
  // values off (the backend computes nothing) only to the shape limit.
  bool values() const { return env_.backend.computes_values(); }
  Status check_sizes(const Dims& sizes) const {
    return values() ? check_value_sizes(sizes) : check_shape_sizes(sizes);
  }

  Result<TensorId> fresh(const Dims& sizes) {
    CAPSIM_TRY(check_sizes(sizes));  // broadcasting and mm can grow a result
    CAPSIM_TRY_ASSIGN(const Tensor t, store().empty(sizes, DType::kFloat32, env_.pool));
    env_.refs.hold(t.id);
    created_.push_back(t.id);
    return t.id;
  }
  Result<TensorId> fresh_strided(const TensorMeta& meta) {
    CAPSIM_TRY(check_sizes(meta.sizes));
    if (values() &&
        needed_size(meta.sizes, meta.strides) > kMaxValueElements - meta.storage_offset) {
      return values_limit(make_error(fmt::format(
          "a result spans more than {} elements, the limit for one tensor", kMaxValueElements)));
    }
    CAPSIM_TRY_ASSIGN(const Tensor t, store().empty_strided(meta, env_.pool));
    env_.refs.hold(t.id);
    created_.push_back(t.id);
    return t.id;
  }
  // A view costs no storage, but with values on a later kernel or read
  // visits every one of its elements: an expand of 2^40 is held to the limit.
  Result<TensorId> view(TensorId base, const TensorMeta& meta) {
    CAPSIM_TRY(check_sizes(meta.sizes));
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

  // A kernel that writes a fresh tensor of `sizes`: the output is allocated
  // first, since `make_launch` needs its TensorArg to build the launch.
  template <typename MakeLaunch>
  Result<TensorId> run_into_fresh(const Dims& sizes, MakeLaunch make_launch) {
    CAPSIM_TRY_ASSIGN(const TensorId out, fresh(sizes));
    CAPSIM_TRY_ASSIGN(const TensorArg o, arg(out));
    CAPSIM_TRY_ASSIGN(const KernelLaunch l, make_launch(o));
    CAPSIM_TRY(launch(l));
    return out;
  }

 private:
  BodyEnv& env_;
  std::vector<TensorId> created_;
};

// generic_mix over `args`, four at a time (the kernel's operands).
Status mix_into(BodyResults& r, const TensorArg& out, const std::vector<TensorArg>& args,
                std::uint64_t seed) {
  const std::size_t group = static_cast<std::size_t>(kernels::kMaxMixInputs);
  std::size_t start = 0;
  do {
    const std::size_t count = std::min(group, args.size() - start);
    CAPSIM_TRY_ASSIGN(
        const KernelLaunch l,
        launch_generic_mix(out, std::span(args).subspan(start, count), seed, start == 0));
    CAPSIM_TRY(r.launch(l));
    start += count;
  } while (start < args.size());
  return {};
}

// Whether the op's element reads pass kMaxGenericReads: then its values are
// mixed from its metadata alone (no operand is read), which costs one visit
// per element it writes.
bool over_generic_reads(const GenericOp& g, const std::vector<TensorArg>& a) {
  std::vector<std::int64_t> arg_numels;
  for (const TensorArg& t : a) arg_numels.push_back(numel(t.meta));
  std::int64_t reads = 0;
  auto add = [&](std::int64_t out_numel) {
    reads = std::min(kMaxGenericReads + 1, reads + generic_mix_reads(out_numel, arg_numels));
  };
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    if (g.results[i] && (g.views.empty() || !g.views[i])) add(numel(*g.results[i]));
  }
  for (const std::uint32_t w : g.writes) add(arg_numels[w]);
  return reads > kMaxGenericReads;
}

// add, sub, mul or div of two operands.
Result<TensorId> run_broadcast_binary(BodyResults& r, BodyOpKind kind, TensorArg lhs,
                                      TensorArg rhs) {
  const KernelKind k = kind == BodyOpKind::kAdd   ? KernelKind::kAdd
                       : kind == BodyOpKind::kSub ? KernelKind::kSub
                       : kind == BodyOpKind::kMul ? KernelKind::kMul
                                                  : KernelKind::kDiv;
  // Broadcasting, as torch's binary ops do (a compiled backward's
  // SumBackward0 multiplies a 0-d grad into its input's shape).
  CAPSIM_TRY_ASSIGN(const Dims sizes, broadcast_shape(lhs.meta.sizes, rhs.meta.sizes));
  CAPSIM_TRY_ASSIGN(lhs.meta, expand(lhs.meta, sizes));
  CAPSIM_TRY_ASSIGN(rhs.meta, expand(rhs.meta, sizes));
  return r.run_into_fresh(sizes, [&](const TensorArg& o) { return launch_binary(k, o, lhs, rhs); });
}

// neg or relu of one operand.
Result<TensorId> run_unary(BodyResults& r, BodyOpKind kind, const TensorArg& in) {
  const KernelKind k = kind == BodyOpKind::kNeg ? KernelKind::kNeg : KernelKind::kRelu;
  return r.run_into_fresh(in.meta.sizes,
                          [&](const TensorArg& o) { return launch_unary(k, o, in); });
}

// exp, log, sigmoid, tanh, rsqrt, sqrt or reciprocal of one operand.
Result<TensorId> run_unary_math(BodyResults& r, BodyOpKind kind, const TensorArg& in) {
  using kernels::UnaryMath;
  const UnaryMath op = kind == BodyOpKind::kExp       ? UnaryMath::kExp
                       : kind == BodyOpKind::kLog     ? UnaryMath::kLog
                       : kind == BodyOpKind::kSigmoid ? UnaryMath::kSigmoid
                       : kind == BodyOpKind::kTanh    ? UnaryMath::kTanh
                       : kind == BodyOpKind::kRsqrt   ? UnaryMath::kRsqrt
                       : kind == BodyOpKind::kSqrt    ? UnaryMath::kSqrt
                                                      : UnaryMath::kReciprocal;
  return r.run_into_fresh(in.meta.sizes,
                          [&](const TensorArg& o) { return launch_unary_math(op, o, in); });
}

// The sum (or amax) over op.dims (every dim when it has none), keeping each
// reduced dim with size 1 under keepdim: aten.sum.dim_IntList's result.
Result<TensorId> run_reduction(BodyResults& r, const BodyOp& op, const TensorArg& in) {
  std::vector<std::int64_t> dims;
  if (op.dims) {
    dims = *op.dims;
  } else {
    for (std::size_t d = 0; d < in.meta.sizes.size(); ++d) {
      dims.push_back(static_cast<std::int64_t>(d));
    }
  }
  const bool amax = op.kind == BodyOpKind::kAmax;
  // Checked with values off too: PyTorch refuses it whatever the values.
  if (amax) CAPSIM_TRY(check_amax_of_empty(in.meta.sizes, op.dims));
  CAPSIM_TRY_ASSIGN(const Dims sizes,
                    sum_result_sizes(in.meta.sizes, dims, op.keepdim, amax ? "amax" : "sum"));
  return r.run_into_fresh(sizes, [&](const TensorArg& o) {
    return amax ? launch_amax(o, in, dims) : launch_sum(o, in, dims);
  });
}

// mm of two 2-d operands (launch_mm models one over the exact work limit).
Result<TensorId> run_mm(BodyResults& r, const TensorArg& x, const TensorArg& y) {
  if (x.meta.sizes.size() != 2 || y.meta.sizes.size() != 2) {
    return make_error("mm: both operands must be 2-d");
  }
  return r.run_into_fresh({x.meta.sizes[0], y.meta.sizes[1]},
                          [&](const TensorArg& o) { return launch_mm(o, x, y); });
}

// An op that writes into its first operand (`base`, with arg `target`) with
// `kernel`; its value is a new view of that operand.
// An in-place write into a tensor whose elements share memory (an
// expand) is PyTorch's RuntimeError, with values on or off.
Result<TensorId> run_in_place(BodyResults& r, const BodyOp& op, TensorId base,
                              const TensorArg& target, Result<KernelLaunch> kernel) {
  if (has_internal_overlap(target.meta)) {
    return make_error(fmt::format("{}: {}", body_op_name(op.kind), kInternalOverlapMessage));
  }
  CAPSIM_TRY_ASSIGN(const KernelLaunch l, std::move(kernel));
  CAPSIM_TRY(r.launch(l));
  return r.view(base, target.meta);
}

// Adam or AdamW: the {beta1^t, beta2^t} state (operand 4) is advanced to
// this step first, since the update's bias correction reads it.
Result<TensorId> run_adam(BodyResults& r, const BodyOp& op, TensorId base,
                          const std::vector<TensorArg>& a) {
  const KernelKind k = op.kind == BodyOpKind::kAdam ? KernelKind::kAdam : KernelKind::kAdamW;
  CAPSIM_TRY_ASSIGN(const KernelLaunch powers, launch_adam_powers(a[4], op.adam));
  CAPSIM_TRY(r.launch(powers));
  return run_in_place(r, op, base, a[0], launch_adam(k, a[0], a[1], a[2], a[3], a[4], op.adam));
}

// t(): the first operand (`base`, metadata `in`) with its two dims swapped.
Result<TensorId> transposed_view(BodyResults& r, TensorId base, const TensorMeta& in) {
  if (in.sizes.size() != 2) return make_error("t: the operand must be 2-d");
  TensorMeta meta = in;
  std::swap(meta.sizes[0], meta.sizes[1]);
  std::swap(meta.strides[0], meta.strides[1]);
  return r.view(base, meta);
}

// The first operand's rows [op.start, op.end).
Result<TensorId> sliced_view(BodyResults& r, const BodyOp& op, TensorId base,
                             const TensorMeta& in) {
  CAPSIM_TRY_ASSIGN(const TensorMeta meta, slice(in, 0, op.start, op.end));
  return r.view(base, meta);
}

// view(sizes) of a contiguous operand: the same elements, in the same
// order, under new sizes. A non-contiguous operand is refused rather than
// copied (aten.view's rule; reshape would copy).
Result<TensorId> reshaped_view(BodyResults& r, const BodyOp& op, TensorId base,
                               const TensorMeta& in) {
  if (!is_contiguous(in)) {
    return make_error(fmt::format("view: the operand (sizes {}, strides {}) is not contiguous",
                                  in.sizes, in.strides));
  }
  CAPSIM_TRY_ASSIGN(TensorMeta meta, contiguous_meta(op.sizes, in.dtype));
  if (numel(meta) != numel(in)) {
    return make_error(
        fmt::format("view: shape {} is invalid for input of size {}", op.sizes, numel(in)));
  }
  meta.storage_offset = in.storage_offset;
  return r.view(base, meta);
}

// expand(sizes): size-1 dims broadcast with stride 0. The view may name
// more elements than its storage holds, so it is held to the limit of a
// fresh tensor: an op reading it does one body call per element.
Result<TensorId> expanded_view(BodyResults& r, const BodyOp& op, TensorId base,
                               const TensorMeta& in) {
  CAPSIM_TRY_ASSIGN(const TensorMeta meta, expand(in, op.sizes));
  CAPSIM_TRY(r.check_sizes(meta.sizes));
  return r.view(base, meta);
}

// as_strided(sizes, strides, storage_offset) of the operand's storage,
// with its dtype. Held to a fresh tensor's limit, as expand is.
Result<TensorId> strided_view(BodyResults& r, const BodyOp& op, TensorId base,
                              const TensorMeta& in) {
  TensorMeta meta = in;
  meta.sizes = op.sizes;
  meta.strides = op.strides;
  meta.storage_offset = op.storage_offset;
  CAPSIM_TRY(r.check_sizes(meta.sizes));
  return r.view(base, meta);
}

class Interpreter {
 public:
  Interpreter(const FunctionDef& def, BodyEnv& env) : def_(def), results_(env), env_(env) {}

  Result<std::vector<TensorId>> run(std::span<const TensorId> inputs) {
    CAPSIM_CHECK(inputs.size() == def_.num_inputs());
    values_.assign(inputs.begin(), inputs.end());
    for (std::size_t k = 0; k < def_.ops.size(); ++k) {
      const BodyOp& op = def_.ops[k];
      auto value = op.kind == BodyOpKind::kGeneric   ? run_generic(op)
                   : op.kind == BodyOpKind::kGetItem ? item_of_tuple(op)
                                                     : run_op(op);
      if (!value) {
        return with_context(
            fmt::format("function '{}': op {} ({})", def_.name, k, body_op_name(def_.ops[k].kind)),
            value.error());
      }
      values_.push_back(*value);
    }
    std::vector<TensorId> outputs;
    for (ValueIndex v : def_.outputs) {
      CAPSIM_TRY_ASSIGN(const Tensor t, results_.store().tensor(values_[v]));
      CAPSIM_TRY_ASSIGN(const Tensor out, results_.store().view(t.id, t.meta));
      env_.refs.hold(out.id);
      outputs.push_back(out.id);
    }
    return outputs;
  }

 private:
  // A generic op (docs/trace-format.md §4.1): its views, its fresh results
  // mixed from every arg, then its writes. Its value is its one result, or a
  // tuple (a placeholder id, the items in tuples_) that getitem reads.
  Result<TensorId> run_generic(const BodyOp& op) {
    CAPSIM_TRY_ASSIGN(const std::vector<TensorArg> a, operand_args(op));
    const GenericOp& g = op.generic;
    const std::vector<TensorArg> mixed = over_generic_reads(g, a) ? std::vector<TensorArg>{} : a;
    const std::uint64_t seed = generic_op_seed(g);
    std::vector<std::optional<TensorId>> results;
    for (std::size_t i = 0; i < g.results.size(); ++i) {
      if (!g.results[i]) {
        results.emplace_back();
        continue;
      }
      const TensorMeta& meta = *g.results[i];
      if (!g.views.empty() && g.views[i]) {
        CAPSIM_TRY_ASSIGN(const TensorId v, results_.view(values_[op.args[*g.views[i]]], meta));
        results.emplace_back(v);
        continue;
      }
      CAPSIM_TRY_ASSIGN(const TensorId out, results_.fresh_strided(meta));
      CAPSIM_TRY_ASSIGN(const TensorArg o, results_.arg(out));
      CAPSIM_TRY(mix_into(results_, o, mixed, generic_output_seed(seed, i)));
      results.emplace_back(out);
    }
    for (std::size_t w = 0; w < g.writes.size(); ++w) {
      CAPSIM_TRY(mix_into(results_, a[g.writes[w]], mixed,
                          generic_output_seed(seed, g.results.size() + w)));
    }
    if (results.size() == 1) {
      if (!results[0]) return make_error("its one result is not a tensor");
      return *results[0];
    }
    tuples_[static_cast<ValueIndex>(values_.size())] = std::move(results);
    return TensorId{};
  }

  // getitem: item `op.index` of the tuple op.args[0] (validate() checked it).
  Result<TensorId> item_of_tuple(const BodyOp& op) {
    const auto it = tuples_.find(op.args[0]);
    if (it == tuples_.end() || op.index >= it->second.size() || !it->second[op.index]) {
      return make_error(fmt::format("value {} has no tensor at index {}", op.args[0], op.index));
    }
    return *it->second[op.index];
  }

  // One op of the body: the args of its operands, then the op's kernels.
  // Views and in-place ops take the first operand's id, `base` (full has
  // no operands).
  Result<TensorId> run_op(const BodyOp& op) {
    CAPSIM_TRY_ASSIGN(std::vector<TensorArg> a, operand_args(op));
    BodyResults& r = results_;
    const TensorId base = op.args.empty() ? TensorId{} : values_[op.args[0]];
    switch (op.kind) {
      case BodyOpKind::kAdd:
      case BodyOpKind::kSub:
      case BodyOpKind::kMul:
      case BodyOpKind::kDiv: return run_broadcast_binary(r, op.kind, a[0], a[1]);
      case BodyOpKind::kNeg:
      case BodyOpKind::kRelu: return run_unary(r, op.kind, a[0]);
      case BodyOpKind::kSum:
      case BodyOpKind::kAmax: return run_reduction(r, op, a[0]);
      case BodyOpKind::kExp:
      case BodyOpKind::kLog:
      case BodyOpKind::kSigmoid:
      case BodyOpKind::kTanh:
      case BodyOpKind::kRsqrt:
      case BodyOpKind::kSqrt:
      case BodyOpKind::kReciprocal: return run_unary_math(r, op.kind, a[0]);
      case BodyOpKind::kAsStrided: return strided_view(r, op, base, a[0].meta);
      case BodyOpKind::kMm: return run_mm(r, a[0], a[1]);
      case BodyOpKind::kClone:
        return r.run_into_fresh(a[0].meta.sizes,
                                [&](const TensorArg& o) { return launch_copy(o, a[0]); });
      case BodyOpKind::kFull:
        return r.run_into_fresh(op.sizes,
                                [&](const TensorArg& o) { return launch_fill(o, op.scalar); });
      case BodyOpKind::kAddInplace:
        return run_in_place(r, op, base, a[0], launch_binary(KernelKind::kAdd, a[0], a[0], a[1]));
      case BodyOpKind::kCopyInplace:
        return run_in_place(r, op, base, a[0], launch_copy(a[0], a[1]));
      case BodyOpKind::kAlias: return r.view(base, a[0].meta);
      case BodyOpKind::kTranspose: return transposed_view(r, base, a[0].meta);
      case BodyOpKind::kReluBackward:
        return r.run_into_fresh(a[0].meta.sizes, [&](const TensorArg& o) {
          return launch_relu_backward(o, a[0], a[1]);
        });
      case BodyOpKind::kSlice: return sliced_view(r, op, base, a[0].meta);
      case BodyOpKind::kView: return reshaped_view(r, op, base, a[0].meta);
      case BodyOpKind::kExpand: return expanded_view(r, op, base, a[0].meta);
      case BodyOpKind::kSgd:
        return run_in_place(r, op, base, a[0], launch_sgd(a[0], a[1], a[2], op.sgd));
      case BodyOpKind::kSgdPlain:
        return run_in_place(r, op, base, a[0], launch_sgd_plain(a[0], a[1], op.sgd));
      case BodyOpKind::kAdam:
      case BodyOpKind::kAdamW: return run_adam(r, op, base, a);
      case BodyOpKind::kGeneric:
      case BodyOpKind::kGetItem: break;  // run() sends them elsewhere
    }
    return make_error("unknown op");
  }

  // The TensorArgs of the op's operands, in order.
  Result<std::vector<TensorArg>> operand_args(const BodyOp& op) {
    std::vector<TensorArg> a;
    for (ValueIndex v : op.args) {
      CAPSIM_TRY_ASSIGN(TensorArg t, results_.arg(values_[v]));
      a.push_back(std::move(t));
    }
    return a;
  }

  const FunctionDef& def_;
  BodyResults results_;
  BodyEnv& env_;
  std::vector<TensorId> values_;
  // The items of each tuple value (a generic op with other than one result).
  std::map<ValueIndex, std::vector<std::optional<TensorId>>> tuples_;
};

}  // namespace

Result<std::vector<TensorId>> run_body(const FunctionDef& def, std::span<const TensorId> inputs,
                                       BodyEnv& env) {
  Interpreter interpreter(def, env);
  return interpreter.run(inputs);
}

}  // namespace capsim
