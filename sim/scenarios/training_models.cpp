// The MLPs of training_models.hpp.
#include "sim/scenarios/training_models.hpp"

#include <fmt/format.h>

#include "sim/core/function_builder.hpp"

namespace capsim {

std::vector<std::string> mlp_param_names(const MlpShape& shape) {
  std::vector<std::string> out;
  for (std::size_t k = 1; k <= shape.layers(); ++k) out.push_back(fmt::format("w{}", k));
  return out;
}

FunctionDef mlp_forward(const MlpShape& shape, const std::string& name, bool aot) {
  CAPSIM_CHECK(shape.widths.size() >= 2, "an MLP has a layer");
  std::vector<std::string> inputs{"x"};
  for (const std::string& w : mlp_param_names(shape)) inputs.push_back(w);
  FunctionBuilder f(name, CompilationMode::kForward, inputs);
  std::vector<std::uint32_t> params;
  for (std::uint32_t k = 1; k <= shape.layers(); ++k) params.push_back(k);
  if (aot) f.params(params);
  std::vector<ValueIndex> hidden;
  ValueIndex h = f.input(0);
  for (std::uint32_t k = 1; k <= shape.layers(); ++k) {
    h = f.mm(h, f.input(k));
    if (k < shape.layers()) {
      h = f.relu(h);
      hidden.push_back(h);
    }
  }
  std::vector<ValueIndex> outputs{f.sum(h)};
  if (aot) {
    outputs.push_back(f.alias(f.input(0)));
    outputs.insert(outputs.end(), hidden.begin(), hidden.end());
  }
  return f.returns(outputs);
}

FunctionDef mlp_backward(const MlpShape& shape, const std::string& name) {
  const std::uint32_t layers = static_cast<std::uint32_t>(shape.layers());
  std::vector<std::string> inputs{"x"};
  for (std::uint32_t k = 1; k < layers; ++k) inputs.push_back(fmt::format("h{}", k));
  for (std::uint32_t k = 2; k <= layers; ++k) inputs.push_back(fmt::format("w{}", k));
  inputs.push_back("tangents_1");
  FunctionBuilder f(name, CompilationMode::kBackward, inputs);
  // AOTAutograd's count_tangents: the params among the saved inputs are static.
  std::vector<std::uint32_t> statics;
  for (std::uint32_t k = 2; k <= layers; ++k) statics.push_back(layers + k - 2);
  f.static_inputs(statics);
  // The activation entering layer k (h0 is x) and layer k's weight (k >= 2).
  const auto activation = [&](std::uint32_t k) { return f.input(k - 1); };
  const auto weight = [&](std::uint32_t k) { return f.input(layers + k - 2); };
  const std::uint32_t tangent = static_cast<std::uint32_t>(inputs.size() - 1);
  ValueIndex g = f.mul(f.full({shape.batch, shape.widths.back()}, 1.0f), f.input(tangent));
  std::vector<ValueIndex> grads(layers);
  for (std::uint32_t k = layers; k >= 1; --k) {
    grads[k - 1] = f.mm(f.t(activation(k)), g);
    if (k == 1) break;
    // Through layer k's mm into the relu that made its input.
    g = f.relu_backward(f.mm(g, f.t(weight(k))), activation(k));
  }
  return f.returns(grads);
}

}  // namespace capsim
