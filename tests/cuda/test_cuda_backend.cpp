// Device tests of the CUDA backend (cuda_reference/cuda_backend.hpp): real
// graphs on a real GPU, checked through the driver and against the model.
//  - a static buffer freed and allocated again (even at the same address) is
//    caught by its BUFFER_ID at the next replay;
//  - a kernel pointer outside every registered buffer is caught by verify;
//  - the plain API's stale read: the GPU computes exactly the model's stale
//    prediction;
//  - compiled Adam, replayed for several steps, bitwise equal to the model;
//  - every built-in scenario, beside the model, agrees.
//
// Without a usable GPU the executable prints "no CUDA device: skipped
// (<reason>)" and exits 77 (ctest's SKIP_RETURN_CODE) before any other CUDA
// call.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cuda_reference/cuda_backend.hpp"
#include "cuda_reference/cuda_probe.hpp"
#include "cuda_reference/reference_mirror.hpp"
#include "model/device_memory.hpp"
#include "model/kernel_launch.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "tests/support/mirrored_run.hpp"

namespace capsim::cuda {
namespace {

std::unique_ptr<CudaBackend> make_backend(Fault fault = Fault::kNone) {
  Result<std::unique_ptr<CudaBackend>> b = CudaBackend::create(fault);
  REQUIRE_MESSAGE(b, (b ? "" : b.error().message));
  return std::move(*b);
}

const ProgramScenario& scenario(const std::string& name) {
  const ProgramScenario* s = find_program_scenario(name);
  REQUIRE(s != nullptr);
  return *s;
}

// One segment and a program that fills 256 floats and adds them to another
// 256, the smallest graph with a kernel that reads and writes.
struct SmallGraph {
  DeviceMemory memory;
  AddressRange segment;
  StepProgram program{"small", {}};

  SmallGraph() {
    segment = memory.map_segment(2 * kMiB).value();
    const TensorArg a{segment.base, contiguous_meta({256}).value()};
    const TensorArg b{segment.base + 1024, contiguous_meta({256}).value()};
    program.add(launch_fill(a, 1.5f).value());
    program.add(launch_binary(KernelKind::kAdd, b, a, a).value(), {0});
  }
};

TEST_CASE("cuda backend: a graph is its program, read back from the driver") {
  SmallGraph s;
  auto backend = make_backend();
  MESSAGE(backend->describe());
  REQUIRE(backend->materialize(s.memory.layout()));
  const Result<GraphHandle> h = backend->instantiate(s.program);
  REQUIRE_MESSAGE(h, (h ? "" : h.error().message));
  const Status replayed = backend->replay(*h);
  REQUIRE_MESSAGE(replayed, (replayed ? "" : replayed.error().message));
  const Result<std::vector<PointerUse>> baked = backend->baked_pointers(*h);
  REQUIRE(baked);
  CHECK(*baked == pointer_uses(s.program));
  float out[2] = {};
  REQUIRE(backend->read(s.segment.base + 1024, std::as_writable_bytes(std::span(out))));
  CHECK(out[0] == 3.0f);
  CHECK(out[1] == 3.0f);
  const Result<std::vector<std::uint64_t>> ids = backend->buffer_ids(*h);
  REQUIRE(ids);
  CHECK(ids->size() == 1);
}

TEST_CASE("cuda backend: a static buffer freed and allocated again is caught by its BUFFER_ID") {
  SmallGraph s;
  auto backend = make_backend();
  REQUIRE(backend->materialize(s.memory.layout()));
  const GraphHandle h = backend->instantiate(s.program).value();
  REQUIRE(backend->replay(h));
  REQUIRE(backend->free_and_reallocate(s.segment.base));
  const Status replayed = backend->replay(h);
  REQUIRE_FALSE(replayed);
  MESSAGE(replayed.error().message);
  // The same address with a new id, or a new address: either way the
  // registry's allocation is gone.
  CHECK(replayed.error().message.find("segment 0x7f0000000000") != std::string::npos);
}

TEST_CASE("cuda backend: a kernel pointer outside every buffer fails verification") {
  SmallGraph s;
  auto backend = make_backend(Fault::kBakeOutside);
  REQUIRE(backend->materialize(s.memory.layout()));
  const Result<GraphHandle> h = backend->instantiate(s.program);
  REQUIRE_FALSE(h);
  MESSAGE(h.error().message);
  CHECK(h.error().message.find("node 0 argument 0") != std::string::npos);
}

TEST_CASE("cuda backend: the plain API's stale read is the model's stale prediction") {
  const ProgramScenario& s = scenario("plain_api_param_reassigned");
  ReferenceMirror mirror(make_backend());
  const testing::MirroredRun run = testing::run_mirrored(s, mirror);
  CHECK_MESSAGE(!mirror.disagreement(), mirror.disagreement().value_or(""));
  CHECK(run.device_events >= 2);
  CHECK(run.model_events == run.mirrored_events);
  CHECK(run_program_scenario(s).all_hold());  // the model predicts the stale read
}

TEST_CASE("cuda backend: compiled Adam, replayed step after step, is bitwise the model") {
  const ProgramScenario& s = scenario("compiled_adam_cudagraphed_backward");
  ReferenceMirror mirror(make_backend());
  const testing::MirroredRun run = testing::run_mirrored(s, mirror);
  CHECK_MESSAGE(!mirror.disagreement(), mirror.disagreement().value_or(""));
  CHECK(mirror.stats().replays >= 5);
  CHECK(run.model_events == run.mirrored_events);
  CHECK_FALSE(run.buffer_ids.empty());  // the driver's ids ride along
}

TEST_CASE("cuda backend: every built-in scenario agrees with the model") {
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    CAPTURE(s.name);
    ReferenceMirror mirror(make_backend());
    const testing::MirroredRun run = testing::run_mirrored(s, mirror);
    CHECK_MESSAGE(!mirror.disagreement(), mirror.disagreement().value_or(""));
    CHECK(run.model_events == run.mirrored_events);
  }
}

}  // namespace
}  // namespace capsim::cuda

#include "tests/support/device_test_main.hpp"
