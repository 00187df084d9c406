// The launch builders of kernel_launch.hpp: shape checks, tensor metadata to kernel geometry,
// and one builder per kernel family (sum's reduce mask and sum_to_size included).
#include "model/kernel_launch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "model/digest.hpp"

namespace capsim {

// So a launch over tensors that exist fails only on sizes that differ: every
// tensor's geometry fits a kernel argument (model/tensor.cpp refuses more).
static_assert(kMaxRank <= static_cast<std::size_t>(kernels::kMaxGeometryRank));

namespace {
Status same_sizes(std::string_view kernel, std::string_view what, const TensorArg& out,
                  const TensorArg& other) {
  if (out.meta.sizes != other.meta.sizes) {
    return make_error(fmt::format("{}: {} has sizes {}, but out has sizes {}", kernel, what,
                                  other.meta.sizes, out.meta.sizes));
  }
  return {};
}

Status set_pointer(KernelLaunch& launch, int arg, const TensorArg& t) {
  auto g = to_geometry(t.meta);
  if (!g) {
    return make_error(fmt::format("{}: argument {}: {}", kernel_name(launch.kind),
                                  signature(launch.kind).pointer_names[arg], g.error().message));
  }
  launch.pointers[arg] = t.address;
  launch.geometry[arg] = *g;
  return {};
}

// A kernel that writes only its output, run as generic_mix of its read
// operands under the seed of "capsim.<kernel>": the bytes and their
// dependences are right, the values are not the kernel's. One that writes
// more (SGD's buffer, Adam's moments) is refused.
Result<KernelLaunch> as_generic(KernelKind kind, std::initializer_list<const TensorArg*> args) {
  const KernelSignature& s = signature(kind);
  std::vector<TensorArg> reads;
  int arg = 0;
  for (const TensorArg* t : args) {
    const Access access = s.pointer_access[arg];
    if (arg > 0 && access != Access::kRead) {
      return make_error(fmt::format("{}: argument {} is {}; this kernel takes float32 only", s.name,
                                    s.pointer_names[arg], dtype_name(t->meta.dtype)));
    }
    if (access != Access::kWrite) reads.push_back(*t);
    ++arg;
  }
  const std::string seed_text = fmt::format("capsim.{}", s.name);
  const std::uint64_t seed = fnv1a64(std::as_bytes(std::span(seed_text.data(), seed_text.size())));
  return launch_generic_mix(**args.begin(), reads, seed, true);
}

// The exact kernels compute float32; over another dtype (the autograd
// engine's float64 copies) a kernel runs as_generic.
std::optional<Result<KernelLaunch>> generic_unless_float32(
    KernelKind kind, std::initializer_list<const TensorArg*> args) {
  const bool all_float32 = std::all_of(args.begin(), args.end(), [](const TensorArg* t) {
    return t->meta.dtype == DType::kFloat32;
  });
  if (all_float32) return std::nullopt;
  return as_generic(kind, args);
}

Result<KernelLaunch> make(KernelKind kind, std::initializer_list<const TensorArg*> args) {
  if (auto generic = generic_unless_float32(kind, args)) return std::move(*generic);
  KernelLaunch launch;
  launch.kind = kind;
  CAPSIM_CHECK(static_cast<int>(args.size()) == signature(kind).num_pointers);
  int arg = 0;
  for (const TensorArg* t : args) CAPSIM_TRY(set_pointer(launch, arg++, *t));
  return launch;
}
}  // namespace

Result<kernels::Geometry> to_geometry(const TensorMeta& meta) {
  if (meta.sizes.size() > static_cast<std::size_t>(kernels::kMaxGeometryRank)) {
    return make_error(fmt::format("rank {} exceeds the kernel limit of {}", meta.sizes.size(),
                                  kernels::kMaxGeometryRank));
  }
  kernels::Geometry g;
  g.rank = static_cast<std::int32_t>(meta.sizes.size());
  g.elem_bytes = static_cast<std::int32_t>(element_bytes(meta));
  for (int d = 0; d < g.rank; ++d) {
    g.sizes[d] = meta.sizes[d];
    g.strides[d] = meta.strides[d];
  }
  return g;
}

namespace {
std::optional<kernels::CopyElem> copy_elem_kind(DType dtype) {
  if (dtype == DType::kFloat32) return kernels::CopyElem::kFloat32;
  if (dtype == DType::kFloat64) return kernels::CopyElem::kFloat64;
  return std::nullopt;
}

// typed_copy of `in` (or of `value` without one) into `out`.
Result<KernelLaunch> typed_copy(const TensorArg& out, const TensorArg* in, float value,
                                kernels::CopyElem out_kind, kernels::CopyElem in_kind) {
  KernelLaunch launch;
  launch.kind = KernelKind::kTypedCopy;
  CAPSIM_TRY(set_pointer(launch, 0, out));
  if (in != nullptr) {
    CAPSIM_TRY(set_pointer(launch, 1, *in));
  } else {
    launch.geometry[1].rank = 1;  // no input: null, no elements
  }
  launch.scalars = {value,
                    in == nullptr ? 1.0f : 0.0f,
                    static_cast<float>(static_cast<int>(out_kind)),
                    static_cast<float>(static_cast<int>(in_kind)),
                    0.0f,
                    0.0f};
  return launch;
}
}  // namespace

Result<KernelLaunch> launch_fill(const TensorArg& out, float value) {
  if (out.meta.dtype == DType::kFloat64) {
    return typed_copy(out, nullptr, value, kernels::CopyElem::kFloat64,
                      kernels::CopyElem::kFloat32);
  }
  auto launch = make(KernelKind::kFill, {&out});
  if (launch && launch->kind == KernelKind::kFill) launch->scalars[0] = value;
  return launch;
}

Result<KernelLaunch> launch_copy(const TensorArg& out, const TensorArg& in) {
  CAPSIM_TRY(same_sizes("copy", "in", out, in));
  if (out.meta.dtype != DType::kFloat32 || in.meta.dtype != DType::kFloat32) {
    const auto out_kind = copy_elem_kind(out.meta.dtype);
    const auto in_kind = copy_elem_kind(in.meta.dtype);
    if (out_kind && in_kind) return typed_copy(out, &in, 0.0f, *out_kind, *in_kind);
    if (out.meta.dtype == in.meta.dtype) {
      return typed_copy(out, &in, 0.0f, kernels::CopyElem::kBits, kernels::CopyElem::kBits);
    }
  }
  return make(KernelKind::kCopy, {&out, &in});
}

Result<KernelLaunch> launch_binary(KernelKind kind, const TensorArg& out, const TensorArg& a,
                                   const TensorArg& b) {
  CAPSIM_CHECK(kind == KernelKind::kAdd || kind == KernelKind::kSub || kind == KernelKind::kMul ||
               kind == KernelKind::kDiv);
  CAPSIM_TRY(same_sizes(kernel_name(kind), "a", out, a));
  CAPSIM_TRY(same_sizes(kernel_name(kind), "b", out, b));
  return make(kind, {&out, &a, &b});
}

Result<KernelLaunch> launch_unary(KernelKind kind, const TensorArg& out, const TensorArg& in) {
  CAPSIM_CHECK(kind == KernelKind::kNeg || kind == KernelKind::kRelu);
  CAPSIM_TRY(same_sizes(kernel_name(kind), "in", out, in));
  return make(kind, {&out, &in});
}

Result<KernelLaunch> launch_unary_math(kernels::UnaryMath op, const TensorArg& out,
                                       const TensorArg& in) {
  CAPSIM_TRY(same_sizes("unary_math", "in", out, in));
  auto launch = make(KernelKind::kUnaryMath, {&out, &in});
  if (launch && launch->kind == KernelKind::kUnaryMath) {
    launch->scalars[0] = static_cast<float>(static_cast<int>(op));
  }
  return launch;
}

Result<KernelLaunch> launch_relu_backward(const TensorArg& out, const TensorArg& grad,
                                          const TensorArg& result) {
  CAPSIM_TRY(same_sizes("relu_backward", "grad", out, grad));
  CAPSIM_TRY(same_sizes("relu_backward", "result", out, result));
  return make(KernelKind::kReluBackward, {&out, &grad, &result});
}

namespace {
// Builds the keepdim-form launch of a reduction (sum or amax): out geometry
// gets in's rank, with size 1 and stride 0 in every reduced dim.
Result<KernelLaunch> reduce_with_mask(KernelKind kind, const TensorArg& out, const TensorArg& in,
                                      std::uint32_t mask, std::string_view op) {
  CAPSIM_CHECK(signature(kind).uses_reduce_mask);
  const auto rank = in.meta.sizes.size();
  Dims kept;
  for (std::size_t d = 0; d < rank; ++d) {
    if (!((mask >> d) & 1u)) kept.push_back(in.meta.sizes[d]);
  }
  // `out` may be given with or without the reduced dims (keepdim or not).
  TensorMeta out_keep = out.meta;
  out_keep.sizes.assign(rank, 1);
  out_keep.strides.assign(rank, 0);
  if (out.meta.sizes.size() == rank) {
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t want = (mask >> d) & 1u ? 1 : in.meta.sizes[d];
      if (out.meta.sizes[d] != want) {
        return make_error(fmt::format("{}: out has sizes {}, expected {} in dim {}", op,
                                      out.meta.sizes, want, d));
      }
      out_keep.sizes[d] = want;
      out_keep.strides[d] = out.meta.strides[d];
    }
  } else if (out.meta.sizes == kept) {
    std::size_t k = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      if ((mask >> d) & 1u) continue;
      out_keep.sizes[d] = out.meta.sizes[k];
      out_keep.strides[d] = out.meta.strides[k];
      ++k;
    }
  } else {
    return make_error(fmt::format("{}: out has sizes {}, expected {}", op, out.meta.sizes, kept));
  }
  auto launch = make(kind, {&out, &in});
  if (!launch || launch->kind != kind) return launch;
  auto g = to_geometry(out_keep);
  if (!g) return g.error();
  launch->geometry[0] = *g;
  launch->reduce_mask = mask;
  return launch;
}
}  // namespace

Result<KernelLaunch> launch_sum(const TensorArg& out, const TensorArg& in,
                                const std::vector<std::int64_t>& dims) {
  CAPSIM_TRY_ASSIGN(const std::uint32_t mask, sum_reduce_mask(in.meta.sizes, dims));
  return reduce_with_mask(KernelKind::kSum, out, in, mask, "sum");
}

Result<KernelLaunch> launch_amax(const TensorArg& out, const TensorArg& in,
                                 const std::vector<std::int64_t>& dims) {
  CAPSIM_TRY_ASSIGN(const std::uint32_t mask, sum_reduce_mask(in.meta.sizes, dims, "amax"));
  CAPSIM_TRY(check_amax_of_empty(in.meta.sizes, dims));
  return reduce_with_mask(KernelKind::kAmax, out, in, mask, "amax");
}

Result<KernelLaunch> launch_sum_to_size(const TensorArg& out, const TensorArg& in) {
  const Dims& from = in.meta.sizes;
  const Dims& to = out.meta.sizes;
  if (to.size() > from.size()) {
    return make_error(fmt::format("sum_to_size: size {} is not expandable to size {}", to, from));
  }
  const std::size_t lead = from.size() - to.size();
  std::uint32_t mask = 0;
  for (std::size_t d = 0; d < from.size(); ++d) {
    if (d < lead) {
      mask |= 1u << d;
    } else if (to[d - lead] == 1 && from[d] != 1) {
      mask |= 1u << d;
    } else if (to[d - lead] != from[d]) {
      return make_error(fmt::format("sum_to_size: size {} is not expandable to size {}", to, from));
    }
  }
  // Express out in keepdim form: leading dims become size-1, stride-0 dims.
  TensorArg keep = out;
  keep.meta.sizes.insert(keep.meta.sizes.begin(), lead, 1);
  keep.meta.strides.insert(keep.meta.strides.begin(), lead, 0);
  for (std::size_t d = lead; d < from.size(); ++d) {
    if ((mask >> d) & 1u) keep.meta.strides[d] = 0;
  }
  return reduce_with_mask(KernelKind::kSum, keep, in, mask, "sum_to_size");
}

Result<KernelLaunch> launch_mm(const TensorArg& out, const TensorArg& a, const TensorArg& b) {
  const Dims& sa = a.meta.sizes;
  const Dims& sb = b.meta.sizes;
  if (sa.size() != 2 || sb.size() != 2 || out.meta.sizes.size() != 2) {
    return make_error("mm: every operand must be 2-d");
  }
  if (sa[1] != sb[0]) {
    return make_error(fmt::format("mm: shapes {} and {} cannot be multiplied", sa, sb));
  }
  if (out.meta.sizes != Dims{sa[0], sb[1]}) {
    return make_error(
        fmt::format("mm: out has sizes {}, expected [{}, {}]", out.meta.sizes, sa[0], sb[1]));
  }
  if (mm_over_exact_work(sa[0], sa[1], sb[1])) return as_generic(KernelKind::kMm, {&out, &a, &b});
  return make(KernelKind::kMm, {&out, &a, &b});
}

bool mm_over_exact_work(std::int64_t m, std::int64_t k, std::int64_t n) {
  CAPSIM_CHECK(m >= 0 && k >= 0 && n >= 0, "sizes are non-negative");
  std::int64_t work = 0;
  return __builtin_mul_overflow(m, k, &work) || __builtin_mul_overflow(work, n, &work) ||
         work > kMaxExactMmMultiplyAdds;
}

Result<KernelLaunch> launch_sgd(const TensorArg& param, const TensorArg& grad,
                                const TensorArg& momentum_buffer, const SgdHyper& hyper) {
  CAPSIM_TRY(same_sizes("sgd", "grad", param, grad));
  CAPSIM_TRY(same_sizes("sgd", "momentum_buffer", param, momentum_buffer));
  auto launch = make(KernelKind::kSgd, {&param, &grad, &momentum_buffer});
  if (launch) {
    launch->scalars = {
        hyper.lr, hyper.momentum, hyper.dampening, hyper.weight_decay, hyper.nesterov ? 1.0f : 0.0f,
        0.0f};
  }
  return launch;
}

Result<KernelLaunch> launch_sgd_plain(const TensorArg& param, const TensorArg& grad,
                                      const SgdHyper& hyper) {
  CAPSIM_TRY(same_sizes("sgd_plain", "grad", param, grad));
  if (hyper.momentum != 0.0f) return make_error("sgd_plain: momentum must be 0 (no buffer)");
  auto launch = make(KernelKind::kSgdPlain, {&param, &grad});
  if (launch && launch->kind == KernelKind::kSgdPlain) {
    launch->scalars = {hyper.lr, 0.0f, hyper.dampening, hyper.weight_decay, 0.0f, 0.0f};
  }
  return launch;
}

Result<KernelLaunch> launch_adam_powers(const TensorArg& state, const AdamHyper& hyper) {
  if (state.meta.sizes != Dims{2}) {
    return make_error(
        fmt::format("adam_powers: state must have sizes [2], got {}", state.meta.sizes));
  }
  auto launch = make(KernelKind::kAdamPowers, {&state});
  if (launch && launch->kind == KernelKind::kAdamPowers)
    launch->scalars = {hyper.beta1, hyper.beta2, 0, 0, 0, 0};
  return launch;
}

Result<KernelLaunch> launch_adam(KernelKind kind, const TensorArg& param, const TensorArg& grad,
                                 const TensorArg& exp_avg, const TensorArg& exp_avg_sq,
                                 const TensorArg& state, const AdamHyper& hyper) {
  CAPSIM_CHECK(kind == KernelKind::kAdam || kind == KernelKind::kAdamW);
  const std::string_view name = kernel_name(kind);
  CAPSIM_TRY(same_sizes(name, "grad", param, grad));
  CAPSIM_TRY(same_sizes(name, "exp_avg", param, exp_avg));
  CAPSIM_TRY(same_sizes(name, "exp_avg_sq", param, exp_avg_sq));
  if (state.meta.sizes != Dims{2}) {
    return make_error(fmt::format("{}: state must have sizes [2], got {}", name, state.meta.sizes));
  }
  auto launch = make(kind, {&param, &grad, &exp_avg, &exp_avg_sq, &state});
  if (launch) {
    launch->scalars = {hyper.lr, hyper.beta1, hyper.beta2, hyper.eps, hyper.weight_decay, 0.0f};
  }
  return launch;
}

}  // namespace capsim

namespace capsim {

namespace {
kernels::MixStore mix_store(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return kernels::MixStore::kFloat32;
    case DType::kFloat64: return kernels::MixStore::kFloat64;
    case DType::kFloat16: return kernels::MixStore::kFloat16;
    case DType::kBFloat16: return kernels::MixStore::kBFloat16;
    case DType::kComplex64: return kernels::MixStore::kComplex64;
    case DType::kBool: return kernels::MixStore::kBool;
    case DType::kInt64:
    case DType::kInt32:
    case DType::kInt8:
    case DType::kUInt8: return kernels::MixStore::kInteger;
  }
  return kernels::MixStore::kInteger;
}

// A pointer with nothing behind it: no address, no elements.
kernels::Geometry empty_geometry() {
  kernels::Geometry g;
  g.rank = 1;
  g.sizes[0] = 0;
  g.strides[0] = 1;
  return g;
}
}  // namespace

Result<KernelLaunch> launch_generic_mix(const TensorArg& out, std::span<const TensorArg> inputs,
                                        std::uint64_t seed, bool first) {
  CAPSIM_CHECK(inputs.size() <= static_cast<std::size_t>(kernels::kMaxMixInputs));
  KernelLaunch launch;
  launch.kind = KernelKind::kGenericMix;
  for (int arg = 0; arg < kMaxKernelPointers; ++arg) launch.geometry[arg] = empty_geometry();
  const auto place = [&](int arg, const TensorArg& t) -> Status {
    CAPSIM_TRY_ASSIGN(launch.geometry[arg], to_geometry(t.meta));
    launch.pointers[arg] = t.address;
    return {};
  };
  CAPSIM_TRY(place(0, out));
  // An operand slot the op does not use keeps its empty geometry (nothing is
  // read through it) and points at the output: a baked pointer must lie in a
  // mapped segment, and 0 lies in none (the CUDA backend could not translate
  // it, the host backend refused it; found by generated generic ops).
  for (int arg = 1; arg < kMaxKernelPointers; ++arg) launch.pointers[arg] = out.address;
  for (std::size_t a = 0; a < inputs.size(); ++a) {
    CAPSIM_TRY(place(static_cast<int>(a) + 1, inputs[a]));
  }
  for (int piece = 0; piece < 4; ++piece) {
    launch.scalars[piece] = static_cast<float>((seed >> (16 * piece)) & 0xffffu);
  }
  launch.scalars[4] = static_cast<float>(static_cast<int>(mix_store(out.meta.dtype)));
  launch.scalars[5] = first ? 1.0f : 0.0f;
  return launch;
}

}  // namespace capsim
