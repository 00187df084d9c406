// Random autograd programs: the inputs of the compiled-autograd properties.
//
// An AutogradProgram is plain data (a leaf count and a list of steps, each an
// op over two earlier variables picked modulo those that exist), so that a
// shrinker can drop steps; `forward` runs it on the eager engine and returns
// loss = sum(every variable), so every node is reachable and leaves get
// fan-in. The steps cover every node kind the capture distinguishes:
// functional ops, fan-in, CopySlices, CopyBackwards, PyNode, CppNode, an AOT
// region (with a subclass output) and hooks. The RapidCheck generators are in
// autograd_programs_rc.hpp.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/autograd/autograd_engine.hpp"

namespace capsim {

// X(enumerator, name): the forward steps the generator draws.
#define CAPSIM_AUTOGRAD_STEP_KINDS(X)           \
  X(kMul, "mul")                                \
  X(kAdd, "add")                                \
  X(kRelu, "relu")                              \
  X(kClone, "clone")                            \
  X(kCopySlices, "slice_mul_")                  \
  X(kCopyBackwards, "copy_to_float64_and_back") \
  X(kPyFunction, "autograd.Function")           \
  X(kCppFunction, "cpp Function")               \
  X(kAot, "aot region")                         \
  X(kAotSubclass, "aot region, TwoTensor out")  \
  X(kTensorHook, "tensor hook")                 \
  X(kPreHook, "pre hook")                       \
  X(kPostHook, "post hook")
enum class AutogradStepKind : int {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_AUTOGRAD_STEP_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
      kCount
};
const char* autograd_step_name(AutogradStepKind s);

// One step: an op over variables a and b (indices modulo those that exist).
struct AutogradStep {
  int kind = 0;
  std::size_t a = 0;
  std::size_t b = 0;
};

struct AutogradProgram {
  int leaves = 1;
  std::vector<AutogradStep> steps;
};

std::ostream& operator<<(std::ostream& os, const AutogradProgram& p);

// Runs the program's forward on `e`; `offset` changes the values only (the
// same program with another offset has the same graph and other grads).
Result<Variable> forward(AutogradEngine& e, const AutogradProgram& p, float offset);

// The program as one line: "leaves=2; mul(v0, v1); ...; loss = sum(every variable)".
std::string describe(const AutogradProgram& p);

}  // namespace capsim
