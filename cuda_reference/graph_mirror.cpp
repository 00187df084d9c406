// The check that a CUDA graph read back from the driver is its StepProgram, node for step (see
// graph_mirror.hpp), and the check that a later reading baked the same ranges.
#include "cuda_reference/graph_mirror.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

namespace capsim::cuda {

namespace {

GraphNodeType type_of(const Step& step) {
  switch (step_kind(step)) {
    case StepKind::kKernel: return GraphNodeType::kKernel;
    case StepKind::kCopy: return GraphNodeType::kMemcpy;
    case StepKind::kMemset: return GraphNodeType::kMemset;
  }
  return GraphNodeType::kOther;
}

bool same_geometry(const kernels::Geometry& a, const kernels::Geometry& b) {
  return a == b;
}

class Mirror {
 public:
  Mirror(const StepProgram& program, const BufferRegistry& registry)
      : program_(program), registry_(registry) {}

  Status node(StepIndex i, const NodeReading& n) {
    const Step& step = program_.steps[i];
    if (n.type == GraphNodeType::kOther) {
      return fail(i, fmt::format("is a {} node, a type the backend never builds (the step is a {})",
                                 n.other_type, step_kind_name(step_kind(step))));
    }
    if (n.type != type_of(step)) {
      return fail(i, fmt::format("is a {} node, the step a {}", graph_node_type_name(n.type),
                                 step_kind_name(step_kind(step))));
    }
    std::vector<std::uint32_t> deps = n.deps;
    std::vector<std::uint32_t> want(step.deps.begin(), step.deps.end());
    std::sort(deps.begin(), deps.end());
    std::sort(want.begin(), want.end());
    if (deps != want) {
      return fail(i, fmt::format("depends on nodes {}, the step on steps {}", deps, want));
    }
    if (const auto* k = std::get_if<KernelLaunch>(&step.op)) return kernel(i, *k, n);
    if (const auto* c = std::get_if<CopyStep>(&step.op)) {
      CAPSIM_TRY(pointer(i, 0, n.copy.dst, c->dst, c->bytes));
      CAPSIM_TRY(pointer(i, 1, n.copy.src, c->src, c->bytes));
      if (n.copy.bytes != c->bytes) {
        return fail(i, fmt::format("copies {} bytes, the step {}", n.copy.bytes, c->bytes));
      }
      return {};
    }
    const auto& m = std::get<MemsetStep>(step.op);
    CAPSIM_TRY(pointer(i, 0, n.memset.dst, m.dst, m.bytes));
    if (n.memset.bytes != m.bytes || n.memset.value != m.value) {
      return fail(i, fmt::format("sets {} bytes to {}, the step {} bytes to {}", n.memset.bytes,
                                 n.memset.value, m.bytes, m.value));
    }
    return {};
  }

  std::vector<BakedRange> take() { return std::move(baked_); }

 private:
  Status kernel(StepIndex i, const KernelLaunch& step, const NodeReading& n) {
    if (!n.kernel) return fail(i, "is a kernel node whose parameters were not read");
    const KernelLaunch& k = *n.kernel;
    if (k.kind != step.kind) {
      return fail(i, fmt::format("runs kernel {}, the step {}", kernel_name(k.kind),
                                 kernel_name(step.kind)));
    }
    const KernelSignature& sig = signature(step.kind);
    for (int p = 0; p < sig.num_pointers; ++p) {
      if (!same_geometry(k.geometry[p], step.geometry[p])) {
        return fail(i, fmt::format("kernel {}: the geometry of {} differs", kernel_name(k.kind),
                                   sig.pointer_names[p]));
      }
    }
    for (int s = 0; s < sig.num_scalars; ++s) {
      // Bitwise: a scalar that rounds differently is a different graph.
      if (std::memcmp(&k.scalars[s], &step.scalars[s], sizeof(float)) != 0) {
        return fail(i, fmt::format("kernel {}: scalar {} is {}, the step's {}", kernel_name(k.kind),
                                   sig.scalar_names[s], k.scalars[s], step.scalars[s]));
      }
    }
    if (sig.uses_reduce_mask && k.reduce_mask != step.reduce_mask) {
      return fail(i, fmt::format("kernel {}: reduce mask {:#x}, the step's {:#x}",
                                 kernel_name(k.kind), k.reduce_mask, step.reduce_mask));
    }
    for (int p = 0; p < sig.num_pointers; ++p) {
      const AddressRange extent = pointer_extent(k, p);
      CAPSIM_TRY(
          pointer(i, static_cast<std::uint8_t>(p), k.pointers[p], step.pointers[p], extent.bytes));
    }
    return {};
  }

  // A baked device pointer: inside exactly one buffer, and standing for the
  // step's simulated address.
  Status pointer(StepIndex i, std::uint8_t arg, std::uint64_t device, Address simulated,
                 std::uint64_t bytes) {
    Result<std::size_t> buffer = registry_.locate(device, bytes);
    if (!buffer) return fail(i, fmt::format("argument {}: {}", arg, buffer.error().message));
    Result<Address> as_simulated = registry_.to_simulated(device);
    if (!as_simulated)
      return fail(i, fmt::format("argument {}: {}", arg, as_simulated.error().message));
    if (*as_simulated != simulated) {
      return fail(i, fmt::format("argument {} points at {:#x} (simulated {:#x}), the step at {:#x}",
                                 arg, device, *as_simulated, simulated));
    }
    baked_.push_back({i, arg, device, bytes, *buffer});
    return {};
  }

  Status fail(StepIndex i, const std::string& what) const {
    return make_error(fmt::format("graph '{}': node {} {}", program_.name, i, what));
  }

  const StepProgram& program_;
  const BufferRegistry& registry_;
  std::vector<BakedRange> baked_;
};

}  // namespace

std::string_view graph_node_type_name(GraphNodeType type) {
  switch (type) {
#define CAPSIM_CASE_(e, name) \
  case GraphNodeType::e: return name;
    CAPSIM_GRAPH_NODE_TYPES(CAPSIM_CASE_)
#undef CAPSIM_CASE_
  }
  return "?";
}

Result<std::vector<BakedRange>> verify_mirror(const StepProgram& program,
                                              std::span<const NodeReading> nodes,
                                              const BufferRegistry& registry) {
  if (nodes.size() != program.steps.size()) {
    return make_error(
        fmt::format("graph '{}': the driver reports {} nodes, the program has {} steps",
                    program.name, nodes.size(), program.steps.size()));
  }
  Mirror mirror(program, registry);
  for (StepIndex i = 0; i < nodes.size(); ++i) CAPSIM_TRY(mirror.node(i, nodes[i]));
  return mirror.take();
}

Status check_same_baked(std::span<const BakedRange> baseline, std::span<const BakedRange> now) {
  if (now.size() != baseline.size()) {
    return make_error(fmt::format("the graph now bakes {} pointers, {} at instantiation",
                                  now.size(), baseline.size()));
  }
  for (std::size_t i = 0; i < now.size(); ++i) {
    if (now[i] != baseline[i]) {
      return make_error(fmt::format(
          "node {} argument {}: the graph now bakes [{:#x}, +{}), at instantiation [{:#x}, +{})",
          now[i].step, now[i].arg, now[i].address, now[i].bytes, baseline[i].address,
          baseline[i].bytes));
    }
  }
  return {};
}

}  // namespace capsim::cuda
