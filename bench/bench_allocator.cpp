// Throughput of the CachingAllocator model: how many allocator operations per
// second the simulator sustains. Speed goals live here, never in timed tests;
// the figures are recorded in docs/performance.md.
//
// Three workloads:
//  - BM_AllocFreePair: allocate and free one 4 KiB block in the default pool,
//    the hot path of eager code, optionally with other blocks live around it;
//  - BM_MixedWorkload: a fixed-seed sequence of allocations (512 B .. 4 MiB)
//    and frees of random live blocks, holding at most 256 blocks live;
//  - BM_CheckpointRestore: checkpoint() + restore() of a private pool with 64
//    live blocks: the pool-state bookkeeping cudagraph trees do on a path switch.
// Every benchmark counts one allocate or one free as one item, except
// checkpoint+restore, which counts one checkpoint-and-restore round trip.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

#include "model/caching_allocator.hpp"
#include "model/device_memory.hpp"

namespace capsim {
namespace {

// DeviceMemory backs every mapped segment with host memory (from calloc, so
// pages appear only when touched); the capacity is a ceiling, not a
// reservation. The workloads below keep the mapped total to a few hundred MiB.
DeviceMemoryOptions bench_memory_options() {
  DeviceMemoryOptions options;
  options.capacity_bytes = 2 * kGiB;
  return options;
}

// Marks the benchmark failed when a model call returns an error; the caller
// then leaves its loop. A benchmark that hits an error measures nothing useful.
template <typename T>
bool ok_or_skip(benchmark::State& state, const Result<T>& result) {
  if (result.ok()) return true;
  state.SkipWithError(result.error().message.c_str());
  return false;
}

// Allocate + free of one 4 KiB block. Arg(0) is the bare hot path (one segment,
// two blocks); Arg(n) first leaves n other 4 KiB blocks live, so the block map
// and free lists are not trivially small.
void BM_AllocFreePair(benchmark::State& state) {
  DeviceMemory memory(bench_memory_options());
  CachingAllocator allocator(memory);
  constexpr std::int64_t kBytes = 4 * kKiB;
  const auto background = state.range(0);
  for (std::int64_t i = 0; i < background; ++i) {
    if (!ok_or_skip(state, allocator.allocate(kBytes))) return;
  }
  for (auto _ : state) {
    auto block = allocator.allocate(kBytes);
    if (!ok_or_skip(state, block)) break;
    benchmark::DoNotOptimize(block->address);
    if (!ok_or_skip(state, allocator.free(block->address))) break;
  }
  state.SetItemsProcessed(state.iterations() * 2);  // one allocate + one free
  state.counters["segments"] = static_cast<double>(allocator.stats().segments_mapped);
}
BENCHMARK(BM_AllocFreePair)->Arg(0)->Arg(4096);

// The mixed workload's generator state: a fixed-seed engine (never
// random_device, never a clock), so every run performs the same operations.
class MixedWorkload {
 public:
  static constexpr std::size_t kMaxLive = 256;

  explicit MixedWorkload(CachingAllocator& allocator) : allocator_(allocator) {
    live_.reserve(kMaxLive);
  }

  // Performs one allocate or one free.
  Status step() {
    // Allocate or free with equal odds, forced at the bounds: the live count
    // then walks over [0, kMaxLive].
    const bool allocate = live_.empty() || (live_.size() < kMaxLive && (rng_() & 1u) == 0);
    if (allocate) {
      auto block = allocator_.allocate(static_cast<std::int64_t>(next_size()));
      if (!block) return block.error();
      live_.push_back(block->address);
      return {};
    }
    const std::size_t victim = static_cast<std::size_t>(rng_() % live_.size());
    const Address address = live_[victim];
    live_[victim] = live_.back();
    live_.pop_back();
    return allocator_.free(address);
  }

 private:
  // Log-uniform sizes in [512 B, 4 MiB]: an octave 2^e (e in 9..21) is drawn
  // uniformly, then a size within it. Small requests then dominate by count,
  // as in real traces, while large ones still exercise the 20 MiB segments.
  // The arithmetic is done here, not by a std:: distribution, whose output
  // the standard leaves to the implementation.
  std::uint64_t next_size() {
    const std::uint64_t octave = std::uint64_t{1} << (9 + rng_() % 13);
    return octave + rng_() % (octave + 1);
  }

  CachingAllocator& allocator_;
  std::mt19937_64 rng_{20261129};
  std::vector<Address> live_;
};

void BM_MixedWorkload(benchmark::State& state) {
  DeviceMemory memory(bench_memory_options());
  CachingAllocator allocator(memory);
  MixedWorkload workload(allocator);
  // Warm up untimed until the segments the workload needs are mapped (and
  // zero-filled), so the timed loop measures the allocator, not first touch.
  for (int i = 0; i < 20000; ++i) {
    if (!ok_or_skip(state, workload.step())) return;
  }
  const std::uint64_t mapped_before = allocator.stats().segments_mapped;
  for (auto _ : state) {
    if (!ok_or_skip(state, workload.step())) break;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["reserved_MiB"] = static_cast<double>(memory.mapped_bytes()) / kMiB;
  state.counters["timed_maps"] =
      static_cast<double>(allocator.stats().segments_mapped - mapped_before);
}
BENCHMARK(BM_MixedWorkload);

// checkpoint() + restore() of a private pool holding 64 live blocks of mixed
// small and large sizes, restoring with every block still live, so each
// iteration starts from the same state.
void BM_CheckpointRestore(benchmark::State& state) {
  DeviceMemory memory(bench_memory_options());
  CachingAllocator allocator(memory);
  auto pool = allocator.create_pool();
  if (!ok_or_skip(state, pool)) return;
  constexpr int kLiveBlocks = 64;
  std::vector<Address> live;
  for (int i = 0; i < kLiveBlocks; ++i) {
    // 4 KiB .. 1.5 MiB: both small (2 MiB) and large (20 MiB) segments.
    const std::int64_t bytes = static_cast<std::int64_t>(4 * kKiB) * (1 + (i * 37) % 384);
    auto block = allocator.allocate(bytes, *pool);
    if (!ok_or_skip(state, block)) return;
    live.push_back(block->address);
  }
  for (auto _ : state) {
    auto cp = allocator.checkpoint(*pool);
    if (!ok_or_skip(state, cp)) break;
    if (!ok_or_skip(state, allocator.restore(*pool, *cp, live))) break;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["segments"] = static_cast<double>(allocator.stats().segments_mapped);
}
BENCHMARK(BM_CheckpointRestore);

}  // namespace
}  // namespace capsim
