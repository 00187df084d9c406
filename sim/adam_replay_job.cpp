#include "sim/adam_replay_job.hpp"

#include <fmt/format.h>

#include "model/cpu_backend.hpp"
#include "model/digest.hpp"
#include "model/kernel_launch.hpp"
#include "model/rng.hpp"
#include "model/tensor_store.hpp"

namespace capsim {

namespace {
Status write_random(DeviceMemory& memory, Address address, std::int64_t n, Rng& rng) {
  std::vector<float> values(static_cast<std::size_t>(n));
  for (float& v : values) v = rng.uniform(-1.0f, 1.0f);
  return memory.write(address, std::as_bytes(std::span(values)));
}
}  // namespace

Result<AdamReplayReport> run_adam_replay_job(const AdamReplayJobOptions& options) {
  if (options.steps < 1 || options.steps > kMaxJobSteps) {
    return make_error(fmt::format("steps must be in [1, {}], got {}", kMaxJobSteps, options.steps));
  }
  if (options.numel < 1 || options.numel > kMaxJobNumel) {
    return make_error(fmt::format("numel must be in [1, {}], got {}", kMaxJobNumel, options.numel));
  }
  if (options.params < 1 || options.params > kMaxJobParams) {
    return make_error(
        fmt::format("params must be in [1, {}], got {}", kMaxJobParams, options.params));
  }
  DeviceMemoryOptions memory_options;
  memory_options.poison_freed = options.poison_freed;
  DeviceMemory memory(memory_options);
  CachingAllocator allocator(memory);
  TensorStore store(allocator);
  CpuBackend backend(memory);
  Rng rng(options.seed);

  CAPSIM_TRY_ASSIGN(const PoolId pool, allocator.create_pool());
  auto make = [&](const Dims& sizes, PoolId where) -> Result<TensorArg> {
    CAPSIM_TRY_ASSIGN(const Tensor t, store.empty(sizes, DType::kFloat32, where));
    return TensorArg{*store.data_address(t.id), t.meta};
  };

  struct ParamSlots {
    TensorArg param, grad, placeholder, exp_avg, exp_avg_sq;
  };
  std::vector<ParamSlots> slots;
  CAPSIM_TRY_ASSIGN(const TensorArg state, make({2}, pool));
  const std::vector<float> ones{1.0f, 1.0f};
  CAPSIM_TRY(memory.write(state.address, std::as_bytes(std::span(ones))));
  for (std::int64_t i = 0; i < options.params; ++i) {
    ParamSlots s;
    // Params and optimizer state are static: they live in the pool for good.
    // The eager grad is not; its placeholder is.
    for (auto [slot, where] : {std::pair{&s.param, pool},
                               {&s.exp_avg, pool},
                               {&s.exp_avg_sq, pool},
                               {&s.placeholder, pool},
                               {&s.grad, kDefaultPool}}) {
      CAPSIM_TRY_ASSIGN(*slot, make({options.numel}, where));
    }
    CAPSIM_TRY(write_random(memory, s.param.address, options.numel, rng));
    slots.push_back(s);
  }

  AdamHyper hyper;
  hyper.weight_decay = 0.01f;
  StepProgram program{"adamw_step", {}};
  std::vector<StepIndex> copies;
  std::uint64_t copy_bytes = 0;
  for (const ParamSlots& s : slots) {
    const std::uint64_t bytes = extent_bytes(s.grad.meta);
    copies.push_back(program.add(CopyStep{s.placeholder.address, s.grad.address, bytes}));
    copy_bytes += bytes;
  }
  CAPSIM_TRY_ASSIGN(KernelLaunch powers, launch_adam_powers(state, hyper));
  const StepIndex advance = program.add(powers);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const ParamSlots& s = slots[i];
    CAPSIM_TRY_ASSIGN(KernelLaunch update, launch_adam(KernelKind::kAdamW, s.param, s.placeholder,
                                                       s.exp_avg, s.exp_avg_sq, state, hyper));
    program.add(update, {copies[i], advance});
  }

  CAPSIM_TRY(backend.materialize(memory.layout()));
  CAPSIM_TRY_ASSIGN(const GraphHandle handle, backend.instantiate(program));
  CAPSIM_TRY_ASSIGN(const std::vector<PointerUse> baked, backend.baked_pointers(handle));

  AdamReplayReport report;
  report.graph_name = program.name;
  report.program_steps = program.steps.size();
  report.baked_pointers = baked.size();
  for (std::int64_t step = 1; step <= options.steps; ++step) {
    // The eager backward writes fresh grads outside the graph...
    for (const ParamSlots& s : slots) {
      CAPSIM_TRY(write_random(memory, s.grad.address, options.numel, rng));
    }
    // ...and the replay copies them in, then updates at the baked addresses.
    CAPSIM_TRY(backend.replay(handle));
    std::uint64_t digest = fnv1a64({});
    for (const ParamSlots& s : slots) {
      std::vector<std::byte> bytes(extent_bytes(s.param.meta));
      CAPSIM_TRY(memory.read(s.param.address, bytes));
      digest = fnv1a64(bytes, digest);
    }
    report.steps.push_back({step, copy_bytes, digest});
  }
  report.pool_live_blocks = allocator.live_blocks(pool).size();
  report.pool_allocated_bytes = allocator.allocated_bytes(pool);
  report.segments = allocator.segments().size();
  return report;
}

}  // namespace capsim
