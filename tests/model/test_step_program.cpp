// StepProgram: validation errors that name the step and field, and the list of
// baked pointers a backend must verify.
#include <doctest/doctest.h>

#include "model/step_program.hpp"

using namespace capsim;

namespace {
KernelLaunch fill_launch(Address out, std::int64_t n, float value) {
  KernelLaunch k;
  k.kind = KernelKind::kFill;
  k.pointers[0] = out;
  k.geometry[0].rank = 1;
  k.geometry[0].sizes[0] = n;
  k.geometry[0].strides[0] = 1;
  k.scalars[0] = value;
  return k;
}
}  // namespace

TEST_CASE("pointer_uses lists every baked range with its access") {
  StepProgram p{"uses", {}};
  const StepIndex fill = p.add(fill_launch(0x1000, 8, 1.0f));
  p.add(CopyStep{0x2000, 0x1000, 32}, {fill});
  p.add(MemsetStep{0x3000, 16, 0});
  const auto uses = pointer_uses(p);
  REQUIRE(uses.size() == 4);
  CHECK(uses[0] == PointerUse{0, 0, {0x1000, 32}, Access::kWrite});
  CHECK(uses[1] == PointerUse{1, 0, {0x2000, 32}, Access::kWrite});
  CHECK(uses[2] == PointerUse{1, 1, {0x1000, 32}, Access::kRead});
  CHECK(uses[3] == PointerUse{2, 0, {0x3000, 16}, Access::kWrite});
  CHECK(validate(p).ok());
  CHECK(step_kind(p.steps[1]) == StepKind::kCopy);
  CHECK(step_kind_name(StepKind::kMemset) == "memset");
}

TEST_CASE("kernel names round-trip through the signature table") {
  for (int i = 0; i < kNumKernelKinds; ++i) {
    const auto kind = static_cast<KernelKind>(i);
    CAPTURE(kernel_name(kind));
    CHECK(kernel_kind_from_name(kernel_name(kind)) == kind);
    CHECK(signature(kind).num_pointers >= 1);
  }
  CHECK_FALSE(kernel_kind_from_name("conv2d").has_value());
  CHECK(signature(KernelKind::kAdam).pointer_names[4] == "state");
  CHECK(signature(KernelKind::kSgd).pointer_access[0] == Access::kReadWrite);
}

TEST_CASE("validate names the step and the field") {
  SUBCASE("forward dependency") {
    StepProgram p{"fwd", {}};
    p.add(fill_launch(0x1000, 4, 0.0f), {1});
    p.add(fill_launch(0x2000, 4, 0.0f));
    auto r = validate(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          "program 'fwd': step 0: dependency on step 1 is not an earlier step");
  }
  SUBCASE("duplicate dependency") {
    StepProgram p{"dup", {}};
    p.add(fill_launch(0x1000, 4, 0.0f));
    p.add(fill_launch(0x2000, 4, 0.0f), {0, 0});
    auto r = validate(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == "program 'dup': step 1: dependency on step 0 is listed twice");
  }
  SUBCASE("overlapping copy") {
    StepProgram p{"copy", {}};
    p.add(CopyStep{0x1000, 0x1010, 64});
    auto r = validate(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          "program 'copy': step 0 (copy): source 0x1010 and destination 0x1000 overlap over 64 "
          "bytes");
  }
  SUBCASE("bad geometry") {
    StepProgram p{"geom", {}};
    KernelLaunch k = fill_launch(0x1000, 4, 0.0f);
    k.geometry[0].sizes[0] = -3;
    p.add(k);
    auto r = validate(p);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message ==
          "program 'geom': step 0 (fill): pointer 0 (out): negative size or stride in dim 0");
  }
  SUBCASE("misaligned and null pointers") {
    StepProgram p{"ptr", {}};
    p.add(fill_launch(0x1002, 4, 0.0f));
    CHECK(validate(p).error().message ==
          "program 'ptr': step 0 (fill): pointer 0 (out): address 0x1002 is not 4-byte aligned");
    p.steps[0] = Step{fill_launch(0, 4, 0.0f), {}};
    CHECK(validate(p).error().message ==
          "program 'ptr': step 0 (fill): pointer 0 (out): null address");
  }
  SUBCASE("mm shape mismatch") {
    StepProgram p{"mm", {}};
    KernelLaunch k;
    k.kind = KernelKind::kMm;
    for (int a = 0; a < 3; ++a) {
      k.pointers[a] = 0x1000 * (a + 1);
      k.geometry[a].rank = 2;
      k.geometry[a].sizes[0] = 2;
      k.geometry[a].sizes[1] = 2;
      k.geometry[a].strides[0] = 2;
      k.geometry[a].strides[1] = 1;
    }
    k.geometry[2].sizes[0] = 3;
    p.add(k);
    CHECK(validate(p).error().message == "program 'mm': step 0 (mm): operand shapes do not match");
  }
}
