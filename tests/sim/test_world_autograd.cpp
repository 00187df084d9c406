// Autograd in the World: eager_call on tensors that require grad records the
// graph, `backward` runs it eagerly or through compiled autograd and the tree
// manager, and both leave bitwise the same grads.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "sim/compiled_autograd/runner.hpp"
#include "sim/core/function_builder.hpp"
#include "sim/scenarios/autograd_scenarios.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "sim/world/world.hpp"

namespace capsim {
namespace {

// loss = relu(x @ w1) @ w2, summed: the MLP's layers without biases.
FunctionDef mlp_forward() {
  FunctionBuilder f("mlp", CompilationMode::kForward, {"x", "w1", "w2"});
  const auto h = f.relu(f.mm(f.input(0), f.input(1)));
  return f.returns({f.sum(f.mm(h, f.input(2)))});
}

NewTensor param(std::string name, Dims sizes) {
  NewTensor t;
  t.name = std::move(name);
  t.sizes = std::move(sizes);
  t.parameter = true;
  t.requires_grad = true;
  return t;
}

// `steps` training steps: x fresh each step, forward eager, backward as
// asked, then (with an optimizer) a compiled SGD step and
// zero_grad(set_to_none=True), each step begun with
// cudagraph_mark_step_begin() unless `mark_step` is false; without an
// optimizer the grads accumulate.
Program mlp_program(bool compiled, int steps, bool optimizer = false, bool mark_step = true) {
  Program p;
  p.functions.push_back(mlp_forward());
  p.actions.push_back(param("w1", {4, 8}));
  p.actions.push_back(param("w2", {8, 2}));
  if (optimizer) {
    CreateOptimizer opt;
    opt.name = "opt";
    opt.kind = OptimizerKind::kSgd;
    opt.params = {"w1", "w2"};
    p.actions.push_back(opt);
  }
  for (int i = 0; i < steps; ++i) {
    if (optimizer && mark_step) p.actions.push_back(MarkStepBegin{});
    p.actions.push_back(NewTensor{.name = "x", .sizes = {3, 4}});
    p.actions.push_back(EagerCall{"mlp", {"x", "w1", "w2"}, {"loss"}});
    Backward b;
    b.tensor = "loss";
    b.compiled = compiled;
    p.actions.push_back(b);
    p.actions.push_back(Del{"loss"});
    if (optimizer) {
      p.actions.push_back(OptimizerStep{"opt"});
      p.actions.push_back(ZeroGrad{"opt", true});
    }
  }
  return p;
}

std::int64_t sum_of(const World& w, EventKind kind, const std::string& function, FieldKey field) {
  std::int64_t n = 0;
  for (const Event& e : w.events()) {
    if (e.kind == kind && e.text(F::function) == function) n += e.get<std::int64_t>(field);
  }
  return n;
}

std::int64_t count(const World& w, EventKind kind) {
  std::int64_t n = 0;
  for (const Event& e : w.events()) n += e.kind == kind;
  return n;
}

TEST_CASE("world autograd: an eager backward fills .grad, and a compiled one the same bits") {
  World eager(WorldOptions{});
  REQUIRE(eager.run(mlp_program(false, 1)).ok());
  World compiled(WorldOptions{});
  const Status s = compiled.run(mlp_program(true, 1));
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  for (const char* g : {"w1.grad", "w2.grad"}) {
    CAPTURE(g);
    REQUIRE(eager.has(g));
    REQUIRE(compiled.has(g));
    CHECK(*eager.values(g) == *compiled.values(g));
  }
  CHECK(count(eager, EventKind::kBackward) == 1);
  CHECK(count(eager, EventKind::kCompile) == 0);
  // The compiled backward is a tree function, warmed up on its first call.
  CHECK(count(compiled, EventKind::kCaCacheMiss) == 1);
  CHECK(count(compiled, EventKind::kCompile) == 1);
  CHECK(count(compiled, EventKind::kWarmup) == 1);
  // Its grads are outputs in the cudagraph pool.
  CHECK(compiled.pool_live_blocks() == 2);
}

TEST_CASE("world autograd: .grad kept across cudagraphed compiled backwards is overwritten (E1)") {
  World w(WorldOptions{});
  const Status s = w.run(mlp_program(true, 4));
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  // The second backward misses: AccumulateGrad's key holds whether .grad is
  // defined, and the first backward defined it.
  CHECK(count(w, EventKind::kCaCacheMiss) == 2);
  CHECK(count(w, EventKind::kWarmup) == 2);
  // The model's prediction: .grad is the first backward's warmup output, and
  // the second backward is a new torch.compile invocation, which frees the
  // previous path's outputs, so its AccumulateGrad reads freed memory (E1,
  // once per param). The third and fourth backwards find .grad freed and
  // raise before they run.
  CHECK(count(w, EventKind::kCaCacheHit) == 0);
  CHECK(count(w, EventKind::kBackward) == 2);
  CHECK(count(w, EventKind::kError) == 4);
}

TEST_CASE("world autograd: a training loop with a cudagraphed compiled backward and compiled SGD") {
  World eager(WorldOptions{});
  REQUIRE(eager.run(mlp_program(false, 5, true)).ok());
  World compiled(WorldOptions{});
  const Status s = compiled.run(mlp_program(true, 5, true));
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  for (const char* w : {"w1", "w2"}) {
    CAPTURE(w);
    CHECK(*eager.values(w) == *compiled.values(w));
  }
  CHECK(count(compiled, EventKind::kError) == 0);
  // set_to_none keeps .grad None at every backward: one capture, then hits.
  CHECK(count(compiled, EventKind::kCaCacheMiss) == 1);
  CHECK(count(compiled, EventKind::kCaCacheHit) == 4);
  CHECK(sum_of(compiled, EventKind::kCopyIn, "opt.step", F::bytes) == 0);
}

TEST_CASE("world autograd: a second backward without retain_graph raises G3") {
  Program p = mlp_program(false, 1);
  p.actions.pop_back();  // keep loss
  Backward again;
  again.tensor = "loss";
  p.actions.push_back(again);
  World w(WorldOptions{});
  REQUIRE(w.run(p).ok());
  const Event& last = w.events().back();
  CHECK(last.kind == EventKind::kError);
  CHECK(last.text(F::id) == "G3");
}

TEST_CASE("world autograd: an eager backward raises G3 at the freed node, after what ran") {
  // y = x * w, freed by a first backward; then loss2 = sum(relu(y) * a): the
  // engine runs MulBackward0 (relu(y) * a), AccumulateGrad of a and
  // ReluBackward0 before it reaches y's freed MulBackward0.
  FunctionBuilder first("first", CompilationMode::kForward, {"x", "w"});
  const auto y = first.mul(first.input(0), first.input(1));
  FunctionBuilder second("second", CompilationMode::kForward, {"y", "a"});
  const auto r = second.relu(second.input(0));
  Program p;
  p.functions.push_back(first.returns({y, first.sum(y)}));
  p.functions.push_back(second.returns({second.sum(second.mul(r, second.input(1)))}));
  p.actions.push_back(param("a", {4}));
  p.actions.push_back(param("w", {4}));
  p.actions.push_back(NewTensor{.name = "x", .sizes = {4}, .fill = 2.0f});
  p.actions.push_back(EagerCall{"first", {"x", "w"}, {"y", "loss1"}});
  Backward b1;
  b1.tensor = "loss1";
  p.actions.push_back(b1);
  p.actions.push_back(EagerCall{"second", {"y", "a"}, {"loss2"}});
  Backward b2;
  b2.tensor = "loss2";
  p.actions.push_back(b2);
  World w(WorldOptions{});
  const Status s = w.run(p);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  const Event& last = w.events().back();
  CHECK(last.kind == EventKind::kError);
  CHECK(last.text(F::id) == "G3");
  // a.grad was written before the engine reached the freed node; w.grad is
  // the first backward's (x = 2).
  REQUIRE(w.has("a.grad"));
  std::vector<float> relu_y = *w.values("y");
  for (float& v : relu_y) v = v > 0.0f ? v : 0.0f;
  CHECK(*w.values("a.grad") == relu_y);
  CHECK(*w.values("w.grad") == std::vector<float>(4, 2.0f));
  // Compiled autograd unpacks every saved tensor in Phase A: it raises G3
  // before any node runs, and a.grad stays None.
  Program compiled = p;
  std::get<Backward>(compiled.actions.back()).compiled = true;
  World c(WorldOptions{});
  REQUIRE(c.run(compiled).ok());
  CHECK(c.events().back().text(F::id) == "G3");
  CHECK_FALSE(c.has("a.grad"));
}

TEST_CASE("world autograd: the graph keeps what it saved alive until the backward") {
  Program p = mlp_program(false, 1);
  // del x before the backward: mm saved it, so its block stays allocated.
  p.actions.insert(p.actions.begin() + 4, Del{"x"});
  World w(WorldOptions{});
  const Status s = w.run(p);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  CHECK(w.has("w1.grad"));
}

TEST_CASE("world autograd: a leaf keeps its AccumulateGrad across .data reassignment") {
  Program p = mlp_program(false, 1);
  // w1.data = ... before the forward: the same object, a new storage.
  p.actions.insert(p.actions.begin() + 2, ReassignData{"w1", 0.5f});
  World w(WorldOptions{});
  const Status s = w.run(p);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  REQUIRE(w.has("w1.grad"));
  CHECK(w.has("w2.grad"));
}

TEST_CASE("world autograd: ops without a formula, and backwards PyTorch refuses") {
  Program p;
  FunctionBuilder f("neg", CompilationMode::kForward, {"x"});
  p.functions.push_back(f.returns({f.neg(f.input(0))}));
  p.actions.push_back(param("w", {2}));
  p.actions.push_back(EagerCall{"neg", {"w"}, {"y"}});
  World w(WorldOptions{});
  const Status s = w.run(p);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("op 'neg' has no autograd formula") != std::string::npos);

  // G1: no grad_fn; G2: no gradient for a non-scalar; G4: a gradient of
  // another shape. Each an error event; the program goes on.
  Program q;
  FunctionBuilder g("twice", CompilationMode::kForward, {"x"});
  q.functions.push_back(g.returns({g.add(g.input(0), g.input(0))}));
  q.actions.push_back(NewTensor{.name = "c", .sizes = {2}, .fill = 1.0f});
  q.actions.push_back(param("w", {2}));
  q.actions.push_back(EagerCall{"twice", {"w"}, {"y"}});
  q.actions.push_back(NewTensor{.name = "g3", .sizes = {3}, .fill = 1.0f});
  for (const auto& [tensor, grad] :
       std::vector<std::pair<std::string, std::string>>{{"c", ""}, {"y", ""}, {"y", "g3"}}) {
    Backward b;
    b.tensor = tensor;
    if (!grad.empty()) b.grad = grad;
    q.actions.push_back(b);
  }
  World v(WorldOptions{});
  REQUIRE(v.run(q).ok());
  std::vector<std::string> ids;
  for (const Event& e : v.events()) {
    if (e.kind == EventKind::kError) ids.emplace_back(*e.text(F::id));
  }
  CHECK(ids == std::vector<std::string>{"G1", "G2", "G4"});
  CHECK_FALSE(v.has("w.grad"));
}

TEST_CASE("world autograd: a capture that does not lower runs in the FX interpreter") {
  // x + b with b broadcast: AddBackward0's grad for b is reduced by
  // validate_outputs, which the lowering does not express.
  auto program = [](bool compiled) {
    Program p;
    FunctionBuilder f("biased", CompilationMode::kForward, {"x", "b"});
    p.functions.push_back(f.returns({f.sum(f.add(f.input(0), f.input(1)))}));
    p.actions.push_back(NewTensor{.name = "x", .sizes = {3, 2}});
    p.actions.push_back(param("b", {2}));
    p.actions.push_back(EagerCall{"biased", {"x", "b"}, {"loss"}});
    Backward b;
    b.tensor = "loss";
    b.compiled = compiled;
    p.actions.push_back(b);
    return p;
  };
  World eager(WorldOptions{});
  REQUIRE(eager.run(program(false)).ok());
  World compiled(WorldOptions{});
  const Status s = compiled.run(program(true));
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  CHECK(*compiled.values("b.grad") == *eager.values("b.grad"));
  CHECK(*eager.values("b.grad") == std::vector<float>{3.0f, 3.0f});
  std::int64_t not_lowerable = 0;
  for (const Event& e : compiled.events()) {
    not_lowerable += e.kind == EventKind::kEager && e.text(F::reason) == "not_lowerable";
  }
  CHECK(not_lowerable == 1);
  CHECK(count(compiled, EventKind::kCompile) == 0);
  CHECK(compiled.counters().eager_fallbacks == 1);
}

TEST_CASE("world autograd: the MLP's params end bitwise equal whatever the backward mode") {
  std::vector<std::vector<std::vector<float>>> params;
  for (const char* mode : {"eager", "compiled_autograd", "aot"}) {
    CAPTURE(mode);
    const ProgramScenario* s = find_program_scenario(fmt::format("mlp_training_{}_backward", mode));
    REQUIRE(s != nullptr);
    World w(s->options);
    REQUIRE(w.run(s->program).ok());
    std::vector<std::vector<float>> values;
    for (const char* p : {"w1", "w2", "w3"}) values.push_back(*w.values(p));
    params.push_back(std::move(values));
  }
  CHECK(params[0] == params[1]);
  CHECK(params[0] == params[2]);
  // And the steps changed them: SGD ran.
  World fresh(find_program_scenario("mlp_training_eager_backward")->options);
  Program first_actions = find_program_scenario("mlp_training_eager_backward")->program;
  first_actions.actions.resize(3);
  REQUIRE(fresh.run(first_actions).ok());
  CHECK(*fresh.values("w1") != params[0][0]);
}

// A capture scenario run as a World action: the World's compiled backward
// over a graph its engine built.
std::unique_ptr<World> run_capture(std::initializer_list<RunCaptureScenario> actions) {
  WorldOptions options;
  options.autograd_scenarios = find_autograd_scenario;
  auto w = std::make_unique<World>(options);
  Program p;
  for (const RunCaptureScenario& a : actions) p.actions.push_back(a);
  const Status s = w->run(p);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  return w;
}

std::vector<Digest> run_digests(const std::vector<Event>& events) {
  std::vector<Digest> out;
  for (const Event& e : events) {
    if (e.kind == EventKind::kCaRun) out.push_back(e.get<Digest>(F::digest));
  }
  return out;
}

TEST_CASE("world autograd: a capture scenario's backwards are the World's, through the tree") {
  const auto world = run_capture({RunCaptureScenario{"basic", CaptureMode::kFunctional}});
  const World& w = *world;
  // Three backwards of mm, relu, sum: one capture, lowered to CompiledAutograd0,
  // which the tree manager warms up, records and replays.
  CHECK(count(w, EventKind::kCaCacheMiss) == 1);
  CHECK(count(w, EventKind::kCaCacheHit) == 2);
  CHECK(count(w, EventKind::kWarmup) == 1);
  CHECK(count(w, EventKind::kRecord) == 1);
  CHECK(count(w, EventKind::kReplay) == 1);
  CHECK(count(w, EventKind::kBackward) == 3);
  CHECK(w.counters().ca_mismatches == 0);
  // The grads are bitwise the standalone runner's (`capsim capture basic`).
  CaptureRunLog log;
  REQUIRE(find_autograd_scenario("basic")->run(CaptureMode::kFunctional, log).ok());
  CHECK(run_digests(w.events()) == run_digests(log.events));
  // Each backward's leaves die after it, and their .grad, a pool output, with
  // them: nothing of the scenario stays live in the cudagraph pool.
  CHECK(w.pool_live_blocks() == 0);
}

TEST_CASE("world autograd: a capture scenario that does not lower runs in the FX interpreter") {
  const auto world =
      run_capture({RunCaptureScenario{"tensor_grad_hook", CaptureMode::kFunctional}});
  const World& w = *world;
  CHECK(count(w, EventKind::kCompile) == 0);
  CHECK(w.counters().eager_fallbacks == 2);
  CHECK(w.counters().ca_mismatches == 0);
  CaptureRunLog log;
  REQUIRE(find_autograd_scenario("tensor_grad_hook")->run(CaptureMode::kFunctional, log).ok());
  CHECK(run_digests(w.events()) == run_digests(log.events));
}

TEST_CASE("world autograd: legacy and functional captures in one World keep their own caches") {
  const auto world = run_capture({RunCaptureScenario{"basic", CaptureMode::kLegacy},
                                  RunCaptureScenario{"basic", CaptureMode::kFunctional}});
  const World& w = *world;
  // Each mode misses once: a legacy entry never serves a functional backward.
  CHECK(count(w, EventKind::kCaCacheMiss) == 2);
  CHECK(w.counters().ca_metadata_reads > 0);
  CHECK(count(w, EventKind::kCaRun) == 3);
  CHECK(w.counters().ca_mismatches == 0);
}

}  // namespace
}  // namespace capsim

namespace capsim {
namespace {

// A strided new_tensor (a recorded slice of a batch: rows 3.. of a [10, 50]
// float64 array, last column dropped) keeps PyTorch's geometry: its storage
// spans every element the strides reach, so a compiled graph's views of it
// fit, and its values are read through the strides.
TEST_CASE("world: a strided new_tensor spans what its strides reach") {
  Program p;
  NewTensor x{.name = "x",
              .sizes = {7, 49},
              .dtype = DType::kFloat64,
              .fill = 1.5f,
              .offset = 150,
              .strides = Dims{50, 1}};
  p.actions.push_back(x);
  World w(WorldOptions{});
  const Status s = w.run(p);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  const std::vector<float> v = *w.values("x");
  CHECK(v.size() == 7 * 49);
  CHECK(v.front() == 1.5f);
  CHECK(v.back() == 1.5f);
  Program too_far;
  too_far.actions.push_back(
      NewTensor{.name = "y", .sizes = {2, 2}, .strides = Dims{kMaxValueElements, 1}});
  World w2(WorldOptions{});
  const Status refused = w2.run(too_far);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("the tensor spans 16777218 elements, the limit for one tensor "
                                     "with values on is 16777216") != std::string::npos);
}

}  // namespace
}  // namespace capsim
