// HostBackend (see host_backend.hpp): mapping the model's segments at the same bases, and
// refusing at instantiation what the CUDA backend would refuse.
#include "cuda_reference/host_backend.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace capsim::cuda {

Status HostBackend::materialize(const MemoryLayout& layout) {
  for (const AddressRange& segment : layout.segments) {
    if (memory_.check_mapped(segment.base, segment.bytes)) continue;
    CAPSIM_TRY_ASSIGN(const AddressRange mapped, memory_.map_segment(segment.bytes));
    if (mapped.base != segment.base) {
      return make_error(fmt::format("host backend: segment {} was mapped at {}", hex(segment.base),
                                    hex(mapped.base)));
    }
  }
  return {};
}

Result<GraphHandle> HostBackend::instantiate(const StepProgram& program) {
  const MemoryLayout layout = memory_.layout();
  for (const PointerUse& use : pointer_uses(program)) {
    const bool inside =
        std::any_of(layout.segments.begin(), layout.segments.end(), [&use](const AddressRange& s) {
          return use.range.base >= s.base && use.range.base - s.base <= s.bytes &&
                 use.range.bytes <= s.bytes - (use.range.base - s.base);
        });
    if (!inside) {
      return make_error(
          fmt::format("graph '{}': step {} argument {}: [{}, +{}) lies outside "
                      "every segment",
                      program.name, use.step, use.arg, hex(use.range.base), use.range.bytes));
    }
  }
  for (StepIndex i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    const auto* copy = std::get_if<CopyStep>(&step.op);
    const auto* memset = std::get_if<MemsetStep>(&step.op);
    if ((copy != nullptr && copy->bytes == 0) || (memset != nullptr && memset->bytes == 0)) {
      return make_error(fmt::format("graph '{}' step {}: a 0-byte {} has no CUDA node",
                                    program.name, i, copy != nullptr ? "copy" : "memset"));
    }
  }
  return backend_.instantiate(program);
}

}  // namespace capsim::cuda
