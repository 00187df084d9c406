// BackwardOps: the tensor work of a backward, shared by the eager engine and
// the interpreter of captured graphs (sim/ private; not part of the API).
//
// The eager engine (autograd_backward.cpp) and the FX interpreter
// (compiled_backward.cpp) must compute bitwise equal gradients (P-equal),
// so both run the same formulas through the same kernels: this class. It owns
// the temporaries a run makes (released at the end, except the grads that were
// stored into a leaf's .grad) and knows nothing of graphs or FX: a formula gets
// its saved state as a FormulaInputs, filled from an AutogradNode by the engine
// and from a call's arguments by the interpreter.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "model/kernel_launch.hpp"
#include "sim/autograd/autograd_engine.hpp"

namespace capsim {

using Grads = std::vector<std::optional<TensorId>>;

// What a functional formula reads besides the incoming grad.
struct FormulaInputs {
  std::string_view name;                         // "MulBackward0", ...
  std::span<const TensorId> saved;               // saved tensors, in the node's order
  std::span<const std::int64_t> sizes;           // saved sizes (SymInt lists, flattened)
  const TensorGeometry* base = nullptr;          // AsStridedBackward0: self_geometry
  const TensorGeometry* view = nullptr;          // AsStridedBackward0: size, stride, offset
  std::span<const std::optional<DType>> dtypes;  // per output: the dtype it must have
};

class BackwardOps {
 public:
  explicit BackwardOps(AutogradEngine& engine) : e_(engine), first_owned_(engine.owned_.size()) {}
  ~BackwardOps() { release_temporaries(); }
  BackwardOps(const BackwardOps&) = delete;
  BackwardOps& operator=(const BackwardOps&) = delete;

  // A functional formula: one grad per needed output (the functional node
  // kinds of docs/compiled-autograd.md, "Phase B").
  Result<Grads> formula(const FormulaInputs& in, TensorId g, const std::vector<bool>& needed);

  // CopySlices, in the three parts that the functional capture emits:
  // the base-shaped result with the view's slice and its clone ...
  struct CopySlicesPrologue {
    TensorId result;
    TensorId grad_slice;
    TensorId grad_slice_clone;
  };
  Result<CopySlicesPrologue> copy_slices_prologue(TensorId g, const TensorGeometry& base,
                                                  const TensorGeometry& view);
  // ... then the inner formula on the clone, then the epilogue: the inner
  // grad for self written back into the slice, the others passed through.
  Result<Grads> copy_slices_epilogue(const std::vector<bool>& needed,
                                     const CopySlicesPrologue& prologue, const Grads& inner);

  // PyNode / CppNode: the user's backward, grad * factor (or the buggy sizes).
  Result<Grads> custom(const CustomFunction& fn, TensorId g, const std::vector<bool>& needed);

  // validate_outputs for one grad: sum_to a broadcast shape, cast the dtype.
  // `who` prefixes the errors ("Function MulBackward0").
  Result<TensorId> validate_one(std::string_view who, std::size_t index, TensorId grad,
                                const TensorMeta& want, bool check_device_and_layout);

  // AccumulateGrad into `leaf`'s .grad: the first grad is stored (stolen when
  // `stealable`, cloned otherwise), later ones are added in place.
  Status accumulate(TensorId leaf, TensorId g, bool stealable);
  // A post-accumulate-grad hook: .grad *= scale, in place.
  Status scale_grad(TensorId leaf, float scale);

  Result<TensorId> scaled(TensorId in, float factor) { return e_.scaled(in, factor); }
  Result<TensorId> add(TensorId a, TensorId b) { return e_.binary(KernelKind::kAdd, a, b); }
  Result<TensorId> mul(TensorId a, TensorId b) { return e_.binary(KernelKind::kMul, a, b); }
  Result<TensorId> clone(TensorId in);
  Result<TensorId> cast(TensorId in, DType dtype);

  bool made_here(TensorId id) const;
  bool is_view(TensorId id) const { return is_view_.count(id) != 0; }
  AutogradEngine& engine() { return e_; }

 protected:
  Result<TensorArg> arg(TensorId id) const;
  Result<TensorId> zeros(const Dims& sizes, DType dtype);
  Result<TensorId> view(TensorId base, const TensorMeta& meta);
  Result<std::pair<TensorId, TensorId>> strided_into(const TensorGeometry& base,
                                                     const TensorGeometry& v, DType dtype,
                                                     const char* who);
  // Releases what this run made, except the grads it stored.
  void release_temporaries();

  AutogradEngine& e_;
  const std::size_t first_owned_;
  std::set<TensorId> is_view_;
  std::set<TensorId> kept_;

 private:
  // The formulas that formula() dispatches to, one per node kind.
  Result<Grads> mul_backward(const FormulaInputs& in, TensorId g, const std::vector<bool>& needed);
  Result<Grads> pass_grad_through(TensorId g, const std::vector<bool>& needed);
  Result<Grads> sum_backward(const FormulaInputs& in, TensorId g, const std::vector<bool>& needed);
  Result<Grads> mm_backward(const FormulaInputs& in, TensorId g, const std::vector<bool>& needed);
  Result<Grads> relu_backward(const FormulaInputs& in, TensorId g, const std::vector<bool>& needed);
  Result<Grads> to_copy_backward(const FormulaInputs& in, TensorId g,
                                 const std::vector<bool>& needed);
  Result<Grads> expand_backward(const FormulaInputs& in, TensorId g,
                                const std::vector<bool>& needed);
  Result<Grads> slice_backward(const FormulaInputs& in, TensorId g,
                               const std::vector<bool>& needed);
  Result<Grads> as_strided_backward(const FormulaInputs& in, TensorId g,
                                    const std::vector<bool>& needed);
  Result<Grads> copy_backwards(const FormulaInputs& in, TensorId g,
                               const std::vector<bool>& needed);
};

}  // namespace capsim
