// CpuBackend: programs run at their baked addresses, so a replay after a free
// and a reallocation reads the new owner's bytes (the stale-read mechanism).
#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <vector>

#include "model/cpu_backend.hpp"
#include "model/digest.hpp"
#include "model/kernel_launch.hpp"
#include "model/tensor_store.hpp"

using namespace capsim;

namespace {

struct World {
  explicit World(DeviceMemoryOptions options = {})
      : memory(options), alloc(memory), store(alloc), backend(memory) {}

  Tensor tensor(const Dims& sizes, const std::vector<float>& values = {}) {
    auto t = store.empty(sizes);
    REQUIRE(t.ok());
    if (!values.empty()) set(*t, values);
    return *t;
  }
  TensorArg arg(const Tensor& t) { return TensorArg{*store.data_address(t.id), t.meta}; }
  void set(const Tensor& t, const std::vector<float>& values) {
    REQUIRE(memory.write(*store.data_address(t.id), std::as_bytes(std::span(values))).ok());
  }
  std::vector<float> get(const Tensor& t) {
    std::vector<float> out(static_cast<std::size_t>(numel(t.meta)));
    REQUIRE(memory.read(*store.data_address(t.id), std::as_writable_bytes(std::span(out))).ok());
    return out;
  }

  DeviceMemory memory;
  CachingAllocator alloc;
  TensorStore store;
  CpuBackend backend;
};

}  // namespace

TEST_CASE("a recorded program replays at its baked addresses") {
  World w;
  const Tensor a = w.tensor({4}, {1, 2, 3, 4});
  const Tensor b = w.tensor({4}, {10, 20, 30, 40});
  const Tensor out = w.tensor({4});
  StepProgram p{"add", {}};
  p.add(*launch_binary(KernelKind::kAdd, w.arg(out), w.arg(a), w.arg(b)));
  REQUIRE(w.backend.materialize(w.memory.layout()).ok());
  auto handle = w.backend.instantiate(p);
  REQUIRE(handle.ok());
  REQUIRE(w.backend.replay(*handle).ok());
  CHECK(w.get(out) == std::vector<float>{11, 22, 33, 44});
  // Replays read the inputs as they are now.
  w.set(a, {0, 0, 0, 1});
  REQUIRE(w.backend.replay(*handle).ok());
  CHECK(w.get(out) == std::vector<float>{10, 20, 30, 41});
  auto baked = w.backend.baked_pointers(*handle);
  REQUIRE(baked.ok());
  CHECK(*baked == pointer_uses(p));
}

TEST_CASE("stale read: a replay reads whatever now owns a freed address") {
  World w;
  Tensor x = w.tensor({4}, {1, 2, 3, 4});
  const Tensor y = w.tensor({4});
  const Address x_address = *w.store.data_address(x.id);
  StepProgram p{"copy", {}};
  p.add(*launch_copy(w.arg(y), w.arg(x)));
  auto handle = w.backend.instantiate(p);
  REQUIRE(handle.ok());
  REQUIRE(w.backend.replay(*handle).ok());
  CHECK(w.get(y) == std::vector<float>{1, 2, 3, 4});

  // x dies; a new tensor z gets x's block (the allocator is deterministic) and
  // new values. The program still holds x's address.
  REQUIRE(w.store.release(x.id).ok());
  const Tensor z = w.tensor({4}, {9, 8, 7, 6});
  REQUIRE(*w.store.data_address(z.id) == x_address);
  REQUIRE(w.backend.replay(*handle).ok());
  CHECK(w.get(y) == std::vector<float>{9, 8, 7, 6});
}

TEST_CASE("stale read after free: old bytes, or poison in poison mode") {
  for (const bool poison : {false, true}) {
    CAPTURE(poison);
    DeviceMemoryOptions options;
    options.poison_freed = poison;
    World w(options);
    const Tensor x = w.tensor({2}, {5, 6});
    const Tensor y = w.tensor({2});
    StepProgram p{"copy", {}};
    p.add(*launch_copy(w.arg(y), w.arg(x)));
    auto handle = w.backend.instantiate(p);
    REQUIRE(handle.ok());
    REQUIRE(w.store.release(x.id).ok());
    REQUIRE(w.backend.replay(*handle).ok());
    const auto got = w.get(y);
    if (!poison) {
      CHECK(got == std::vector<float>{5, 6});
    } else {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &got[0], 4);
      CHECK(bits == kPoisonWord);
    }
  }
}

TEST_CASE("copy and memset steps move raw bytes") {
  World w;
  const Tensor a = w.tensor({4}, {1, 2, 3, 4});
  const Tensor b = w.tensor({4}, {7, 7, 7, 7});
  StepProgram p{"raw", {}};
  const StepIndex zero = p.add(MemsetStep{*w.store.data_address(a.id) + 4, 8, 0});
  p.add(CopyStep{*w.store.data_address(b.id), *w.store.data_address(a.id), 16}, {zero});
  auto handle = w.backend.instantiate(p);
  REQUIRE(handle.ok());
  REQUIRE(w.backend.replay(*handle).ok());
  CHECK(w.get(b) == std::vector<float>{1, 0, 0, 4});
}

TEST_CASE("instantiate refuses addresses outside device memory; replay refuses unknown handles") {
  World w;
  const Tensor a = w.tensor({4});
  StepProgram p{"wild", {}};
  p.add(CopyStep{*w.store.data_address(a.id), 0x10000, 16});
  auto handle = w.backend.instantiate(p);
  REQUIRE_FALSE(handle.ok());
  CHECK(handle.error().message ==
        "program 'wild': step 0 argument 1: access of 16 bytes at 0x10000 is outside every "
        "mapped segment");
  auto replay = w.backend.replay(GraphHandle{3});
  REQUIRE_FALSE(replay.ok());
  CHECK(replay.error().message == "cpu backend: unknown graph handle 3");
  MemoryLayout foreign{{AddressRange{0x100000, 2 * kMiB}}};
  CHECK_FALSE(w.backend.materialize(foreign).ok());
}

TEST_CASE("an Adam step program gives bit-identical results in two worlds") {
  auto run = [] {
    World w;
    std::vector<float> init(64);
    for (std::size_t i = 0; i < init.size(); ++i) init[i] = 0.01f * static_cast<float>(i) - 0.3f;
    const Tensor param = w.tensor({8, 8}, init);
    const Tensor grad = w.tensor({8, 8});
    const Tensor m = w.tensor({8, 8}, std::vector<float>(64, 0.0f));
    const Tensor v = w.tensor({8, 8}, std::vector<float>(64, 0.0f));
    const Tensor state = w.tensor({2}, {1.0f, 1.0f});
    const Tensor x = w.tensor({8, 8}, init);
    AdamHyper hyper;
    hyper.weight_decay = 0.01f;
    StepProgram p{"adam", {}};
    const StepIndex g = p.add(*launch_mm(w.arg(grad), w.arg(x), w.arg(param)));
    const StepIndex powers = p.add(*launch_adam_powers(w.arg(state), hyper));
    p.add(*launch_adam(KernelKind::kAdamW, w.arg(param), w.arg(grad), w.arg(m), w.arg(v),
                       w.arg(state), hyper),
          {g, powers});
    auto handle = w.backend.instantiate(p);
    REQUIRE(handle.ok());
    for (int step = 0; step < 5; ++step) REQUIRE(w.backend.replay(*handle).ok());
    const auto values = w.get(param);
    return fnv1a64(std::as_bytes(std::span(values)));
  };
  const std::uint64_t first = run();
  CHECK(first == run());
  CHECK(digest_hex(first).size() == 16);
}

TEST_CASE("a program over empty tensors (address 0) validates and replays as a no-op") {
  World w;
  const Tensor empty_in = w.tensor({0, 4});
  const Tensor empty_out = w.tensor({0, 4});
  const Tensor rows = w.tensor({4}, {7, 7, 7, 7});
  REQUIRE(w.arg(empty_in).address == 0);
  StepProgram p{"empty", {}};
  p.add(*launch_copy(w.arg(empty_out), w.arg(empty_in)));
  p.add(*launch_sum(w.arg(rows), w.arg(empty_in), {0}));  // sums of nothing: +0
  p.add(CopyStep{0, 0, 0});
  REQUIRE(validate(p).ok());
  auto handle = w.backend.instantiate(p);
  REQUIRE(handle.ok());
  REQUIRE(w.backend.replay(*handle).ok());
  CHECK(w.get(rows) == std::vector<float>{0, 0, 0, 0});
  // A non-empty operand at address 0 is still refused.
  StepProgram bad{"null", {}};
  bad.add(*launch_fill(TensorArg{0, rows.meta}, 1.0f));
  CHECK(validate(bad).error().message ==
        "program 'null': step 0 (fill): pointer 0 (out): null address");
}
