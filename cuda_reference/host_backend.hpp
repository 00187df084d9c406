// HostBackend: the CPU backend over a memory of its own, as a mirror target.
//
// The reference mirror needs a backend whose memory is separate from the
// model's, so that what the graph computes is compared rather than shared.
// Without a GPU, this one stands in for the CUDA backend: it maps each of the
// model's segments at the same base in its own DeviceMemory and runs the same
// host kernels. It proves nothing about a GPU; it proves that the mirror,
// the `device` events and `reference.agrees` work, on every machine
// (`capsim check --backend host`).
#pragma once

#include "model/backend.hpp"
#include "model/cpu_backend.hpp"
#include "model/device_memory.hpp"

namespace capsim::cuda {

class HostBackend final : public Backend {
 public:
  HostBackend() : memory_(DeviceMemoryOptions{}), backend_(memory_) {}

  std::string_view name() const override { return "host"; }
  // Maps every segment of `layout` that is not mapped yet, at its base; the
  // model's segments come in base order, so this memory's next base is
  // always the one wanted (anything else is an error).
  Status materialize(const MemoryLayout& layout) override;
  // Refuses what the CUDA backend refuses: a baked range outside every
  // segment (even of 0 bytes, which the CPU backend never resolves) and a
  // 0-byte copy or memset, which has no CUDA node.
  Result<GraphHandle> instantiate(const StepProgram& program) override;
  Status replay(GraphHandle handle) override { return backend_.replay(handle); }
  Status read(Address address, std::span<std::byte> out) override {
    return backend_.read(address, out);
  }
  Status write(Address address, std::span<const std::byte> in) override {
    return backend_.write(address, in);
  }
  Result<std::vector<PointerUse>> baked_pointers(GraphHandle handle) const override {
    return backend_.baked_pointers(handle);
  }
  // Its own memory's pages, so that a stray write of its kernels shows
  // wherever it lands (ReferenceMirror compares what either side wrote).
  std::optional<std::uint64_t> write_count() const override { return memory_.write_count(); }
  std::vector<AddressRange> written_since(std::uint64_t count) const override {
    return memory_.written_since(count);
  }

 private:
  DeviceMemory memory_;
  CpuBackend backend_;
};

}  // namespace capsim::cuda
