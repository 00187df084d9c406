// Throughput of the CPU backend's kernels and copies, against std::memcpy.
// Speed goals live here, never in timed tests; the figures are recorded in
// docs/performance.md.
//
// Every kernel runs over 1M (1 << 20) float32 elements, i.e. 4 MiB a tensor,
// as a frozen StepProgram replayed through CpuBackend: the path a simulated
// cudagraph replay takes. Bytes are counted as the distinct bytes each element
// reads plus writes (a read-modify-write tensor counts twice):
//  - copy: read in + write out                                  =  8 B/elem;
//  - adam, adamw: param rw + grad r + exp_avg rw + exp_avg_sq rw = 28 B/elem
//    (the 8-byte beta-power state is shared by all elements and not counted);
//  - CopyStep and memcpy of 4 MiB: read + write = 8 MiB a copy.
// With one convention for all, the ratio to memcpy does not depend on it.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/caching_allocator.hpp"
#include "model/cpu_backend.hpp"
#include "model/device_memory.hpp"
#include "model/kernel_launch.hpp"
#include "model/step_program.hpp"
#include "model/tensor_store.hpp"

namespace capsim {
namespace {

constexpr std::int64_t kElements = std::int64_t{1} << 20;
constexpr std::uint64_t kCopyBytes = static_cast<std::uint64_t>(kElements) * kElementBytes;

template <typename T>
bool ok_or_skip(benchmark::State& state, const Result<T>& result) {
  if (result.ok()) return true;
  state.SkipWithError(result.error().message.c_str());
  return false;
}

// One simulated device: memory, allocator, tensors and the CPU backend over
// them. Neither copyable nor movable: the members refer to each other.
struct World {
  DeviceMemory memory;
  CachingAllocator allocator{memory};
  TensorStore tensors{allocator};
  CpuBackend backend{memory};

  // A fresh float32 tensor of `sizes` filled with `value`.
  Result<TensorArg> tensor(const Dims& sizes, float value) {
    auto t = tensors.empty(sizes);
    if (!t) return t.error();
    auto address = tensors.data_address(t->id);
    if (!address) return address.error();
    TensorArg arg{*address, t->meta};
    auto fill = launch_fill(arg, value);
    if (!fill) return fill.error();
    CAPSIM_TRY(backend.run_step(Step{*fill, {}}));
    return arg;
  }
};

// Instantiates `program` on the world's backend, then replays it once per
// iteration, reporting `bytes_per_replay` bytes processed each time.
void replay_loop(benchmark::State& state, World& world, const StepProgram& program,
                 std::uint64_t bytes_per_replay) {
  auto handle = world.backend.instantiate(program);
  if (!ok_or_skip(state, handle)) return;
  for (auto _ : state) {
    if (!ok_or_skip(state, world.backend.replay(*handle))) break;
    // The replay writes simulated memory that nothing reads back here.
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes_per_replay));
  state.SetItemsProcessed(state.iterations() * kElements);
}

// The element-wise copy kernel: out[i] = in[i] through each operand's strides.
void BM_CopyKernel(benchmark::State& state) {
  World world;
  auto in = world.tensor({kElements}, 1.5f);
  if (!ok_or_skip(state, in)) return;
  auto out = world.tensor({kElements}, 0.0f);
  if (!ok_or_skip(state, out)) return;
  auto copy = launch_copy(*out, *in);
  if (!ok_or_skip(state, copy)) return;
  StepProgram program{"bench_copy", {}};
  program.add(*copy);
  replay_loop(state, world, program, 2 * kCopyBytes);
}
BENCHMARK(BM_CopyKernel);

// One optimizer step as a graph holds it: adam_powers advances {beta1^t,
// beta2^t}, then the element-wise update reads them.
void adam_step(benchmark::State& state, KernelKind kind, const AdamHyper& hyper) {
  World world;
  // A non-zero gradient keeps exp_avg_sq, and with it every value, out of the
  // subnormal range, whose slow paths would distort the timing.
  auto param = world.tensor({kElements}, 1.0f);
  auto grad = world.tensor({kElements}, 0.5f);
  auto exp_avg = world.tensor({kElements}, 0.0f);
  auto exp_avg_sq = world.tensor({kElements}, 0.0f);
  auto powers = world.tensor({2}, 1.0f);
  for (const auto* t : {&param, &grad, &exp_avg, &exp_avg_sq, &powers}) {
    if (!ok_or_skip(state, *t)) return;
  }
  auto advance = launch_adam_powers(*powers, hyper);
  if (!ok_or_skip(state, advance)) return;
  auto update = launch_adam(kind, *param, *grad, *exp_avg, *exp_avg_sq, *powers, hyper);
  if (!ok_or_skip(state, update)) return;
  StepProgram program{"bench_adam", {}};
  const StepIndex first = program.add(*advance);
  program.add(*update, {first});
  replay_loop(state, world, program, 7 * kCopyBytes);
}

void BM_AdamStep(benchmark::State& state) {
  adam_step(state, KernelKind::kAdam, AdamHyper{});
}
BENCHMARK(BM_AdamStep);

void BM_AdamWStep(benchmark::State& state) {
  AdamHyper hyper;
  hyper.weight_decay = 0.01f;  // torch.optim.AdamW's default; takes the decoupled branch
  adam_step(state, KernelKind::kAdamW, hyper);
}
BENCHMARK(BM_AdamWStep);

// A 4 MiB device-to-device CopyStep (cudaMemcpyAsync in a graph): a memmove
// between two resolved segments, plus the backend's address resolution.
void BM_CopyStep(benchmark::State& state) {
  World world;
  auto src = world.tensor({kElements}, 1.5f);
  if (!ok_or_skip(state, src)) return;
  auto dst = world.tensor({kElements}, 0.0f);
  if (!ok_or_skip(state, dst)) return;
  StepProgram program{"bench_copy_step", {}};
  program.add(CopyStep{dst->address, src->address, kCopyBytes});
  replay_loop(state, world, program, 2 * kCopyBytes);
}
BENCHMARK(BM_CopyStep);

// The baseline: std::memcpy of the same 4 MiB between two host buffers, both
// touched first so that page faults stay out of the loop.
void BM_Memcpy(benchmark::State& state) {
  std::vector<std::byte> src(kCopyBytes, std::byte{0x3f});
  std::vector<std::byte> dst(kCopyBytes, std::byte{0});
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kCopyBytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(2 * kCopyBytes));
  state.SetItemsProcessed(state.iterations() * kElements);
}
BENCHMARK(BM_Memcpy);

}  // namespace
}  // namespace capsim
