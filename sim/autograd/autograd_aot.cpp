// AutogradEngine::compiled_mul: an AOT-compiled region whose backward is one
// CompiledFunctionBackward node (docs/compiled-autograd.md, "Phase B", the AOT
// backward), optionally with a TwoTensor-like subclass output (make_subclass,
// #144115).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/autograd/autograd_engine.hpp"

namespace capsim {

Result<Variable> AutogradEngine::compiled_mul(const Variable& a, const Variable& b,
                                              bool subclass_output) {
  CAPSIM_TRY_ASSIGN(const Tensor ta, tensor(a.tensor));
  CAPSIM_TRY_ASSIGN(const Tensor tb, tensor(b.tensor));
  if (ta.meta.sizes != tb.meta.sizes) {
    return make_error(fmt::format("compiled region: input 1 has sizes {}, but input 0 has {}",
                                  tb.meta.sizes, ta.meta.sizes));
  }
  CAPSIM_TRY_ASSIGN(TensorId out, binary(KernelKind::kMul, a.tensor, b.tensor));
  std::uint32_t subclass_outputs = 0;
  if (subclass_output) {
    CAPSIM_TRY_ASSIGN(const Tensor first, tensor(out));
    CAPSIM_TRY_ASSIGN(const TensorId second, fresh(first.meta.sizes, first.meta.dtype));
    CAPSIM_TRY(copy_into(second, out));
    TensorMeta meta = first.meta;
    meta.is_subclass = true;
    CAPSIM_TRY_ASSIGN(const TensorId wrapper, view_of(out, meta));
    subclass_inner_[wrapper] = {out, second};
    out = wrapper;
    subclass_outputs = 1;
  }
  AutogradNode node;
  node.kind = AutogradNodeKind::kAotBackward;
  node.name = "CompiledFunctionBackward";
  node.saved_tensors = {a.tensor, b.tensor};
  node.subclass_outputs = subclass_outputs;
  const Variable in[] = {a, b};
  return finish(out, std::move(node), in);
}

Result<std::pair<TensorId, TensorId>> AutogradEngine::inner_tensors(TensorId subclass) const {
  const auto it = subclass_inner_.find(subclass);
  if (it == subclass_inner_.end()) {
    return make_error(fmt::format("tensor {} is not a subclass output", subclass.value));
  }
  return it->second;
}

}  // namespace capsim
