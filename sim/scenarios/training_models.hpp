// The MLPs of the training-loop scenarios and of the loop properties'
// generator: loss = sum(relu(...relu(x @ w1)... ) @ wL), no biases (a
// broadcast add's grad is reduced by validate_outputs, which the lowering of
// a compiled-autograd capture does not express yet).
//
// `widths` are the layer widths, input first: {in, hidden..., out}, so a
// model has widths.size() - 1 layers and params w1..wL of sizes
// {widths[k-1], widths[k]}.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/function_def.hpp"

namespace capsim {

struct MlpShape {
  std::int64_t batch = 4;
  std::vector<std::int64_t> widths;  // at least 2
  std::size_t layers() const { return widths.size() - 1; }
};

// "w1".."wL".
std::vector<std::string> mlp_param_names(const MlpShape& shape);

// The eager forward `name(x, w1..wL)` returning the loss. With `aot`, the
// compiled forward as AOTAutograd partitions it: params are static inputs,
// and it returns the loss, then the saved x and every hidden activation
// h1..h(L-1) (the relu results the backward needs).
FunctionDef mlp_forward(const MlpShape& shape, const std::string& name, bool aot);

// The AOT backward of mlp_forward(aot): inputs x, h1..h(L-1), w2..wL, then
// the tangent; one grad per param, w1 first.
FunctionDef mlp_backward(const MlpShape& shape, const std::string& name);

}  // namespace capsim
