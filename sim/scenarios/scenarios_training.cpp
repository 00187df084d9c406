// Built-in scenarios, part 6: the two seeds in one program. Training loops in
// which the forward runs eagerly on params that require grad (the World's
// autograd records the graph), `loss.backward()` runs eagerly, through
// compiled autograd (its capture lowered and called through the tree
// manager) or as the AOT backward a compiled forward comes with, and the
// optimizer is compiled. Nothing is canned: the compiled backward the tree
// records is the capture of this very program's graph.
//
// The seed PR's two cases (107504): the backward that produced the grads was
// recorded in the same tree, so the optimizer copies none of them; or it was
// eager, so every replay copies every grad into the pool.
#include <fmt/format.h>

#include "sim/scenarios/scenario_support.hpp"
#include "sim/scenarios/training_models.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

constexpr std::int64_t kSteps = 5;

Backward backward_of(std::string tensor, bool compiled, std::optional<std::string> grad = {}) {
  Backward b;
  b.tensor = std::move(tensor);
  b.grad = std::move(grad);
  b.compiled = compiled;
  return b;
}

std::int64_t step_replays(const World& w) {
  return events_where(w, EventKind::kReplay, F::function, "opt.step");
}
std::int64_t step_copy_bytes(const World& w) {
  return sum_field(w, EventKind::kCopyIn, "opt.step", F::bytes);
}

// --- The seed PR's model, as a program ------------------------------------------

// y = x*w1 + x*w2, run eagerly: the graph is MulBackward0 twice into one
// AddBackward0, with AccumulateGrad for w1 and w2.
FunctionDef two_param_model() {
  FunctionBuilder f("model", kForward, {"x", "w1", "w2"});
  const ValueIndex x = f.input(0);
  return f.returns({f.add(f.mul(x, f.input(1)), f.mul(x, f.input(2)))});
}

ProgramScenario seed_case(bool compiled_backward) {
  ProgramScenario s;
  s.name = compiled_backward ? "compiled_autograd_backward_adam" : "eager_backward_adam";
  s.mirrors = compiled_backward
                  ? "PR 144707 x PR 107504 case 1: compiled autograd's backward cudagraphed"
                  : "pytorch/pytorch#107504 case 2 (pytorch/pytorch#112548), the backward eager";
  s.description = compiled_backward
                      ? "eager forward, compiled-autograd backward in the tree, compiled Adam: "
                        "grads are pool outputs, 0 grad copies per step"
                      : "eager forward and backward, compiled Adam: each replay copies every grad";
  ProgramWriter p(s);
  p.function(two_param_model());
  add_two_params_and_adam(p, /*requires_grad=*/true);
  for (std::int64_t i = 0; i < kSteps; ++i) {
    p.add(MarkStepBegin{});
    p.add(tensor("x", {4, 4}));
    p.add(eager("model", {"x", "w1", "w2"}, {"y"}));
    p.add(tensor("grad_out", {4, 4}, 1.0f));
    p.add(backward_of("y", compiled_backward, "grad_out"));
    p.add(Del{"y"});
    p.add(OptimizerStep{"opt"});
    p.add(ZeroGrad{"opt", true});
  }
  if (compiled_backward) {
    s.expect = [](const World& w, const auto&) {
      return std::vector<Expectation>{
          {"optimizer step replays", kSteps - 2, step_replays(w)},
          {"grad bytes copied by those replays", 0, step_copy_bytes(w)},
          {"compiled backward replays", kSteps - 2,
           events_where(w, EventKind::kReplay, F::function, "CompiledAutograd0")},
          {"compiled-autograd captures", 1, events_of(w, EventKind::kCaCacheMiss)},
          {"graphs (backward, step)", 2, graphs(w)}};
    };
  } else {
    s.expect = [](const World& w, const auto&) {
      const std::int64_t replays = step_replays(w);
      return std::vector<Expectation>{
          {"optimizer step replays", kSteps - 2, replays},
          {"grad bytes copied (2 x 64 per replay)", 128 * replays, step_copy_bytes(w)},
          {"graphs (step)", 1, graphs(w)}};
    };
  }
  return s;
}

// --- A 3-layer MLP, each backward mode ---------------------------------------------

// loss = sum(relu(relu(x @ w1) @ w2) @ w3) (training_models.hpp).
constexpr std::int64_t kBatch = 4, kIn = 8, kHidden = 16, kOut = 4;
const MlpShape kMlp{kBatch, {kIn, kHidden, kHidden, kOut}};

enum class BackwardMode : std::uint8_t { kEager, kCompiledAutograd, kAot };

const char* mode_name(BackwardMode m) {
  switch (m) {
    case BackwardMode::kEager: return "eager";
    case BackwardMode::kCompiledAutograd: return "compiled_autograd";
    case BackwardMode::kAot: return "aot";
  }
  return "?";
}

void mlp_step(ProgramWriter& p, BackwardMode mode) {
  p.add(MarkStepBegin{});
  p.add(tensor("x", {kBatch, kIn}));
  if (mode == BackwardMode::kAot) {
    p.add(call("mlp_fwd", {"x", "w1", "w2", "w3"}, {"loss", "s_x", "s_h1", "s_h2"}));
    p.add(tensor("tangent", {}, 1.0f));
    p.add(consuming(
        call("mlp_bwd", {"s_x", "s_h1", "s_h2", "w2", "w3", "tangent"}, {"g1", "g2", "g3"}),
        {"s_x", "s_h1", "s_h2"}));
    for (int k = 1; k <= 3; ++k) {
      p.add(AccumulateGrad{fmt::format("w{}", k), fmt::format("g{}", k)});
      p.add(Del{fmt::format("g{}", k)});
    }
  } else {
    p.add(eager("mlp", {"x", "w1", "w2", "w3"}, {"loss"}));
    p.add(backward_of("loss", mode == BackwardMode::kCompiledAutograd));
  }
  p.add(Del{"loss"});
  p.add(OptimizerStep{"opt"});
  p.add(ZeroGrad{"opt", true});
}

ProgramScenario mlp_training(BackwardMode mode) {
  ProgramScenario s;
  s.name = fmt::format("mlp_training_{}_backward", mode_name(mode));
  s.mirrors = "a 3-layer MLP trained with compiled SGD, one backward mode per scenario";
  s.description = fmt::format(
      "5 steps of relu(relu(x@w1)@w2)@w3 summed, the backward {}; the params end bitwise "
      "equal across the three modes",
      mode == BackwardMode::kEager ? "eager"
      : mode == BackwardMode::kAot ? "the compiled forward's AOT backward"
                                   : "through compiled autograd");
  ProgramWriter p(s);
  const bool aot = mode == BackwardMode::kAot;
  p.function(mlp_forward(kMlp, aot ? "mlp_fwd" : "mlp", aot));
  if (aot) p.function(mlp_backward(kMlp, "mlp_bwd"));
  const Dims sizes[] = {{kIn, kHidden}, {kHidden, kHidden}, {kHidden, kOut}};
  for (int k = 0; k < 3; ++k) {
    NewTensor w = param(fmt::format("w{}", k + 1), sizes[k]);
    w.requires_grad = !aot;
    p.add(w);
  }
  CreateOptimizer opt;
  opt.name = "opt";
  opt.kind = OptimizerKind::kSgd;
  opt.params = {"w1", "w2", "w3"};
  p.add(opt);
  for (std::int64_t i = 0; i < kSteps; ++i) mlp_step(p, mode);
  const std::int64_t grad_bytes = 4 * (kIn * kHidden + kHidden * kHidden + kHidden * kOut);
  s.expect = [mode, grad_bytes](const World& w, const auto&) {
    const std::int64_t replays = step_replays(w);
    std::vector<Expectation> out{{"optimizer step replays", kSteps - 2, replays}};
    out.push_back({"grad bytes copied by those replays",
                   mode == BackwardMode::kEager ? grad_bytes * replays : 0, step_copy_bytes(w)});
    out.push_back({"errors", 0, events_of(w, EventKind::kError)});
    if (mode == BackwardMode::kCompiledAutograd) {
      out.push_back({"compiled-autograd captures", 1, events_of(w, EventKind::kCaCacheMiss)});
    }
    return out;
  };
  return s;
}

}  // namespace

void add_training_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(seed_case(true));
  out.push_back(seed_case(false));
  for (BackwardMode m :
       {BackwardMode::kEager, BackwardMode::kCompiledAutograd, BackwardMode::kAot}) {
    out.push_back(mlp_training(m));
  }
}

}  // namespace capsim
