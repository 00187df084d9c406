// The training-loop generator (properties/training_programs.hpp): every
// backward mode lowers to a program the World runs without bad input, and
// the modes agree with each other and with the all-eager oracle bitwise.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "properties/catalogue.hpp"
#include "properties/cudagraph_checks.hpp"
#include "properties/regressions.hpp"
#include "properties/trace_checks.hpp"
#include "properties/training_checks.hpp"
#include "properties/training_programs.hpp"

namespace capsim {
namespace {

std::vector<Event> reads_of(const World& w) {
  std::vector<Event> out;
  for (const Event& e : w.events()) {
    if (e.kind == EventKind::kRead) out.push_back(e);
  }
  return out;
}

bool raised(const World& w) {
  for (const Event& e : w.events()) {
    if (e.kind == EventKind::kError) return true;
  }
  return false;
}

// Runs the loop, which must raise nothing, and holds it to the all-eager
// oracle and the grad-copy rule.
std::unique_ptr<World> run_without_error(const TrainingProgram& t) {
  Status status;
  auto world = run_generated(t.generated, WorldOptions{}, status);
  REQUIRE_MESSAGE(status.ok(), status.error().message);
  CHECK_FALSE(raised(*world));
  WorldOptions eager;
  eager.all_eager = true;
  const auto oracle = run_generated(t.generated, eager, status);
  REQUIRE(status.ok());
  CHECK_FALSE(check_loop_equals_eager(*world, *oracle).has_value());
  CHECK_FALSE(check_loop_grad_copies(*world, t).has_value());
  return world;
}

TEST_CASE("training programs: every mode runs, and every mode reads the same bits") {
  std::vector<std::vector<Event>> reads;
  for (int b = 0; b < static_cast<int>(LoopBackward::kCount); ++b) {
    TrainingPlan plan;
    plan.layers = 3;
    plan.width = 4;
    plan.steps = 4;
    plan.optimizer = OptimizerKind::kAdam;
    plan.backward = static_cast<LoopBackward>(b);
    CAPTURE(loop_backward_name(plan.backward));
    const TrainingProgram t = lower(plan);
    const auto world = run_without_error(t);
    // The all-eager run never reaches the tree manager.
    WorldOptions eager;
    eager.all_eager = true;
    Status status;
    CHECK(run_generated(t.generated, eager, status)->manager() == nullptr);
    reads.push_back(reads_of(*world));
  }
  for (std::size_t m = 1; m < reads.size(); ++m) {
    REQUIRE(reads[m].size() == reads[0].size());
    for (std::size_t i = 0; i < reads[0].size(); ++i) {
      CHECK(reads[m][i].get<Digest>(F::digest) == reads[0][i].get<Digest>(F::digest));
    }
  }
}

TEST_CASE("training programs: a kept .grad under a cudagraphed backward ends the contract") {
  // Kept by zero_grad(set_to_none=False), or by gradient accumulation.
  for (const bool accumulate : {false, true}) {
    CAPTURE(accumulate);
    TrainingPlan plan;
    plan.backward = LoopBackward::kCompiledAutograd;
    plan.set_to_none = accumulate;
    plan.accumulate = accumulate ? 2 : 1;
    plan.steps = 4;
    const TrainingProgram t = lower(plan);
    CHECK_FALSE(t.grads_from_recorded_backward);
    Status status;
    const auto world = run_generated(t.generated, WorldOptions{}, status);
    REQUIRE(status.ok());
    CHECK(raised(*world));
    // The checks look only before the error: they still hold.
    WorldOptions eager;
    eager.all_eager = true;
    const auto oracle = run_generated(t.generated, eager, status);
    CHECK_FALSE(check_loop_equals_eager(*world, *oracle).has_value());
  }
}

TEST_CASE("training programs: what a loop's program says of its grads is what its plan says") {
  int recorded = 0;
  for (int b = 0; b < static_cast<int>(LoopBackward::kCount); ++b) {
    for (int flags = 0; flags < 4; ++flags) {
      for (int accumulate = 1; accumulate <= 3; ++accumulate) {
        TrainingPlan plan;
        plan.layers = 2;
        plan.width = 3;
        plan.steps = 4;
        plan.backward = static_cast<LoopBackward>(b);
        plan.mark_step = (flags & 1) != 0;
        plan.set_to_none = (flags & 2) != 0;
        plan.accumulate = accumulate;
        CAPTURE(describe(plan));
        const TrainingProgram t = lower(plan);
        const bool cudagraphed =
            plan.backward == LoopBackward::kCompiledAutograd || plan.backward == LoopBackward::kAot;
        CHECK(t.grads_from_recorded_backward ==
              (cudagraphed && plan.mark_step && plan.set_to_none && accumulate == 1));
        CHECK(t.grads_eager == !cudagraphed);
        CHECK(t.grad_bytes == 2 * 4 * 3 * 3);
        recorded += t.grads_from_recorded_backward ? 1 : 0;
      }
    }
  }
  CHECK(recorded == 2);
}

TEST_CASE("training programs: the saved AOT loop passes the sound model and fails the broken one") {
  const std::string corpus = std::string(CAPSIM_SOURCE_DIR) + "/properties/regressions";
  const Result<std::vector<Regression>> saved = load_regressions(corpus, property_catalogue());
  REQUIRE(saved.ok());
  const Regression* r = nullptr;
  for (const Regression& x : *saved) {
    if (x.file == "loop.grads-not-copied-when-backward-cudagraphed.aot-zero-copy.jsonl") r = &x;
  }
  REQUIRE(r != nullptr);
  TrainingProgram t;
  t.generated.program = r->program;
  read_loop_grads(r->program, t);
  CHECK(t.grads_from_recorded_backward);
  for (const bool broken : {false, true}) {
    CAPTURE(broken);
    WorldOptions o;
    o.config = r->config;
    if (broken) o.fault = fault_at(Fault::kCloneCompiledGrads, FaultSite::kTree);
    Status status;
    const auto world = run_generated(t.generated, o, status);
    REQUIRE(status.ok());
    CHECK(check_loop_grad_copies(*world, t).has_value() == broken);
  }
}

std::size_t zero_grads_in(const Program& p) {
  std::size_t n = 0;
  for (const Action& a : p.actions) n += std::holds_alternative<ZeroGrad>(a) ? 1 : 0;
  return n;
}

TEST_CASE("training programs: gradient accumulation keeps grads, and eager ones sum the steps") {
  TrainingPlan plan;
  plan.steps = 4;
  plan.accumulate = 2;
  const TrainingProgram t = lower(plan);
  CHECK(zero_grads_in(t.generated.program) == 2);
  const auto world = run_without_error(t);
  // Kept grads differ from fresh ones: the reads tell the two loops apart.
  TrainingPlan fresh = plan;
  fresh.accumulate = 1;
  const auto other = run_without_error(lower(fresh));
  CHECK(reads_of(*world).back().get<Digest>(F::digest) !=
        reads_of(*other).back().get<Digest>(F::digest));
}

TEST_CASE("training programs: a plan's torch profile reaches the World and its trace") {
  TrainingPlan plan;
  plan.backward = LoopBackward::kAot;
  plan.set_to_none = false;
  plan.steps = 4;
  plan.torch_profile = TorchProfile::k2_13;
  const TrainingProgram t = lower(plan);
  CHECK(t.generated.torch_profile == TorchProfile::k2_13);
  Status status;
  const auto world = run_generated(t.generated, WorldOptions{}, status);
  REQUIRE(status.ok());
  // 2.13's own E1 text for a grad a recorded BACKWARD function left in the pool.
  bool grad_text = false;
  for (const Event& e : world->events()) {
    grad_text = grad_text || (e.kind == EventKind::kError &&
                              e.text(F::message)->starts_with("Error: accessing gradient"));
  }
  CHECK(grad_text);
  const auto lines = generated_trace_lines(t.generated, WorldOptions{}, "profile");
  REQUIRE(lines.ok());
  CHECK(lines->front().find("\"torch_profile\":\"2.13\"") != std::string::npos);
}

TEST_CASE("training programs: a param's .data reassigned mid-loop still equals all eager") {
  for (int b = 0; b < static_cast<int>(LoopBackward::kCount); ++b) {
    TrainingPlan plan;
    plan.layers = 2;
    plan.steps = 5;
    plan.backward = static_cast<LoopBackward>(b);
    plan.reassign_before = 3;
    plan.reassign_param = 1;
    CAPTURE(loop_backward_name(plan.backward));
    const TrainingProgram t = lower(plan);
    run_without_error(t);
  }
}

// A kind with no Python line of its own prints from the table:
// `kind(key=value, ...)`, optional fields only where they are not the default.
TEST_CASE("describe_action: kinds without a line of their own print from the table") {
  CHECK(describe_action(RunCaptureScenario{.name = "hooks"}) ==
        "run_capture_scenario(name=hooks, mode=functional)");
  CHECK(describe_action(AccumulateGrad{.param = "p", .grad = "g"}) ==
        "accumulate_grad(param=p, grad=g)");
  CHECK(describe_action(SetToRunningBackward{}) == "set_to_running_backward()");
}

}  // namespace
}  // namespace capsim
