// BackwardOps (see autograd_backward_ops.hpp): the functional formulas, CopySlices, custom
// functions, validate_outputs and AccumulateGrad, each run through the shared kernels so that
// the eager engine and the captured graph's interpreter get bitwise equal grads.
#include "sim/autograd/autograd_backward_ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace capsim {

namespace {

// X(enumerator, name): the functional formulas capsim knows.
#define CAPSIM_AUTOGRAD_FORMULAS(X)   \
  X(kMul, "MulBackward0")             \
  X(kAdd, "AddBackward0")             \
  X(kSum, "SumBackward0")             \
  X(kMm, "MmBackward0")               \
  X(kRelu, "ReluBackward0")           \
  X(kClone, "CloneBackward0")         \
  X(kToCopy, "ToCopyBackward0")       \
  X(kExpand, "ExpandBackward0")       \
  X(kSlice, "SliceBackward0")         \
  X(kAsStrided, "AsStridedBackward0") \
  X(kCopyBackwards, "CopyBackwards")

enum class Formula : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_AUTOGRAD_FORMULAS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

std::optional<Formula> formula_named(std::string_view name) {
#define CAPSIM_MATCH_(e, n) \
  if (name == n) return Formula::e;
  CAPSIM_AUTOGRAD_FORMULAS(CAPSIM_MATCH_)
#undef CAPSIM_MATCH_
  return std::nullopt;
}

// at::is_expandable_to(shape, desired).
bool is_expandable_to(const Dims& shape, const Dims& desired) {
  if (shape.size() > desired.size()) return false;
  const std::size_t lead = desired.size() - shape.size();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != desired[lead + d] && shape[d] != 1) return false;
  }
  return true;
}

std::string device_text(const Device& d) {
  return d.type == DeviceType::kCpu ? "cpu" : fmt::format("cuda:{}", d.index);
}

// Whether input k wants a grad; inputs past the end of `needed` do not.
bool is_needed(const std::vector<bool>& needed, std::size_t k) {
  return k < needed.size() && needed[k];
}

// Saved tensor k, or an error naming the formula: the saved state comes from
// a node or a captured call and may hold fewer tensors than the formula reads.
Result<TensorId> saved_tensor(const FormulaInputs& in, std::size_t k) {
  if (k >= in.saved.size()) {
    return make_error(
        fmt::format("{}: saved tensor {} is missing (has {})", in.name, k, in.saved.size()));
  }
  return in.saved[k];
}

// The dtype grad k must have, or `fallback` where none was recorded.
DType output_dtype(const FormulaInputs& in, std::size_t k, DType fallback) {
  return k < in.dtypes.size() && in.dtypes[k] ? *in.dtypes[k] : fallback;
}

}  // namespace

// --- Small helpers -------------------------------------------------------------

Result<TensorArg> BackwardOps::arg(TensorId id) const {
  CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(id));
  CAPSIM_TRY_ASSIGN(const Address address, e_.device_.store.data_address(id));
  return TensorArg{address, t.meta};
}

bool BackwardOps::made_here(TensorId id) const {
  for (std::size_t k = first_owned_; k < e_.owned_.size(); ++k) {
    if (e_.owned_[k] == id) return true;
  }
  return false;
}

Result<TensorId> BackwardOps::clone(TensorId in) {
  CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(in));
  CAPSIM_TRY_ASSIGN(const TensorId out, e_.fresh(t.meta.sizes, t.meta.dtype));
  CAPSIM_TRY(e_.copy_into(out, in));
  return out;
}

Result<TensorId> BackwardOps::cast(TensorId in, DType dtype) {
  CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(in));
  if (t.meta.dtype == dtype) return in;
  CAPSIM_TRY_ASSIGN(const TensorId out, e_.fresh(t.meta.sizes, dtype));
  CAPSIM_TRY(e_.copy_into(out, in));
  return out;
}

Result<TensorId> BackwardOps::zeros(const Dims& sizes, DType dtype) {
  CAPSIM_TRY_ASSIGN(const TensorId out, e_.fresh(sizes, dtype));
  CAPSIM_TRY(e_.fill(out, 0.0f));
  return out;
}

Result<TensorId> BackwardOps::view(TensorId base, const TensorMeta& meta) {
  CAPSIM_TRY_ASSIGN(const TensorId v, e_.view_of(base, meta));
  is_view_.insert(v);
  return v;
}

// A fresh zero tensor of `base`'s sizes, and the view of `view`'s geometry into
// it (as_strided at view.offset - base.offset). The base must be laid out
// contiguously, as every tensor the engine makes is.
Result<std::pair<TensorId, TensorId>> BackwardOps::strided_into(const TensorGeometry& base,
                                                                const TensorGeometry& v,
                                                                DType dtype, const char* who) {
  if (base.strides != contiguous_strides(base.sizes)) {
    return make_unsupported(fmt::format("{}: a base with strides {} is not modelled (sizes {})",
                                        who, base.strides, base.sizes));
  }
  CAPSIM_TRY_ASSIGN(const TensorId result, zeros(base.sizes, dtype));
  CAPSIM_TRY_ASSIGN(const Tensor r, e_.tensor(result));
  CAPSIM_TRY_ASSIGN(const Storage s, e_.device_.store.storage(r.storage));
  CAPSIM_TRY_ASSIGN(
      const TensorMeta meta,
      as_strided(r.meta, v.sizes, v.strides, v.storage_offset - base.storage_offset, s.nbytes));
  CAPSIM_TRY_ASSIGN(const TensorId slice, view(result, meta));
  return std::pair{result, slice};
}

// --- Formulas --------------------------------------------------------------------

Result<Grads> BackwardOps::formula(const FormulaInputs& in, TensorId g,
                                   const std::vector<bool>& needed) {
  const std::optional<Formula> f = formula_named(in.name);
  if (!f) return make_error(fmt::format("autograd: no formula for {}", in.name));
  switch (*f) {
    case Formula::kMul: return mul_backward(in, g, needed);
    case Formula::kAdd:
    case Formula::kClone: return pass_grad_through(g, needed);
    case Formula::kSum: return sum_backward(in, g, needed);
    case Formula::kMm: return mm_backward(in, g, needed);
    case Formula::kRelu: return relu_backward(in, g, needed);
    case Formula::kToCopy: return to_copy_backward(in, g, needed);
    case Formula::kExpand: return expand_backward(in, g, needed);
    case Formula::kSlice: return slice_backward(in, g, needed);
    case Formula::kAsStrided: return as_strided_backward(in, g, needed);
    case Formula::kCopyBackwards: return copy_backwards(in, g, needed);
  }
  return make_error(fmt::format("autograd: no formula for {}", in.name));
}

// self * other: grad * other for self, grad * self for other.
Result<Grads> BackwardOps::mul_backward(const FormulaInputs& in, TensorId g,
                                        const std::vector<bool>& needed) {
  Grads out(needed.size());
  if (is_needed(needed, 0)) {
    CAPSIM_TRY_ASSIGN(const TensorId other, saved_tensor(in, 1));
    CAPSIM_TRY_ASSIGN(out[0], e_.binary(KernelKind::kMul, g, other));
  }
  if (is_needed(needed, 1)) {
    CAPSIM_TRY_ASSIGN(const TensorId self, saved_tensor(in, 0));
    CAPSIM_TRY_ASSIGN(out[1], e_.binary(KernelKind::kMul, g, self));
  }
  return out;
}

// add and clone: every needed input gets the incoming grad itself.
Result<Grads> BackwardOps::pass_grad_through(TensorId g, const std::vector<bool>& needed) {
  Grads out(needed.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (is_needed(needed, k)) out[k] = g;
  }
  return out;
}

// sum(): the 0-d grad expanded (a view, no copy) to the input's saved sizes.
Result<Grads> BackwardOps::sum_backward(const FormulaInputs& in, TensorId g,
                                        const std::vector<bool>& needed) {
  Grads out(needed.size());
  CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
  const Dims sizes(in.sizes.begin(), in.sizes.end());
  CAPSIM_TRY_ASSIGN(const TensorMeta meta, expand(t.meta, sizes));
  if (is_needed(needed, 0)) {
    CAPSIM_TRY_ASSIGN(out[0], view(g, meta));
  }
  return out;
}

// mm(self, mat2): grad @ mat2.t() for self, self.t() @ grad for mat2.
Result<Grads> BackwardOps::mm_backward(const FormulaInputs& in, TensorId g,
                                       const std::vector<bool>& needed) {
  Grads out(needed.size());
  if (is_needed(needed, 0)) {
    CAPSIM_TRY_ASSIGN(const TensorId mat2, saved_tensor(in, 1));
    CAPSIM_TRY_ASSIGN(const TensorId mat2_t, e_.transposed(mat2));
    CAPSIM_TRY_ASSIGN(out[0], e_.matmul(g, mat2_t));
  }
  if (is_needed(needed, 1)) {
    CAPSIM_TRY_ASSIGN(const TensorId self, saved_tensor(in, 0));
    CAPSIM_TRY_ASSIGN(const TensorId self_t, e_.transposed(self));
    CAPSIM_TRY_ASSIGN(out[1], e_.matmul(self_t, g));
  }
  return out;
}

// relu: the grad where the saved result is positive, zero elsewhere.
Result<Grads> BackwardOps::relu_backward(const FormulaInputs& in, TensorId g,
                                         const std::vector<bool>& needed) {
  Grads out(needed.size());
  if (!is_needed(needed, 0)) return out;
  CAPSIM_TRY_ASSIGN(const TensorId result, saved_tensor(in, 0));
  CAPSIM_TRY_ASSIGN(const TensorArg tg, arg(g));
  CAPSIM_TRY_ASSIGN(const TensorArg tr, arg(result));
  CAPSIM_TRY_ASSIGN(out[0], e_.fresh(tg.meta.sizes, tg.meta.dtype));
  CAPSIM_TRY_ASSIGN(const TensorArg o, arg(*out[0]));
  CAPSIM_TRY(e_.launch(launch_relu_backward(o, tg, tr)));
  return out;
}

// _to_copy: the grad cast back to the input's dtype.
Result<Grads> BackwardOps::to_copy_backward(const FormulaInputs& in, TensorId g,
                                            const std::vector<bool>& needed) {
  Grads out(needed.size());
  if (is_needed(needed, 0)) {
    CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
    CAPSIM_TRY_ASSIGN(out[0], cast(g, output_dtype(in, 0, t.meta.dtype)));
  }
  return out;
}

// expand: the grad summed back to the input's saved sizes.
Result<Grads> BackwardOps::expand_backward(const FormulaInputs& in, TensorId g,
                                           const std::vector<bool>& needed) {
  Grads out(needed.size());
  if (is_needed(needed, 0)) {
    const Dims sizes(in.sizes.begin(), in.sizes.end());
    CAPSIM_TRY_ASSIGN(out[0], e_.sum_to(g, sizes));
  }
  return out;
}

// slice along dim 0: zeros of the input's sizes with the grad copied into
// the sliced rows. The saved sizes are the input's, then four more (torch's
// dim, start, end, step), of which start and end are read.
Result<Grads> BackwardOps::slice_backward(const FormulaInputs& in, TensorId g,
                                          const std::vector<bool>& needed) {
  Grads out(needed.size());
  if (!is_needed(needed, 0)) return out;
  if (in.sizes.size() < 5) {
    return make_error(
        fmt::format("SliceBackward0: {} saved sizes, want rank + 4", in.sizes.size()));
  }
  const Dims sizes(in.sizes.begin(), in.sizes.end() - 4);
  const std::int64_t start = in.sizes[sizes.size() + 1];
  const std::int64_t end = in.sizes[sizes.size() + 2];
  CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
  CAPSIM_TRY_ASSIGN(const TensorId result, zeros(sizes, t.meta.dtype));
  CAPSIM_TRY_ASSIGN(const Tensor r, e_.tensor(result));
  CAPSIM_TRY_ASSIGN(const TensorMeta meta, slice(r.meta, 0, start, end));
  CAPSIM_TRY_ASSIGN(const TensorId into, view(result, meta));
  CAPSIM_TRY(e_.copy_into(into, g));
  out[0] = result;
  return out;
}

// as_strided: zeros of the base's geometry with the grad copied into the
// view's strided window.
Result<Grads> BackwardOps::as_strided_backward(const FormulaInputs& in, TensorId g,
                                               const std::vector<bool>& needed) {
  Grads out(needed.size());
  if (!is_needed(needed, 0)) return out;
  if (in.base == nullptr || in.view == nullptr) {
    return make_error("AsStridedBackward0: no saved geometry");
  }
  CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
  CAPSIM_TRY_ASSIGN(const auto pair,
                    strided_into(*in.base, *in.view, t.meta.dtype, "AsStridedBackward0"));
  CAPSIM_TRY(e_.copy_into(pair.second, g));
  out[0] = pair.first;
  return out;
}

// copy_(self, src): self was overwritten, so it gets zeros; src gets the grad
// in its own dtype.
Result<Grads> BackwardOps::copy_backwards(const FormulaInputs& in, TensorId g,
                                          const std::vector<bool>& needed) {
  Grads out(needed.size());
  CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
  if (is_needed(needed, 0)) {
    CAPSIM_TRY_ASSIGN(out[0], zeros(t.meta.sizes, t.meta.dtype));
  }
  if (is_needed(needed, 1)) {
    CAPSIM_TRY_ASSIGN(out[1], cast(g, output_dtype(in, 1, t.meta.dtype)));
  }
  return out;
}

// --- CopySlices ------------------------------------------------------------------

Result<BackwardOps::CopySlicesPrologue> BackwardOps::copy_slices_prologue(
    TensorId g, const TensorGeometry& base, const TensorGeometry& view) {
  CAPSIM_TRY_ASSIGN(const Tensor t, e_.tensor(g));
  CAPSIM_TRY_ASSIGN(const auto pair, strided_into(base, view, t.meta.dtype, "CopySlices"));
  CAPSIM_TRY(e_.copy_into(pair.first, g));
  CAPSIM_TRY_ASSIGN(const TensorId grad_slice_clone, clone(pair.second));
  return CopySlicesPrologue{pair.first, pair.second, grad_slice_clone};
}

Result<Grads> BackwardOps::copy_slices_epilogue(const std::vector<bool>& needed,
                                                const CopySlicesPrologue& prologue,
                                                const Grads& inner) {
  Grads out(needed.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i == 0) {
      if (!inner.empty() && inner[0]) {
        CAPSIM_TRY(e_.copy_into(prologue.grad_slice, *inner[0]));
      } else {
        CAPSIM_TRY(e_.fill(prologue.grad_slice, 0.0f));
      }
      out[0] = prologue.result;
    } else if (needed[i] && i < inner.size()) {
      out[i] = inner[i];
    }
  }
  return out;
}

// --- Custom functions, validate_outputs, AccumulateGrad ----------------------------

Result<Grads> BackwardOps::custom(const CustomFunction& fn, TensorId g,
                                  const std::vector<bool>& needed) {
  Grads out(needed.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (!needed[k]) continue;
    if (fn.bad_grad_sizes) {
      CAPSIM_TRY_ASSIGN(out[k], e_.fresh(*fn.bad_grad_sizes));
      CAPSIM_TRY(e_.fill(*out[k], fn.factor));
    } else {
      CAPSIM_TRY_ASSIGN(out[k], e_.scaled(g, fn.factor));
    }
  }
  return out;
}

Result<TensorId> BackwardOps::validate_one(std::string_view who, std::size_t index, TensorId grad,
                                           const TensorMeta& want, bool check_device_and_layout) {
  CAPSIM_TRY_ASSIGN(Tensor g, e_.tensor(grad));
  if (g.meta.sizes != want.sizes) {
    if (!is_expandable_to(want.sizes, g.meta.sizes)) {
      return make_error(fmt::format(
          "{} returned an invalid gradient at index {} - got {} but expected shape compatible "
          "with {}",
          who, index, g.meta.sizes, want.sizes));
    }
    CAPSIM_TRY_ASSIGN(grad, e_.sum_to(grad, want.sizes));
    CAPSIM_TRY_ASSIGN(g, e_.tensor(grad));
  }
  if (g.meta.dtype != want.dtype) {
    CAPSIM_TRY_ASSIGN(grad, cast(grad, want.dtype));
  }
  if (!check_device_and_layout) return grad;
  if (g.meta.layout != want.layout) {
    return make_error(fmt::format(
        "{} returned an invalid gradient at index {} - expected layout strided but got another",
        who, index));
  }
  if (g.meta.device != want.device) {
    return make_error(
        fmt::format("{} returned an invalid gradient at index {} - expected device {} but got {}",
                    who, index, device_text(want.device), device_text(g.meta.device)));
  }
  return grad;
}

Status BackwardOps::accumulate(TensorId leaf, TensorId g, bool stealable) {
  auto it = e_.grads_.find(leaf);
  if (it == e_.grads_.end()) {
    TensorId stored = g;
    if (!stealable) {
      CAPSIM_TRY_ASSIGN(stored, clone(g));
    }
    kept_.insert(stored);
    e_.grads_.emplace(leaf, stored);
    return {};
  }
  CAPSIM_TRY_ASSIGN(const TensorArg acc, arg(it->second));
  CAPSIM_TRY_ASSIGN(const TensorArg add, arg(g));
  return e_.launch(launch_binary(KernelKind::kAdd, acc, acc, add));
}

Status BackwardOps::scale_grad(TensorId leaf, float scale) {
  const auto it = e_.grads_.find(leaf);
  if (it == e_.grads_.end()) return {};
  CAPSIM_TRY_ASSIGN(const TensorId s, e_.fresh({}));
  CAPSIM_TRY(e_.fill(s, scale));
  CAPSIM_TRY_ASSIGN(const TensorArg acc, arg(it->second));
  CAPSIM_TRY_ASSIGN(TensorArg factor, arg(s));
  CAPSIM_TRY_ASSIGN(factor.meta, expand(factor.meta, acc.meta.sizes));
  return e_.launch(launch_binary(KernelKind::kMul, acc, acc, factor));
}

void BackwardOps::release_temporaries() {
  std::vector<TensorId> keep;
  for (std::size_t k = first_owned_; k < e_.owned_.size(); ++k) {
    const TensorId id = e_.owned_[k];
    if (kept_.count(id) != 0) {
      keep.push_back(id);
      continue;
    }
    consume_error(e_.device_.store.release(id), "the engine owns it: its id is known");
    e_.meta_.erase(id);
  }
  e_.owned_.resize(first_owned_);
  e_.owned_.insert(e_.owned_.end(), keep.begin(), keep.end());
}

}  // namespace capsim
