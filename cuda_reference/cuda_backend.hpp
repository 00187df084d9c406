// CudaBackend: StepPrograms as real CUDA graphs, verified through the driver.
//
// The Backend (model/backend.hpp) that runs on a GPU. Each simulated segment
// is one cudaMalloc allocation, at the same offsets, so a simulated address
// has exactly one device address and back (BufferRegistry). Host data moves
// through one pinned cudaHostAlloc staging buffer. A program becomes a graph
// by explicit node construction, one node per step with the step's
// dependencies (docs/cuda-reference.md, "How it runs"); the template graph is
// kept, because an executable graph cannot be read back
// (docs/cuda-reference.md, "What it cannot prove"). After instantiation the
// template is read back from the driver (node types,
// dependencies, every kernel's raw arguments, every memcpy and memset
// address) and held against the program (graph_mirror.hpp): that reading's
// baked ranges are the baseline. After every replay the template is read
// again and must give the baseline, every registered allocation must still
// have its BUFFER_ID, base and size (cuPointerGetAttribute and
// cuMemGetAddressRange, reached through cudaGetDriverEntryPointByVersion:
// libcuda is never linked), and the driver must own no graph memory
// (cudaGraphMemAttrUsedMemCurrent == 0: no memory nodes are ever built).
// Before the first graph, every kernel's parameter list is held against
// cudaFuncGetParamInfo (kernel_abi.hpp).
//
// A plain C++ header: CUDA types stay in the .cu, so the CLI and the tests
// include it without the CUDA headers. Only built with nvcc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/backend.hpp"
#include "model/fault.hpp"

namespace capsim::cuda {

// What the backend can say of the device it runs on (for reports).
struct CudaDeviceInfo {
  std::string name;
  int driver_version = 0;   // cudaDriverGetVersion: 13000 is 13.0
  int runtime_version = 0;  // cudaRuntimeGetVersion
  int compute_major = 0;
  int compute_minor = 0;
};

class CudaBackend final : public Backend {
 public:
  // Fails when there is no usable device or a driver entry point is missing.
  // `fault`: a kCuda fault (model/fault.hpp), for the device tests' controls.
  static Result<std::unique_ptr<CudaBackend>> create(Fault fault = Fault::kNone);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  std::string describe() const override;
  Status materialize(const MemoryLayout& layout) override;
  Result<GraphHandle> instantiate(const StepProgram& program) override;
  Status replay(GraphHandle handle) override;
  Status read(Address address, std::span<std::byte> out) override;
  Status write(Address address, std::span<const std::byte> in) override;
  Result<std::vector<PointerUse>> baked_pointers(GraphHandle handle) const override;
  Result<std::vector<std::uint64_t>> buffer_ids(GraphHandle handle) const override;

  const CudaDeviceInfo& device() const;

  // Fault injection for the device test of the BUFFER_ID check: frees the
  // allocation behind the segment at `segment_base` and allocates the same
  // size again (the driver usually hands back the same address), copying the
  // bytes over, as an allocator that "reallocated a static buffer" would.
  // The next replay must fail.
  Status free_and_reallocate(Address segment_base);

  struct Impl;

 private:
  explicit CudaBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace capsim::cuda
