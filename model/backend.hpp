// Backend: the one interface through which StepPrograms run over memory.
//
// The contract, shared by CpuBackend (simulated memory, model/) and CudaBackend
// (real device memory and real CUDA graphs, cuda_reference/):
//  - materialize(layout) makes every segment of the layout addressable at its
//    simulated address (the CPU backend already is; the CUDA backend maps each
//    segment onto one real allocation at the same offsets);
//  - instantiate(program) validates the program and freezes it: the addresses it
//    holds are the ones every replay will use (record once);
//  - replay(handle) runs the frozen steps in program order, reading and writing
//    whatever lies at the baked addresses now;
//  - baked_pointers(handle) reports those addresses as the backend holds them
//    (the CUDA backend reads them back from the driver);
//  - write_count() and written_since(count), where the backend tracks its
//    writes (one over a DeviceMemory does), say which pages it wrote, its
//    replays and write() alike; a mirror then copies and compares those
//    instead of whole segments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/device_memory.hpp"
#include "model/result.hpp"
#include "model/step_program.hpp"

namespace capsim {

struct GraphHandle {
  std::uint32_t value = 0;
  friend auto operator<=>(const GraphHandle&, const GraphHandle&) = default;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  // The machine behind it, for reports and trace headers ("NVIDIA H200
  // (sm_90), driver 13.0, runtime 13.0"); the name by default.
  virtual std::string describe() const { return std::string(name()); }
  virtual Status materialize(const MemoryLayout& layout) = 0;
  virtual Result<GraphHandle> instantiate(const StepProgram& program) = 0;
  virtual Status replay(GraphHandle handle) = 0;
  virtual Status read(Address address, std::span<std::byte> out) = 0;
  virtual Status write(Address address, std::span<const std::byte> in) = 0;
  virtual Result<std::vector<PointerUse>> baked_pointers(GraphHandle handle) const = 0;
  // The ids the backend's allocator gave the buffers `handle` bakes, in
  // baked order without repeats (the CUDA driver's BUFFER_IDs); none for a
  // backend without such ids.
  virtual Result<std::vector<std::uint64_t>> buffer_ids(GraphHandle) const {
    return std::vector<std::uint64_t>{};
  }
  // Write tracking (DeviceMemory::write_count, written_since): none for a
  // backend that cannot say what its kernels wrote (the CUDA backend).
  virtual std::optional<std::uint64_t> write_count() const { return std::nullopt; }
  virtual std::vector<AddressRange> written_since(std::uint64_t) const { return {}; }
};

}  // namespace capsim
