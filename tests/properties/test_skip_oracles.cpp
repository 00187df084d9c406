// The skip oracles on hand-written plans (properties/skip_oracle.hpp,
// properties/runtime_skip_oracle.hpp): each decision the doc states, with
// the World's events agreeing and the skip's fault caught, so that a
// property's pass is not an oracle that never predicts the skip.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "properties/cudagraph_checks.hpp"
#include "properties/runtime_skip_checks.hpp"
#include "properties/runtime_skip_oracle.hpp"
#include "properties/skip_checks.hpp"
#include "properties/skip_oracle.hpp"
#include "properties/skip_programs.hpp"

namespace capsim {
namespace {

using K = RuntimeVerdict::Kind;

CheckResult run_runtime(const RuntimeProgram& program, Fault fault) {
  WorldOptions o;
  o.config = program.config;
  o.fault = fault;
  Status status;
  const std::unique_ptr<World> world = run_generated(program.generated, o, status);
  REQUIRE_MESSAGE(status.ok(), status.error().message);
  return check_runtime_skips_as_documented(*world, program);
}

CheckResult run_skips(const SkipProgram& program, Fault fault) {
  WorldOptions o;
  o.config = program.config;
  o.fault = fault;
  Status status;
  const std::unique_ptr<World> world = run_generated(program.generated, o, status);
  REQUIRE_MESSAGE(status.ok(), status.error().message);
  return check_skips_as_documented(*world, program.generated.program, world->config());
}

RuntimePlan edge_plan(TorchProfile profile, std::vector<std::uint32_t> rows) {
  RuntimePlan p;
  p.torch_profile = profile;
  for (std::uint32_t r : rows) p.steps.push_back(RuntimeStepPlan{true, r, 0});
  return p;
}

}  // namespace

TEST_CASE("skip oracle: an input that fails the overlap stride test is S4 up to 2.12") {
  SkipPlan plan;
  plan.graph_partition = false;
  plan.functions = {SkipFunctionPlan{}};
  plan.functions[0].layout = 6;  // strides (3, 2): no shared element, yet it fails the test
  plan.calls = {SkipCallPlan{}, SkipCallPlan{}};
  for (TorchProfile t : {TorchProfile::kClassic, TorchProfile::k2_12, TorchProfile::k2_13}) {
    CAPTURE(torch_profile_name(t));
    plan.torch_profile = t;
    const SkipProgram program = lower_skips(plan);
    const std::vector<ArgLayout> x = {{{2, 4}, {3, 2}}};
    const SkipVerdict v =
        documented_skip(program.generated.program.functions[0], false, program.config, x);
    CHECK((v.kind == SkipVerdict::Kind::kLogged) == (t != TorchProfile::k2_13));
    CHECK_FALSE(run_skips(program, Fault::kNone));
    // The control: the test never fails, so the graph is cudagraphed.
    CHECK(run_skips(program, Fault::kIgnoreSkipS4).has_value() == (t != TorchProfile::k2_13));
  }
}

TEST_CASE("runtime oracle: the mutation gate blocks a plain input unless it is managed") {
  RuntimePlan p;
  p.torch_profile = TorchProfile::k2_10;
  p.mutate = 1;
  // g(fresh), then twice src and g(row of o), then g(fresh) again.
  p.steps = {{false, 0, 0}, {true, 0, 0}, {true, 1, 0}, {false, 0, 0}};
  const RuntimeProgram program = lower_runtime_skips(p);
  const std::vector<RuntimeVerdict> v = documented_runtime_skips(program);
  REQUIRE(v.size() == 4);
  CHECK((v[0].kind == K::kLogged &&
         v[0].id == Decision::kSkipMutatedInputs));  // logged once per FunctionID
  CHECK(v[1].kind == K::kNone);
  CHECK(v[2].kind == K::kNone);
  CHECK((v[3].kind == K::kSilent && v[3].reason == Decision::kEagerMutatedInputs));
  CHECK_FALSE(run_runtime(program, Fault::kNone));
  CHECK(run_runtime(program, Fault::kIgnoreSkipS1Runtime));
  // Input mutation support off: the compile-time S1 decides every call.
  p.support_input_mutation = false;
  for (const RuntimeVerdict& c : documented_runtime_skips(lower_runtime_skips(p))) {
    CHECK(c.kind == K::kCompileTime);
  }
}

TEST_CASE("runtime oracle: the re-record limit per release") {
  // Rows 0, 0 (warmup, recording), then 1: a managed-pointer mismatch, the
  // first counted re-record, past a limit of 0.
  RuntimePlan p = edge_plan(TorchProfile::kClassic, {0, 0, 1, 2});
  p.rerecord_limit = 0;
  p.inline_modules = false;
  RuntimeProgram program = lower_runtime_skips(p);
  std::vector<RuntimeVerdict> v = documented_runtime_skips(program);
  CHECK((v[2].kind == K::kLogged && v[2].id == Decision::kSkipRerecordLimit));
  CHECK((v[3].kind == K::kSilent && v[3].reason == Decision::kEagerRerecordLimit));
  CHECK_FALSE(run_runtime(program, Fault::kNone));
  CHECK(run_runtime(program, Fault::kIgnoreSkipE5));
  // Inlining on: classic applies no limit; 2.12 never; 2.13 always.
  p.inline_modules = true;
  CHECK(documented_runtime_skips(lower_runtime_skips(p))[2].kind == K::kNone);
  p.torch_profile = TorchProfile::k2_12;
  CHECK(documented_runtime_skips(lower_runtime_skips(p))[2].kind == K::kNone);
  p.torch_profile = TorchProfile::k2_13;
  CHECK(documented_runtime_skips(lower_runtime_skips(p))[2].id == Decision::kSkipRerecordLimit);
  // 2.13 does not count a static pointer's mismatch; classic does.
  RuntimePlan q = edge_plan(TorchProfile::k2_13, {0, 0, 0});
  q.steps[2].param = 1;
  q.rerecord_limit = 0;
  CHECK(documented_runtime_skips(lower_runtime_skips(q))[2].kind == K::kNone);
  q.torch_profile = TorchProfile::k2_11;
  q.inline_modules = false;
  program = lower_runtime_skips(q);
  CHECK(documented_runtime_skips(program)[2].id == Decision::kSkipRerecordLimit);
  CHECK_FALSE(run_runtime(program, Fault::kNone));
}

TEST_CASE("runtime oracle: 2.15's managed-input limit, skip and copy") {
  RuntimePlan p = edge_plan(TorchProfile::k2_15, {0, 0, 1, 2, 3});
  p.managed_skip = true;
  p.managed_limit = 2;
  RuntimeProgram program = lower_runtime_skips(p);
  std::vector<RuntimeVerdict> v = documented_runtime_skips(program);
  CHECK(v[2].kind == K::kNone);  // the first change
  CHECK((v[3].kind == K::kLogged && v[3].id == Decision::kSkipManagedInputLimit));
  CHECK((v[4].kind == K::kSilent && v[4].reason == Decision::kEagerManagedInputLimit));
  CHECK_FALSE(run_runtime(program, Fault::kNone));
  CHECK(run_runtime(program, Fault::kIgnoreSkipE9));
  // Action "copy": the second change demotes; the demoted recording copies
  // the row in, so no later row re-records.
  p.managed_skip = false;
  program = lower_runtime_skips(p);
  v = documented_runtime_skips(program);
  CHECK((v[3].kind == K::kNone && v[3].demotes));
  CHECK((v[4].kind == K::kNone && !v[4].demotes));
  CHECK_FALSE(run_runtime(program, Fault::kNone));
  // Before 2.15 the same moves only re-record.
  p.torch_profile = TorchProfile::k2_14;
  for (const RuntimeVerdict& c : documented_runtime_skips(lower_runtime_skips(p))) {
    CHECK((c.kind == K::kNone && !c.demotes));
  }
}

}  // namespace capsim
