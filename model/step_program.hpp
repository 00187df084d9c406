// StepProgram: an ordered list of steps with concrete addresses.
//
// This is exactly what a CUDA graph contains: kernel launches, device-to-device
// copies and memsets, each with the addresses baked in at record time, plus
// dependency edges. Steps are stored in a topological order (every dependency
// points to an earlier step), and backends run them in that order, so results
// never depend on scheduling. A program knows nothing of tensors: a replay reads
// whatever is at its addresses now, which is how stale reads arise.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/address.hpp"
#include "model/kernel_table.hpp"
#include "model/result.hpp"

namespace capsim {

// X(enumerator, name)
#define CAPSIM_STEP_KINDS(X) \
  X(kKernel, "kernel")       \
  X(kCopy, "copy")           \
  X(kMemset, "memset")

enum class StepKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_STEP_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view step_kind_name(StepKind kind);

// A device-to-device copy of `bytes` bytes (cudaMemcpyAsync). The ranges must
// not overlap, as for memcpy.
struct CopyStep {
  Address dst = 0;
  Address src = 0;
  std::uint64_t bytes = 0;
  friend bool operator==(const CopyStep&, const CopyStep&) = default;
};

// Sets `bytes` bytes to `value` (cudaMemsetAsync).
struct MemsetStep {
  Address dst = 0;
  std::uint64_t bytes = 0;
  std::uint8_t value = 0;
  friend bool operator==(const MemsetStep&, const MemsetStep&) = default;
};

using StepOp = std::variant<KernelLaunch, CopyStep, MemsetStep>;
using StepIndex = std::uint32_t;

struct Step {
  StepOp op;
  std::vector<StepIndex> deps;  // earlier steps this one waits for
};

inline StepKind step_kind(const Step& step) {
  return static_cast<StepKind>(step.op.index());
}

// The limit on steps in one program.
inline constexpr std::size_t kMaxSteps = std::size_t{1} << 20;

struct StepProgram {
  std::string name;
  std::vector<Step> steps;

  // Appends a step and returns its index.
  StepIndex add(StepOp op, std::vector<StepIndex> deps = {});
};

// One address range that a step touches, as a CUDA node holds it.
struct PointerUse {
  StepIndex step = 0;
  std::uint8_t arg = 0;  // kernel pointer index; copy: 0 = dst, 1 = src; memset: 0
  AddressRange range;
  Access access = Access::kRead;
  friend bool operator==(const PointerUse&, const PointerUse&) = default;
};

// Every baked pointer of the program, in step order then argument order.
std::vector<PointerUse> pointer_uses(const StepProgram& program);

// Checks the program's shape: the step limit, dependencies on earlier steps
// only (no duplicates), kernel geometry within limits, non-overlapping copies.
// Errors name the step and the field.
Status validate(const StepProgram& program);

}  // namespace capsim
