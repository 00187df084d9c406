// The AdamW replay job behind `capsim run` (see adam_replay_job.hpp): the device and its
// tensors, the recorded step's StepProgram, and the replays with their param digests.
#include "sim/scenarios/adam_replay_job.hpp"

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

Status check_options(const AdamReplayJobOptions& options) {
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
  return {};
}

struct ParamSlots {
  TensorArg param, grad, placeholder, exp_avg, exp_avg_sq;
};

DeviceMemoryOptions memory_options(bool poison_freed) {
  DeviceMemoryOptions o;
  o.poison_freed = poison_freed;
  return o;
}

// The simulated device the job runs on, and the tensors it allocated there.
struct JobDevice {
  explicit JobDevice(const AdamReplayJobOptions& options)
      : memory(memory_options(options.poison_freed)),
        allocator(memory),
        store(allocator),
        backend(memory),
        rng(options.seed) {}

  Result<TensorArg> make(const Dims& sizes, PoolId where) {
    CAPSIM_TRY_ASSIGN(const Tensor t, store.empty(sizes, DType::kFloat32, where));
    return TensorArg{*store.data_address(t.id), t.meta};
  }

  DeviceMemory memory;
  CachingAllocator allocator;
  TensorStore store;
  CpuBackend backend;
  Rng rng;
  PoolId pool = kDefaultPool;
  TensorArg state;  // AdamW's step powers, shared by every param
  std::vector<ParamSlots> slots;
};

// Params and optimizer state are static: they live in the pool for good. The
// eager grad is not; its placeholder is.
Status allocate(JobDevice& d, const AdamReplayJobOptions& options) {
  CAPSIM_TRY_ASSIGN(d.pool, d.allocator.create_pool());
  CAPSIM_TRY_ASSIGN(d.state, d.make({2}, d.pool));
  const std::vector<float> ones{1.0f, 1.0f};
  CAPSIM_TRY(d.memory.write(d.state.address, std::as_bytes(std::span(ones))));
  for (std::int64_t i = 0; i < options.params; ++i) {
    ParamSlots s;
    for (auto [slot, where] : {std::pair{&s.param, d.pool},
                               {&s.exp_avg, d.pool},
                               {&s.exp_avg_sq, d.pool},
                               {&s.placeholder, d.pool},
                               {&s.grad, kDefaultPool}}) {
      CAPSIM_TRY_ASSIGN(*slot, d.make({options.numel}, where));
    }
    CAPSIM_TRY(write_random(d.memory, s.param.address, options.numel, d.rng));
    d.slots.push_back(s);
  }
  return {};
}

// One copy of each grad into its placeholder, the step powers, then one
// AdamW update per param after its copy and the powers. Sets `copy_bytes`.
Result<StepProgram> adamw_program(const JobDevice& d, std::uint64_t& copy_bytes) {
  AdamHyper hyper;
  hyper.weight_decay = 0.01f;
  StepProgram program{"adamw_step", {}};
  std::vector<StepIndex> copies;
  copy_bytes = 0;
  for (const ParamSlots& s : d.slots) {
    const std::uint64_t bytes = extent_bytes(s.grad.meta);
    copies.push_back(program.add(CopyStep{s.placeholder.address, s.grad.address, bytes}));
    copy_bytes += bytes;
  }
  CAPSIM_TRY_ASSIGN(KernelLaunch powers, launch_adam_powers(d.state, hyper));
  const StepIndex advance = program.add(powers);
  for (std::size_t i = 0; i < d.slots.size(); ++i) {
    const ParamSlots& s = d.slots[i];
    CAPSIM_TRY_ASSIGN(KernelLaunch update, launch_adam(KernelKind::kAdamW, s.param, s.placeholder,
                                                       s.exp_avg, s.exp_avg_sq, d.state, hyper));
    program.add(update, {copies[i], advance});
  }
  return program;
}

// The digest of every param's bytes, in param order.
Result<std::uint64_t> param_digest(const JobDevice& d) {
  std::uint64_t digest = fnv1a64({});
  for (const ParamSlots& s : d.slots) {
    std::vector<std::byte> bytes(extent_bytes(s.param.meta));
    CAPSIM_TRY(d.memory.read(s.param.address, bytes));
    digest = fnv1a64(bytes, digest);
  }
  return digest;
}

}  // namespace

Result<AdamReplayReport> run_adam_replay_job(const AdamReplayJobOptions& options) {
  CAPSIM_TRY(check_options(options));
  JobDevice d(options);
  CAPSIM_TRY(allocate(d, options));
  std::uint64_t copy_bytes = 0;
  CAPSIM_TRY_ASSIGN(const StepProgram program, adamw_program(d, copy_bytes));
  CAPSIM_TRY(d.backend.materialize(d.memory.layout()));
  CAPSIM_TRY_ASSIGN(const GraphHandle handle, d.backend.instantiate(program));
  CAPSIM_TRY_ASSIGN(const std::vector<PointerUse> baked, d.backend.baked_pointers(handle));

  AdamReplayReport report;
  report.graph_name = program.name;
  report.program_steps = program.steps.size();
  report.baked_pointers = baked.size();
  for (std::int64_t step = 1; step <= options.steps; ++step) {
    // The eager backward writes fresh grads outside the graph...
    for (const ParamSlots& s : d.slots) {
      CAPSIM_TRY(write_random(d.memory, s.grad.address, options.numel, d.rng));
    }
    // ...and the replay copies them in, then updates at the baked addresses.
    CAPSIM_TRY(d.backend.replay(handle));
    CAPSIM_TRY_ASSIGN(const std::uint64_t digest, param_digest(d));
    report.steps.push_back({step, copy_bytes, digest});
    if (options.on_step) options.on_step(step);
  }
  report.pool_live_blocks = d.allocator.live_blocks(d.pool).size();
  report.pool_allocated_bytes = d.allocator.allocated_bytes(d.pool);
  report.segments = d.allocator.segments().size();
  return report;
}

}  // namespace capsim
