// The training loops of training_programs.hpp.
#include "properties/training_programs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace capsim {

std::string_view loop_backward_name(LoopBackward b) {
  switch (b) {
#define CAPSIM_NAME_(e, name) \
  case LoopBackward::e: return name;
    CAPSIM_LOOP_BACKWARDS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
    case LoopBackward::kCount: break;
  }
  return "?";
}

namespace {

constexpr std::int64_t kBatch = 2;

MlpShape shape_of(const TrainingPlan& plan) {
  CAPSIM_CHECK(plan.layers >= 1 && plan.layers <= 3 && plan.width >= 2 && plan.width <= 5,
               "a plan's MLP is small");
  MlpShape shape;
  shape.batch = kBatch;
  shape.widths.assign(static_cast<std::size_t>(plan.layers) + 1, plan.width);
  return shape;
}

bool compiled_forward(LoopBackward b) {
  return b == LoopBackward::kAot || b == LoopBackward::kAotEager;
}

// The forward and backward of one step, as the mode runs them.
void forward_backward(Program& p, const TrainingPlan& plan, const MlpShape& shape) {
  const std::vector<std::string> params = mlp_param_names(shape);
  std::vector<std::string> args{"x"};
  args.insert(args.end(), params.begin(), params.end());
  if (!compiled_forward(plan.backward)) {
    p.actions.push_back(EagerCall{"mlp", args, {"loss"}});
    Backward b;
    b.tensor = "loss";
    b.compiled = plan.backward == LoopBackward::kCompiledAutograd;
    p.actions.push_back(b);
    p.actions.push_back(Del{"loss"});
    return;
  }
  // AOTAutograd's boxed convention: the saved tensors move into the backward.
  std::vector<std::string> saved{"s0"};
  for (std::size_t k = 1; k < shape.layers(); ++k) saved.push_back(fmt::format("s{}", k));
  std::vector<std::string> outs{"loss"};
  outs.insert(outs.end(), saved.begin(), saved.end());
  Call fwd;
  fwd.function = "mlp_fwd";
  fwd.args = args;
  fwd.outputs = outs;
  p.actions.push_back(fwd);
  p.actions.push_back(NewTensor{.name = "tangent", .sizes = {}, .fill = 1.0f});
  std::vector<std::string> bwd_args = saved;
  bwd_args.insert(bwd_args.end(), params.begin() + 1, params.end());
  bwd_args.push_back("tangent");
  std::vector<std::string> grads;
  for (std::size_t k = 0; k < params.size(); ++k) grads.push_back(fmt::format("g{}", k + 1));
  if (plan.backward == LoopBackward::kAot) {
    Call bwd;
    bwd.function = "mlp_bwd";
    bwd.args = bwd_args;
    bwd.outputs = grads;
    bwd.consume = saved;
    p.actions.push_back(bwd);
  } else {
    p.actions.push_back(EagerCall{"mlp_bwd", bwd_args, grads});
    for (const std::string& s : saved) p.actions.push_back(Del{s});
    p.actions.push_back(SetToRunningBackward{});
  }
  for (std::size_t k = 0; k < params.size(); ++k) {
    p.actions.push_back(AccumulateGrad{params[k], grads[k]});
    p.actions.push_back(Del{grads[k]});
  }
  p.actions.push_back(Del{"loss"});
  p.actions.push_back(Del{"tangent"});
}

}  // namespace

namespace {

const FunctionDef* function_named(const Program& p, const std::string& name) {
  for (const FunctionDef& f : p.functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool is_backward(const Program& p, const std::string& function) {
  const FunctionDef* f = function_named(p, function);
  return f != nullptr && f->mode == CompilationMode::kBackward;
}

// The bytes of every param the optimizer steps, as their new_tensor made them.
std::int64_t optimizer_param_bytes(const Program& p) {
  std::int64_t bytes = 0;
  for (const Action& a : p.actions) {
    const auto* opt = std::get_if<CreateOptimizer>(&a);
    if (opt == nullptr) continue;
    for (const std::string& name : opt->params) {
      for (const Action& b : p.actions) {
        const auto* t = std::get_if<NewTensor>(&b);
        if (t != nullptr && t->name == name) {
          bytes += 4 * numel(t->sizes);
          break;
        }
      }
    }
  }
  return bytes;
}

}  // namespace

void read_loop_grads(const Program& p, TrainingProgram& out) {
  bool cudagraphed = false, backward = false;
  bool steps_marked = true, grads_dropped = true;
  bool marked = false, stepped = false;
  for (const Action& a : p.actions) {
    if (const auto* b = std::get_if<Backward>(&a)) {
      backward = true;
      cudagraphed = cudagraphed || b->compiled;
    } else if (const auto* c = std::get_if<Call>(&a); c && is_backward(p, c->function)) {
      backward = cudagraphed = true;
    } else if (const auto* e = std::get_if<EagerCall>(&a); e && is_backward(p, e->function)) {
      backward = true;
    } else if (std::holds_alternative<MarkStepBegin>(a)) {
      marked = true;
    } else if (std::holds_alternative<OptimizerStep>(a)) {
      steps_marked = steps_marked && marked;
      grads_dropped = grads_dropped && !stepped;  // the step before was zeroed
      marked = false;
      stepped = true;
    } else if (const auto* z = std::get_if<ZeroGrad>(&a); z && z->set_to_none) {
      stepped = false;
    }
  }
  out.grad_bytes = optimizer_param_bytes(p);
  out.grads_from_recorded_backward = cudagraphed && steps_marked && grads_dropped;
  out.grads_eager = backward && !cudagraphed;
}

TrainingProgram lower(const TrainingPlan& plan) {
  TrainingProgram out;
  out.generated.seed = plan.seed;
  out.shape = shape_of(plan);
  const MlpShape& shape = out.shape;
  const bool aot = compiled_forward(plan.backward);
  Program& p = out.generated.program;
  p.functions.push_back(mlp_forward(shape, aot ? "mlp_fwd" : "mlp", aot));
  if (aot) p.functions.push_back(mlp_backward(shape, "mlp_bwd"));
  const std::vector<std::string> params = mlp_param_names(shape);
  for (std::size_t k = 0; k < params.size(); ++k) {
    NewTensor w{.name = params[k],
                .sizes = {shape.widths[k], shape.widths[k + 1]},
                .parameter = true,
                .requires_grad = !aot};
    p.actions.push_back(w);
  }
  CreateOptimizer opt;
  opt.name = "opt";
  opt.kind = plan.optimizer;
  opt.params = params;
  p.actions.push_back(opt);
  CAPSIM_CHECK(plan.accumulate >= 1 && plan.accumulate <= 3, "grads accumulate over 1 to 3 steps");
  CAPSIM_CHECK(plan.reassign_param >= 0 && plan.reassign_param < plan.layers,
               "a reassigned param exists");
  for (int i = 0; i < plan.steps; ++i) {
    if (plan.mark_step) p.actions.push_back(MarkStepBegin{});
    if (plan.reassign_before == i) {
      p.actions.push_back(ReassignData{params[static_cast<std::size_t>(plan.reassign_param)], {}});
    }
    p.actions.push_back(
        NewTensor{.name = "x", .sizes = {shape.batch, shape.widths[0]}});
    forward_backward(p, plan, shape);
    p.actions.push_back(OptimizerStep{"opt"});
    for (const std::string& w : params) p.actions.push_back(Read{w});
    if ((i + 1) % plan.accumulate == 0) p.actions.push_back(ZeroGrad{"opt", plan.set_to_none});
  }
  read_loop_grads(p, out);
  out.generated.swarm_off = plan.swarm_off;
  out.generated.torch_profile = plan.torch_profile;
  return out;
}

std::string describe(const TrainingPlan& plan) {
  const TrainingProgram t = lower(plan);
  std::string out = fmt::format(
      "# seed {}, {} layer(s) of width {}, backward {}, optimizer {}, set_to_none={}, "
      "mark_step_begin={}, {} steps, zero_grad every {} step(s){}, torch {}\n",
      plan.seed, plan.layers, plan.width, loop_backward_name(plan.backward),
      optimizer_kind_name(plan.optimizer), plan.set_to_none ? "True" : "False",
      plan.mark_step ? "True" : "False", plan.steps, plan.accumulate,
      plan.reassign_before ? fmt::format(", w{}.data reassigned before step {}",
                                         plan.reassign_param + 1, *plan.reassign_before)
                           : "",
      torch_profile_name(plan.torch_profile));
  if (!plan.swarm_off.empty())
    out += fmt::format("# swarm: off {}\n", fmt::join(plan.swarm_off, ", "));
  for (const FunctionDef& f : t.generated.program.functions) out += describe_function(f) + "\n";
  for (const Action& a : t.generated.program.actions) out += describe_action(a) + "\n";
  return out;
}

}  // namespace capsim
