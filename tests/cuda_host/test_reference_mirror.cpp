// The reference mirror (cuda_reference/reference_mirror.hpp) without a GPU:
// its target is HostBackend, the CPU kernels over a memory of their own, or
// a wrapper around it that breaks one rule. The same protocol runs the CUDA
// backend on a GPU (tests/cuda/test_cuda_backend.cpp).
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda_reference/host_backend.hpp"
#include "cuda_reference/reference_mirror.hpp"
#include "model/cpu_backend.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "tests/support/mirrored_run.hpp"
#include "traces/simulation/scenario_trace.hpp"

namespace capsim::cuda {
namespace {

using testing::run_mirrored;

const ProgramScenario& scenario(const std::string& name) {
  const ProgramScenario* s = find_program_scenario(name);
  REQUIRE(s != nullptr);
  return *s;
}

// HostBackend with one rule broken, to show the mirror catches it. Without
// `tracked` it hides its memory's write tracking, as the CUDA backend has
// none, so that the mirror's rules for such a backend are tested too.
class SkewedBackend final : public Backend {
 public:
  enum class Skew { kNone, kBakedPointer, kWrongValue, kBufferIds, kStrayWrite, kLateStrayWrite };
  explicit SkewedBackend(Skew skew, bool tracked = false) : skew_(skew), tracked_(tracked) {}
  std::string_view name() const override { return "skewed"; }
  Status materialize(const MemoryLayout& layout) override {
    layout_ = layout;
    return inner_.materialize(layout);
  }
  Result<GraphHandle> instantiate(const StepProgram& p) override { return inner_.instantiate(p); }
  Status replay(GraphHandle h) override {
    CAPSIM_TRY(inner_.replay(h));
    const std::uint64_t replays = ++replays_[h.value];
    if (skew_ == Skew::kStrayWrite || (skew_ == Skew::kLateStrayWrite && replays == 2)) {
      // One bit flipped in the last word of the first segment, which no
      // argument of these small graphs reaches: a kernel writing past its
      // tensor.
      const Address stray = layout_.segments.front().end() - 4;
      CAPSIM_TRY_ASSIGN(const std::vector<PointerUse> uses, inner_.baked_pointers(h));
      for (const PointerUse& u : uses) REQUIRE_FALSE(u.range.contains(stray));
      std::byte b[4];
      CAPSIM_TRY(inner_.read(stray, b));
      b[0] ^= std::byte{1};
      return inner_.write(stray, b);
    }
    if (skew_ != Skew::kWrongValue) return {};
    // One bit of the last written range flipped, as a kernel that rounds
    // differently would leave it.
    CAPSIM_TRY_ASSIGN(const std::vector<PointerUse> uses, inner_.baked_pointers(h));
    for (auto it = uses.rbegin(); it != uses.rend(); ++it) {
      if (it->access == Access::kRead || it->range.bytes < 4) continue;
      std::byte b[4];
      CAPSIM_TRY(inner_.read(it->range.base, b));
      b[0] ^= std::byte{1};
      return inner_.write(it->range.base, b);
    }
    return {};
  }
  Status read(Address a, std::span<std::byte> out) override { return inner_.read(a, out); }
  Status write(Address a, std::span<const std::byte> in) override { return inner_.write(a, in); }
  Result<std::vector<PointerUse>> baked_pointers(GraphHandle h) const override {
    CAPSIM_TRY_ASSIGN(std::vector<PointerUse> uses, inner_.baked_pointers(h));
    if (skew_ == Skew::kBakedPointer && !uses.empty()) uses.back().range.base += 4;
    return uses;
  }
  Result<std::vector<std::uint64_t>> buffer_ids(GraphHandle h) const override {
    if (skew_ != Skew::kBufferIds) return std::vector<std::uint64_t>{};
    return std::vector<std::uint64_t>{41, 42 + h.value};
  }
  std::optional<std::uint64_t> write_count() const override {
    return tracked_ ? inner_.write_count() : std::nullopt;
  }
  std::vector<AddressRange> written_since(std::uint64_t count) const override {
    return tracked_ ? inner_.written_since(count) : std::vector<AddressRange>{};
  }

 private:
  Skew skew_;
  bool tracked_;
  MemoryLayout layout_;
  HostBackend inner_;
  std::map<std::uint32_t, std::uint64_t> replays_;  // per graph
};

TEST_CASE("reference mirror: a host backend agrees with the model on every built-in scenario") {
  for (const ProgramScenario& s : builtin_program_scenarios()) {
    CAPTURE(s.name);
    HostBackend host;
    ReferenceMirror mirror(host);
    const testing::MirroredRun run = run_mirrored(s, mirror);
    CHECK_FALSE(mirror.disagreement().has_value());
    CHECK(static_cast<bool>(run.model_status) == static_cast<bool>(run.mirrored_status));
    // The same events, the device evidence (computed by the model on one
    // side, read from the host backend on the other) included.
    CHECK(run.model_events == run.mirrored_events);
    CHECK(mirror.stats().replays == run.device_events);
  }
}

TEST_CASE("reference mirror: the plain API's stale read is reproduced, not corrected") {
  // make_graphed_callables reads a reassigned param at its old address: the
  // model predicts stale values, and the mirror must compute the same bits.
  const ProgramScenario& s = scenario("plain_api_param_reassigned");
  HostBackend host;
  ReferenceMirror mirror(host);
  const testing::MirroredRun run = run_mirrored(s, mirror);
  REQUIRE_FALSE(mirror.disagreement().has_value());
  CHECK(run.device_events >= 2);
  CHECK(run.model_events == run.mirrored_events);
  CHECK(run_program_scenario(s).all_hold());  // the scenario asserts the stale read itself
}

TEST_CASE("reference mirror: memory copied in only once is caught (the control)") {
  HostBackend host;
  ReferenceMirror mirror(host, Fault::kSkipUpload);
  run_mirrored(scenario("compiled_adam_cudagraphed_backward"), mirror);
  REQUIRE(mirror.disagreement().has_value());
  CHECK(mirror.disagreement()->find("the model has") != std::string::npos);
}

TEST_CASE("reference mirror: a baked pointer that differs from the program's is caught") {
  SkewedBackend skewed(SkewedBackend::Skew::kBakedPointer);
  ReferenceMirror mirror(skewed);
  run_mirrored(scenario("run_simple"), mirror);
  REQUIRE(mirror.disagreement().has_value());
  CHECK(mirror.disagreement()->find("skewed bakes [") != std::string::npos);
}

TEST_CASE("reference mirror: one flipped bit after a replay is caught, with both values") {
  SkewedBackend skewed(SkewedBackend::Skew::kWrongValue);
  ReferenceMirror mirror(skewed);
  const testing::MirroredRun run = run_mirrored(scenario("run_simple"), mirror);
  REQUIRE(mirror.disagreement().has_value());
  CHECK(mirror.disagreement()->find("replay 1: 0x7f") != std::string::npos);
  CHECK(mirror.disagreement()->find("skewed has") != std::string::npos);
  // The World fails at the device event: no evidence in a disagreeing
  // mirror's name.
  CHECK_FALSE(run.mirrored_status);
}

TEST_CASE("reference mirror: a write outside a graph's arguments is caught at its first replay") {
  // Untracked, later replays copy and compare only the ranges the graph
  // touches; the first compares every segment, so a stray write shows there.
  // Tracked, the target's written pages are compared, wherever they are.
  for (const bool tracked : {false, true}) {
    CAPTURE(tracked);
    SkewedBackend skewed(SkewedBackend::Skew::kStrayWrite, tracked);
    ReferenceMirror mirror(skewed);
    run_mirrored(scenario("run_simple"), mirror);
    REQUIRE(mirror.disagreement().has_value());
    CHECK(mirror.disagreement()->find("replay 1: 0x7f") != std::string::npos);
  }
}

TEST_CASE(
    "reference mirror: with write tracking, a stray write at a later replay is caught there") {
  SkewedBackend skewed(SkewedBackend::Skew::kLateStrayWrite, /*tracked=*/true);
  ReferenceMirror mirror(skewed);
  run_mirrored(scenario("compiled_adam_cudagraphed_backward"), mirror);
  REQUIRE(mirror.disagreement().has_value());
  CHECK(mirror.disagreement()->find("replay 2: 0x7f") != std::string::npos);
}

TEST_CASE("reference mirror: untracked, after a graph's first replay only its ranges are copied") {
  SkewedBackend untracked(SkewedBackend::Skew::kNone);
  ReferenceMirror mirror(untracked);
  run_mirrored(scenario("compiled_adam_cudagraphed_backward"), mirror);
  REQUIRE_FALSE(mirror.disagreement().has_value());
  REQUIRE(mirror.stats().replays > mirror.stats().graphs);
  // Whole memory per replay would be at least one 2 MiB segment each; first
  // replays copy that, the others the graph's kilobytes.
  const std::uint64_t segment = std::uint64_t{2} << 20;
  CHECK(mirror.stats().bytes_uploaded >= mirror.stats().graphs * segment);
  CHECK(mirror.stats().bytes_uploaded < mirror.stats().replays * segment);
  CHECK(mirror.stats().bytes_uploaded == mirror.stats().bytes_compared);
}

TEST_CASE("reference mirror: tracked, only the pages either side wrote are copied and compared") {
  HostBackend host;
  ReferenceMirror mirror(host);
  run_mirrored(scenario("compiled_adam_cudagraphed_backward"), mirror);
  REQUIRE_FALSE(mirror.disagreement().has_value());
  REQUIRE(mirror.stats().replays > mirror.stats().graphs);
  // Not one whole segment, even at first replays: a few pages per replay.
  const std::uint64_t segment = std::uint64_t{2} << 20;
  CHECK(mirror.stats().bytes_uploaded > 0);
  CHECK(mirror.stats().bytes_uploaded < segment);
  CHECK(mirror.stats().bytes_compared > 0);
  CHECK(mirror.stats().bytes_compared < segment);
  CHECK(mirror.stats().bytes_uploaded % kWritePageBytes == 0);
}

TEST_CASE("reference mirror: buffer ids ride along as an extension the model does not compare") {
  SkewedBackend skewed(SkewedBackend::Skew::kBufferIds);
  ReferenceMirror mirror(skewed);
  const testing::MirroredRun run = run_mirrored(scenario("run_simple"), mirror);
  REQUIRE_FALSE(mirror.disagreement().has_value());
  REQUIRE_FALSE(run.buffer_ids.empty());
  CHECK(run.buffer_ids.front() == "[41,42]");
  CHECK(run.model_events == run.mirrored_events);
}

TEST_CASE("reference mirror: a recording beside it is a capsim-cuda trace with device events") {
  HostBackend host;
  ReferenceMirror mirror(host);
  Result<std::vector<std::string>> lines = trace_scenario_on(scenario("run_simple"), mirror);
  REQUIRE(lines);
  CHECK(lines->front().find(R"("producer":"capsim-cuda")") != std::string::npos);
  CHECK(lines->front().find(R"("x_device":"host")") != std::string::npos);
  std::size_t device = 0;
  for (const std::string& l : *lines) device += l.find(R"("event":"device")") != std::string::npos;
  CHECK(device == mirror.stats().replays);
}

TEST_CASE("model: without a mirror, evidence is the model's own and needs a replay") {
  DeviceMemory memory;
  CpuBackend backend(memory);
  const AddressRange seg = memory.map_segment(2 * kMiB).value();
  StepProgram p{"g", {}};
  p.add(MemsetStep{seg.base, 64, 1});
  const GraphHandle h = backend.instantiate(p).value();
  REQUIRE(backend.replay(h));
  const Result<GraphEvidence> e = backend.evidence(h);
  REQUIRE(e);
  CHECK(e->baked == 1);
  CHECK(e->buffer_ids.empty());
  // A mirror that holds no evidence is never papered over with the model's.
  HostBackend host;
  ReferenceMirror mirror(host);
  backend.set_mirror(&mirror);
  const Result<GraphEvidence> none = backend.evidence(h);
  REQUIRE_FALSE(none);
  CHECK(none.error().message.find("no evidence of graph 0") != std::string::npos);
}

}  // namespace
}  // namespace capsim::cuda
