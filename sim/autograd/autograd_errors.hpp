// The RuntimeErrors loss.backward() raises before its engine runs a node,
// with PyTorch's texts and capsim's ids (docs/trace-format.md, `error.id`).
//
// A World turns them into error events, as it does every PyTorch error, and
// the program goes on; the engine's own callers get them as errors.
#pragma once

#include <optional>
#include <string>

#include "sim/core/decisions.hpp"

#include "sim/autograd/autograd_engine.hpp"

namespace capsim {

struct BackwardRaise {
  Decision id;  // G1..G4
  std::string message;
};

// G1, from run_backward (torch/csrc/autograd/python_engine.cpp): the root
// has no grad_fn and needs no grad.
inline constexpr const char* kErrNoGradFn =
    "element 0 of tensors does not require grad and does not have a grad_fn";
// G2, from _make_grads (torch/autograd/__init__.py): no gradient= for a
// root that is not a scalar.
inline constexpr const char* kErrImplicitGrad =
    "grad can be implicitly created only for scalar outputs";
// G3, ERR_BACKWARD_TWICE (torch/csrc/autograd/saved_variable.cpp): a node
// unpacks saved state that a backward without retain_graph freed.
inline constexpr const char* kErrBackwardTwice =
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.";
// G4, from _make_grads: gradient= of another shape than the root.
std::string mismatch_in_shape(const Dims& grad, const Dims& root);

// What PyTorch raises for this backward before any node runs, or none. G3
// (a node it reaches was freed) only when `compiled`: compiled autograd
// unpacks every saved variable in Phase A (torch/csrc/autograd/
// compiled_autograd.h, TensorArgs::add), before any node runs, where the
// eager engine raises it from the node's own SavedVariable::unpack, after the
// nodes before it ran (AutogradEngine::autograd_backward returns it then).
Result<std::optional<BackwardRaise>> backward_raise(const AutogradEngine& engine,
                                                    const Variable& root,
                                                    const AutogradEngine::BackwardOptions& options,
                                                    bool compiled);

}  // namespace capsim
