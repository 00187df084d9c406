// Running a FunctionDef: eagerly (warmup, eager fallback, plain eager code) or
// under capture (a recording).
//
// Eager: each op allocates its result from `pool` and runs now on the backend.
// Capture: each op allocates the same way (the allocator state during capture
// is real, as in PyTorch: a capture allocates from the private pool) but its
// launch is appended to `capture` with the addresses baked in, and nothing runs.
// Captured steps form one chain, as a single-stream capture does.
//
// Either way the result is one new tensor per output, each held once for the
// caller; intermediates are dropped before returning, so their blocks go back
// to the pool (the graph may reuse them, as PyTorch's capture does).
#pragma once

#include <span>
#include <vector>

#include "model/cpu_backend.hpp"
#include "model/step_program.hpp"
#include "sim/core/function_def.hpp"
#include "sim/core/tensor_refs.hpp"

namespace capsim {

struct BodyEnv {
  TensorRefs& refs;
  CpuBackend& backend;
  PoolId pool = kDefaultPool;
  StepProgram* capture = nullptr;  // null: run eagerly
};

Result<std::vector<TensorId>> run_body(const FunctionDef& def, std::span<const TensorId> inputs,
                                       BodyEnv& env);

// The TensorArg (address of element 0 and metadata) of a live tensor.
Result<TensorArg> tensor_arg(const TensorStore& store, TensorId id);
// The same for a tensor capsim holds (TensorStore::at): aborts if it is gone.
TensorArg held_tensor_arg(const TensorStore& store, TensorId id);

}  // namespace capsim
