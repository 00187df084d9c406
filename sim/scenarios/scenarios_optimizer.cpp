// Built-in scenarios, part 4: the compiled optimizer of the seed PR (107504)
// and the zero_grad rule of PR 107853. Four cases from the seed: (a) the
// upstream backward is cudagraphed, so the grads are cudagraph-managed and
// cost no copy; (b) the backward is eager, so every grad is copied into the
// pool on every replay; (c) the grads are marked static, so nothing is copied,
// and then zero_grad(set_to_none=True) frees them (shipped: a re-record;
// with the PR's rule: an error); (d) the optimizer is dropped, its finalizer
// releases the static marks and the params become collectable.
#include "sim/scenarios/scenario_support.hpp"

namespace capsim {

using namespace scenario_support;

namespace {

constexpr std::int64_t kSteps = 5;

// fwd(x, w1, w2) = x*w1 + x*w2, saving x. bwd(x, grad) = (grad*x, grad*x).
void add_model(ProgramWriter& p) {
  p.function(two_param_forward());
  {
    FunctionBuilder f("bwd", kBackward, {"primals_1", "tangents_1"});
    f.static_inputs({0});
    const ValueIndex g = f.input(1);
    p.function(f.returns({f.mul(g, f.input(0)), f.mul(g, f.input(0))}));
  }
}

// The forward, then the backward (cudagraphed, or eager with
// set_to_running_backward), then AccumulateGrad for both params.
void forward_backward(ProgramWriter& p, bool cudagraphed_backward) {
  p.add(tensor("x", {4, 4}));
  p.add(call("fwd", {"x", "w1", "w2"}, {"loss", "saved"}));
  p.add(tensor("grad_out", {4, 4}, 1.0f));
  if (cudagraphed_backward) {
    p.add(consuming(call("bwd", {"saved", "grad_out"}, {"g1", "g2"}), {"saved"}));
  } else {
    p.add(eager("bwd", {"saved", "grad_out"}, {"g1", "g2"}));
    p.add(Del{"saved"});
    p.add(SetToRunningBackward{});
  }
  p.add(AccumulateGrad{"w1", "g1"});
  p.add(AccumulateGrad{"w2", "g2"});
  p.add(Del{"g1"});
  p.add(Del{"g2"});
}

std::int64_t step_replays(const World& w) {
  return events_where(w, EventKind::kReplay, F::function, "opt.step");
}
std::int64_t step_copies(const World& w) {
  return sum_field(w, EventKind::kCopyIn, "opt.step", F::copies);
}
std::int64_t step_copy_bytes(const World& w) {
  return sum_field(w, EventKind::kCopyIn, "opt.step", F::bytes);
}

ProgramScenario compiled_adam_cudagraphed_backward() {
  ProgramScenario s;
  s.name = "compiled_adam_cudagraphed_backward";
  s.mirrors = "PR 107504 case 1 (test_compiled_optimizers.py: check_cudagraphs_ran)";
  s.description = "the backward is cudagraphed: grads are pool outputs, 0 copies per step";
  ProgramWriter p(s);
  add_model(p);
  add_two_params_and_adam(p);
  for (std::int64_t i = 0; i < kSteps; ++i) {
    p.add(MarkStepBegin{});
    forward_backward(p, true);
    p.add(OptimizerStep{"opt"});
    p.add(ZeroGrad{"opt", true});
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{{"optimizer step replays", kSteps - 2, step_replays(w)},
                                    {"grad copies in those replays", 0, step_copies(w)},
                                    {"bytes copied by them", 0, step_copy_bytes(w)},
                                    {"graphs (fwd, bwd, step)", 3, graphs(w)}};
  };
  return s;
}

ProgramScenario compiled_adam_eager_backward() {
  ProgramScenario s;
  s.name = "compiled_adam_eager_backward";
  s.mirrors = "pytorch/pytorch#107504 case 2 (pytorch/pytorch#112548)";
  s.description = "the backward is eager: each replay copies every grad into the pool";
  ProgramWriter p(s);
  add_model(p);
  add_two_params_and_adam(p);
  for (std::int64_t i = 0; i < kSteps; ++i) {
    forward_backward(p, false);
    p.add(OptimizerStep{"opt"});
    p.add(ZeroGrad{"opt", true});
  }
  s.expect = [](const World& w, const auto&) {
    const std::int64_t replays = step_replays(w);
    return std::vector<Expectation>{
        {"optimizer step replays", kSteps - 2, replays},
        {"grad copies (2 per replay)", 2 * replays, step_copies(w)},
        {"bytes copied (2 x 64 per replay)", 128 * replays, step_copy_bytes(w)}};
  };
  return s;
}

ProgramScenario compiled_adam_static_grads(bool pr_107853_rule) {
  ProgramScenario s;
  s.name = pr_107853_rule ? "compiled_adam_static_grads_pr107853"
                          : "compiled_adam_static_grads_zero_grad";
  s.mirrors = pr_107853_rule ? "PR 107853 (proposed, never shipped): zero_grad raises"
                             : "PR 107504 case 2 with mark_static_address on the grads";
  s.description =
      pr_107853_rule
          ? "static grads: 0 copies; zero_grad(set_to_none=True) raises under the PR's rule"
          : "static grads: 0 copies; zero_grad(set_to_none=True) then moves them: a re-record";
  s.options.config.zero_grad_static_error = pr_107853_rule;
  ProgramWriter p(s);
  add_model(p);
  add_two_params_and_adam(p);
  for (std::int64_t i = 0; i < kSteps; ++i) {
    forward_backward(p, false);
    if (i == 0) {
      p.add(MarkStatic{"w1.grad", false});
      p.add(MarkStatic{"w2.grad", false});
    }
    p.add(OptimizerStep{"opt"});
    p.add(ZeroGrad{"opt", false});  // zero in place: the pointers stay
  }
  p.probe(graphs);
  p.probe(step_copies);
  // What the seed warns about: freeing static grads.
  p.add(ZeroGrad{"opt", true});
  p.add(tensor("unrelated_activation", {4, 4}));
  forward_backward(p, false);
  p.add(OptimizerStep{"opt"});
  p.probe(graphs);
  s.expect = [pr_107853_rule](const World& w, const std::vector<std::int64_t>& probe) {
    return std::vector<Expectation>{
        {"graphs before zero_grad(set_to_none=True) (fwd, step)", 2, probe[0]},
        {"grad copies in steady state", 0, probe[1]},
        {"zero_grad errors (Z1)", pr_107853_rule ? 1 : 0,
         decisions_made(w, Decision::kErrorZeroGradStatic)},
        {"graphs after the next step (re-record when the grads moved)", pr_107853_rule ? 2 : 3,
         probe[2]},
        {"step re-records", pr_107853_rule ? 0 : 1,
         static_cast<std::int64_t>(w.counters().rerecords)}};
  };
  return s;
}

ProgramScenario compiled_adam_optimizer_dropped() {
  ProgramScenario s;
  s.name = "compiled_adam_optimizer_dropped";
  s.mirrors = "test_compiled_optimizers.py::test_static_address_finalizer";
  s.description =
      "dropping the optimizer runs the finalizer: params are collectable, the manager and "
      "its pool go";
  ProgramWriter p(s);
  add_model(p);
  add_two_params_and_adam(p);
  for (std::int64_t i = 0; i < 3; ++i) {
    p.add(tensor("g1", {4, 4}));
    p.add(tensor("g2", {4, 4}));
    p.add(AccumulateGrad{"w1", "g1"});
    p.add(AccumulateGrad{"w2", "g2"});
    p.add(Del{"g1"});
    p.add(Del{"g2"});
    p.add(OptimizerStep{"opt"});
    p.add(ZeroGrad{"opt", true});
  }
  p.add(Del{"w1"});
  p.add(Del{"w2"});
  p.probe([](const World& w) { return static_cast<std::int64_t>(w.manager() != nullptr); });
  p.add(DropOptimizer{"opt"});
  s.expect = [](const World& w, const std::vector<std::int64_t>& probe) {
    std::int64_t alive = -1;
    for (const Event& e : w.events()) {
      if (e.kind == EventKind::kOptimizer && e.text(F::what) == "dropped") {
        alive = e.get<std::int64_t>(F::params_alive);
      }
    }
    return std::vector<Expectation>{
        {"manager alive before the drop", 1, probe[0]},
        {"params alive after the drop", 0, alive},
        {"manager alive after the drop", 0, static_cast<std::int64_t>(w.manager() != nullptr)},
        {"cudagraph pool live blocks", 0, live_blocks(w)},
        {"optimizer step graphs", 1, graphs(w)}};
  };
  return s;
}

}  // namespace

// A param without a grad: _init_group skips it and Dynamo guards on
// `p.grad is None`, so the step updates only w1; when w2's grad appears the
// guard fails and the step recompiles over both (classic capsim refused the
// step instead). Every release from 2.5 does this.
ProgramScenario compiled_optimizer_grad_none_guard() {
  ProgramScenario s;
  s.name = "compiled_optimizer_grad_none_guard";
  s.mirrors = "optimizer.py::OptimizerVariable.map_sources_and_install_guards (a None grad)";
  s.description = "w2 has no grad at first: its step skips it; when it appears, a recompile";
  s.options.config.torch_profile = kNewestTorchProfile;
  ProgramWriter p(s);
  add_model(p);
  add_two_params_and_adam(p);
  CreateOptimizer w2_only;  // never stepped: its zero_grad clears w2's grad
  w2_only.name = "w2_only";
  w2_only.kind = OptimizerKind::kSgd;
  w2_only.params = {"w2"};
  p.add(w2_only);
  for (std::int64_t i = 0; i < kSteps; ++i) {
    forward_backward(p, false);
    if (i < 2) p.add(ZeroGrad{"w2_only", true});
    p.add(OptimizerStep{"opt"});
    p.add(ZeroGrad{"opt", true});
  }
  s.expect = [](const World& w, const auto&) {
    return std::vector<Expectation>{
        {"grad-None recompiles", 1, decisions_made(w, Decision::kCompileGradNoneGuard)},
        {"steps over w1 alone compiled", 1,
         events_where(w, EventKind::kCompile, F::function, "opt.step[0]")},
        {"recompiles", 1, static_cast<std::int64_t>(w.counters().recompiles)}};
  };
  return s;
}

void add_optimizer_scenarios(std::vector<ProgramScenario>& out) {
  out.push_back(compiled_adam_cudagraphed_backward());
  out.push_back(compiled_adam_eager_backward());
  out.push_back(compiled_adam_static_grads(false));
  out.push_back(compiled_adam_static_grads(true));
  out.push_back(compiled_adam_optimizer_dropped());
  out.push_back(compiled_optimizer_grad_none_guard());
}

}  // namespace capsim
