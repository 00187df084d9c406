// The eager oracle: what a function computes when nothing is captured.
//
// P-replay says a replay's outputs equal running the same function eagerly on
// the same inputs. The oracle copies the inputs' storages into a scratch memory
// of its own (so it never perturbs the simulated allocator), runs the body there
// eagerly and returns each output's elements in row-major order as raw float
// bits, so that the comparison is bitwise and NaN payloads count.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/device_memory.hpp"
#include "model/tensor_store.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

using ElementBits = std::vector<std::uint32_t>;

// The elements of a tensor at `data` with `meta`, row-major.
Result<ElementBits> gather_bits(const DeviceMemory& memory, Address data, const TensorMeta& meta);

// Inputs that share a storage share one scratch storage, so aliasing (and
// in-place writes through it) is reproduced.
Result<std::vector<ElementBits>> eager_reference_outputs(const FunctionDef& def,
                                                         const TensorStore& store,
                                                         const DeviceMemory& memory,
                                                         std::span<const TensorId> inputs);

}  // namespace capsim
