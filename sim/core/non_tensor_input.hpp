// The kinds of non-Tensor example input a compiled graph can take, for
// Inductor's "non-Tensor inputs" test (output_code.py, CompiledFxGraph.__init__):
// a graph whose example inputs are not all Tensors, SymInts, Generators or
// (from 2.12) opaque objects is not cudagraphed (S4). capsim's bodies compute
// on tensors only, so a program declares these inputs by kind
// (FunctionDef::non_tensor_inputs); they take no part in the body.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace capsim {

// X(enumerator, name, what PyTorch sees)
#define CAPSIM_NON_TENSOR_INPUTS(X)                                           \
  X(kInt, "int", "a plain Python int (a SymInt would be an int key instead)") \
  X(kFloat, "float", "a Python float")                                        \
  X(kBool, "bool", "a Python bool")                                           \
  X(kNone, "none", "None")                                                    \
  X(kGenerator, "generator", "a torch.Generator: always allowed")             \
  X(kOpaque, "opaque",                                                        \
    "an opaque object (OpaqueBase, CustomClassBase from 2.14): allowed from 2.12")
enum class NonTensorInput : std::uint8_t {
#define CAPSIM_ENUM_(e, name, what) e,
  CAPSIM_NON_TENSOR_INPUTS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view non_tensor_input_name(NonTensorInput kind);
std::optional<NonTensorInput> non_tensor_input_from_name(std::string_view name);

// The limit on CUDA devices a graph may name (FunctionDef::cuda_devices).
inline constexpr std::uint32_t kMaxCudaDevices = 64;

}  // namespace capsim
