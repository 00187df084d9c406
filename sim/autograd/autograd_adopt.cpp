// AutogradEngine: tensors the caller owns (autograd_engine.hpp, "Tensors the
// caller owns"). A World lends its tensors to the engine and takes the
// engine's results over, so one reference count decides every lifetime.
#include <fmt/format.h>

#include <algorithm>

#include "sim/autograd/autograd_engine.hpp"

namespace capsim {

Result<Variable> AutogradEngine::adopt(TensorId id, bool requires_grad) {
  if (const auto it = meta_.find(id); it != meta_.end()) {
    if (requires_grad && !it->second.requires_grad) {
      return make_error(
          fmt::format("tensor {} is already known to autograd without requires_grad", id.value));
    }
    return variable(id);
  }
  CAPSIM_TRY_ASSIGN(const Tensor t, tensor(id));
  (void)t;
  meta_[id];
  if (requires_grad) CAPSIM_TRY(add_accumulate_grad(id));
  return variable(id);
}

void AutogradEngine::disown(TensorId id) {
  const auto it = std::find(owned_.begin(), owned_.end(), id);
  CAPSIM_CHECK(it != owned_.end(), "disown of a tensor the engine does not own");
  owned_.erase(it);
}

void AutogradEngine::set_grad(TensorId leaf, std::optional<TensorId> grad) {
  CAPSIM_CHECK(meta_.count(leaf) != 0 && meta_.at(leaf).accumulate.has_value(),
               "set_grad of a tensor that is not a leaf requiring grad");
  if (grad) {
    grads_.insert_or_assign(leaf, *grad);
  } else {
    grads_.erase(leaf);
  }
}

Status AutogradEngine::replace_leaf(TensorId old, TensorId now) {
  const auto it = meta_.find(old);
  if (it == meta_.end() || !it->second.accumulate) {
    return make_error(fmt::format("tensor {} is not a leaf that requires grad", old.value));
  }
  if (meta_.count(now) != 0) {
    return make_error(fmt::format("tensor {} is already known to autograd", now.value));
  }
  CAPSIM_TRY_ASSIGN(const Tensor before, tensor(old));
  CAPSIM_TRY_ASSIGN(const Tensor after, tensor(now));
  CAPSIM_CHECK(before.meta.sizes == after.meta.sizes, ".data keeps the leaf's sizes");
  const Meta moved = it->second;
  meta_.erase(it);
  meta_.emplace(now, moved);
  records_[*moved.accumulate].node.variable = now;
  if (const auto g = grads_.find(old); g != grads_.end()) {
    const TensorId grad = g->second;
    grads_.erase(g);
    grads_.emplace(now, grad);
  }
  return {};
}

void AutogradEngine::release_saved_state(std::span<const AutogradNodeId> nodes) {
  for (AutogradNodeId id : nodes) {
    CAPSIM_CHECK(id < records_.size(), "release of an unknown node");
    released_.insert(id);
  }
}

}  // namespace capsim
