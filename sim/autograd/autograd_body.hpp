// Plain eager PyTorch on tensors that require grad: a FunctionDef body run
// through the autograd engine, so that its ops record the backward graph.
//
// Each op with a differentiable counterpart in the engine (add, mul, sum, mm,
// relu, clone) runs as that engine op: the same kernels as the body
// interpreter (sim/core/body_interpreter.hpp), so the values are bitwise the
// ones an eager_call without autograd computes, and the node autograd records
// ("MulBackward0", ...) with the tensors it saves. Any other op is an error
// naming it: the engine has no formula for it yet.
//
// The limits of the body interpreter hold here too (a result's elements, an
// mm's multiply-adds), checked before anything is allocated.
#pragma once

#include <span>
#include <vector>

#include "sim/autograd/autograd_engine.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

// Runs `def` on `inputs` (variables of `engine`) and returns its outputs.
// Every tensor made on the way is the engine's (AutogradEngine::owned).
Result<std::vector<Variable>> run_body_with_autograd(AutogradEngine& engine, const FunctionDef& def,
                                                     std::span<const Variable> inputs);

}  // namespace capsim
