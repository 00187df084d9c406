// CpuBackend: runs StepPrograms on the simulated DeviceMemory.
//
// Each replay walks the frozen steps in order and, for every kernel, calls the
// shared element bodies of kernel_bodies.hpp once per output element in
// ascending order, so a replay is bit-reproducible. Addresses are resolved
// against the memory at replay time, never cached as host pointers, so a replay
// after a free and a reallocation reads the new owner's bytes: the stale-read
// mechanism that capsim exists to predict.
#pragma once

#include <vector>

#include "model/backend.hpp"
#include "model/device_memory.hpp"
#include "model/graph_evidence.hpp"
#include "model/replay_mirror.hpp"

namespace capsim {

// The limit on instantiated programs per backend.
inline constexpr std::size_t kMaxGraphs = 1u << 16;

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(DeviceMemory& memory) : memory_(memory) {}

  std::string_view name() const override { return "cpu"; }
  // False with values off (DeviceMemoryOptions::backed): steps run nothing.
  bool computes_values() const { return memory_.backed(); }
  Status materialize(const MemoryLayout& layout) override;
  Result<GraphHandle> instantiate(const StepProgram& program) override;
  Status replay(GraphHandle handle) override;
  Status read(Address address, std::span<std::byte> out) override;
  Status write(Address address, std::span<const std::byte> in) override;
  Result<std::vector<PointerUse>> baked_pointers(GraphHandle handle) const override;

  // Runs one step now, outside any graph (eager execution uses this).
  Status run_step(const Step& step);
  // The frozen program of `handle`, read-only (exporters name its kernels).
  Result<const StepProgram*> program(GraphHandle handle) const;

  // A mirror that runs every instantiated program and every replay too
  // (model/replay_mirror.hpp); null for none. Not owned; it must outlive the
  // backend's use.
  void set_mirror(ReplayMirror* mirror) { mirror_ = mirror; }
  const ReplayMirror* mirror() const { return mirror_; }
  // The evidence of `handle` as it stands after its last replay: the
  // mirror's when there is one (the CUDA backend's readings), else the
  // model's own, from its program and memory.
  Result<GraphEvidence> evidence(GraphHandle handle) const;

 private:
  DeviceMemory& memory_;
  std::vector<StepProgram> programs_;
  ReplayMirror* mirror_ = nullptr;
};

// Runs one kernel launch on the host over `memory`.
Status run_kernel_on_host(const KernelLaunch& launch, DeviceMemory& memory);

}  // namespace capsim
