// Checking that a CUDA graph is exactly the StepProgram it was built from.
//
// The backend builds a graph by explicit construction, one node per step,
// edges copied from the step list (docs/cuda-reference.md, "How it runs"), and
// then reads the template graph back through the driver: each node's type, its
// dependencies, and its parameters (a kernel's raw arguments decoded by the
// kernel ABI table, a memcpy's or a memset's addresses). This file holds the
// comparison of that reading with the program, in plain C++, so that every
// rule is tested without a GPU:
//   - as many nodes as steps, each of the step's type, with the step's
//     dependencies (no extra or missing node: a silently dropped node, as
//     stream capture can produce, is caught here);
//   - every kernel of the step's kind with the step's geometry, scalars and
//     mask, and every pointer, translated back through the registry, equal to
//     the step's simulated address;
//   - every baked range, [pointer, pointer + extent), inside exactly one
//     registered buffer;
//   - any other node type is refused.
// The result is the list of baked ranges, the baseline that every later
// reading (after each replay) must equal.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cuda_reference/buffer_registry.hpp"
#include "model/step_program.hpp"

namespace capsim::cuda {

// X(enumerator, name)
#define CAPSIM_GRAPH_NODE_TYPES(X) \
  X(kKernel, "kernel")             \
  X(kMemcpy, "memcpy")             \
  X(kMemset, "memset")             \
  X(kOther, "other")

enum class GraphNodeType : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_GRAPH_NODE_TYPES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view graph_node_type_name(GraphNodeType type);

// One node of the template graph as the driver described it, with real
// addresses.
struct NodeReading {
  GraphNodeType type = GraphNodeType::kOther;
  std::string other_type;              // kOther: the driver's name for it
  std::vector<std::uint32_t> deps;     // indices of the nodes it depends on
  std::optional<KernelLaunch> kernel;  // kKernel: decode_params' result
  CopyStep copy;                       // kMemcpy: dst, src, bytes
  MemsetStep memset;                   // kMemset
};

struct BakedRange {
  StepIndex step = 0;
  std::uint8_t arg = 0;  // as PointerUse::arg
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::size_t buffer = 0;  // registry index
  friend bool operator==(const BakedRange&, const BakedRange&) = default;
};

// The checks above; the error names the step (and the argument) that
// differs and both values.
Result<std::vector<BakedRange>> verify_mirror(const StepProgram& program,
                                              std::span<const NodeReading> nodes,
                                              const BufferRegistry& registry);

// A later reading against the baseline: the same ranges in the same order.
Status check_same_baked(std::span<const BakedRange> baseline, std::span<const BakedRange> now);

}  // namespace capsim::cuda
