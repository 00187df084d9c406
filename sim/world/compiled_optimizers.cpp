#include "sim/world/compiled_optimizers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/body_interpreter.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/messages.hpp"

namespace capsim {

// Which `opt.step()` graph Dynamo traced: per param, whether it had a grad
// (Dynamo guards each `p.grad is None`; _init_group skips a param without one)
// and whether its state existed (Dynamo guards that the state is non-empty:
// SGD makes its momentum buffers inside the first step's graph).
struct OptimizerStepKey {
  std::vector<bool> with_grad;
  std::vector<bool> with_state;
  friend auto operator<=>(const OptimizerStepKey&, const OptimizerStepKey&) = default;
};

// A compiled optimizer: its params, its state, the traced step function and
// the graph-module attributes that keep static tensors alive until the
// finalizer runs.
struct CompiledOptimizers::Optimizer {
  std::string name;
  OptimizerKind kind = OptimizerKind::kAdam;
  SgdHyper sgd;
  AdamHyper adam;
  std::vector<std::uint64_t> params;  // objects, referenced
  // Per param, referenced; empty until the state exists (SGD without
  // momentum never has any).
  std::vector<std::vector<std::uint64_t>> state;
  std::vector<std::uint64_t> graph_attributes;  // referenced until dropped
  std::map<OptimizerStepKey, std::unique_ptr<FunctionDef>> steps;
  bool traced = false;
  std::uint64_t steps_taken = 0;
};

CompiledOptimizers::CompiledOptimizers(WorldContext& world)
    : world_(world),
      ctx_(world.sim),
      objects_(world.objects),
      store_(world.store),
      calls_(world.calls),
      options_(world.options) {}

CompiledOptimizers::~CompiledOptimizers() = default;

Status CompiledOptimizers::create(const CreateOptimizer& a) {
  if (optimizers_.count(a.name) != 0) {
    return make_error(fmt::format("optimizer '{}' exists already", a.name));
  }
  if (a.params.empty()) return make_error(fmt::format("optimizer '{}': no params", a.name));
  auto opt = std::make_unique<Optimizer>();
  opt->name = a.name;
  opt->kind = a.kind;
  opt->sgd = a.sgd;
  opt->adam = a.adam;
  for (const std::string& p : a.params) {
    if (p.find('.') != std::string::npos) {
      return make_error(fmt::format("optimizer '{}': param '{}' is not a tensor name", a.name, p));
    }
    CAPSIM_TRY_ASSIGN(const std::uint64_t o, objects_.lookup(p));
    objects_.ref(o);
    opt->params.push_back(o);
  }
  ctx_.emit(EventKind::kOptimizer, {{F::name, a.name},
                                    {F::what, "created"},
                                    {F::kind, std::string(optimizer_kind_name(a.kind))},
                                    {F::params, a.params.size()}});
  optimizers_.emplace(a.name, std::move(opt));
  return {};
}

namespace {
// SGD's update where the state holds no momentum buffer. Without momentum
// SGD keeps no state at all: `sgd_plain` over param and grad. On the first
// step with momentum, `buf = clone(grad)` is made inside the graph and
// returned, for the optimizer to keep as its state (torch/optim/sgd.py,
// _single_tensor_sgd): a zero-filled buffer through the sgd kernel with
// dampening 0 computes exactly that (`buf = 0 * momentum + grad`), as the
// SGD source ignores dampening on a first step.
void append_stateless_sgd(FunctionDef& def, ValueIndex param, ValueIndex grad, const Dims& sizes,
                          const SgdHyper& sgd) {
  BodyOp update;
  update.sgd = sgd;
  if (sgd.momentum == 0.0f) {
    update.kind = BodyOpKind::kSgdPlain;
    update.args = {param, grad};
    def.ops.push_back(update);
    return;
  }
  const auto buffer = static_cast<ValueIndex>(def.input_names.size() + def.ops.size());
  BodyOp fill;
  fill.kind = BodyOpKind::kFull;
  fill.sizes = sizes;
  fill.scalar = 0.0f;
  def.ops.push_back(fill);
  update.kind = BodyOpKind::kSgd;
  update.args = {param, grad, buffer};
  update.sgd.dampening = 0.0f;
  def.ops.push_back(update);
  def.outputs.push_back(buffer);
}

// The traced step over the params with a grad (`sizes` holds those params'
// sizes; all of them: "NAME.step", else "NAME.step[i, j]"): inputs are those
// params, then their grads, then each one's state where it exists. Adam's
// always does (its _init_group creates it before Dynamo traces the update);
// SGD's momentum buffer does from the second step.
std::unique_ptr<FunctionDef> build_step(const OptimizerStepKey& key, const std::string& name,
                                        OptimizerKind kind, const std::vector<Dims>& sizes,
                                        const SgdHyper& sgd, const AdamHyper& adam) {
  auto def = std::make_unique<FunctionDef>();
  std::vector<std::string> kept;
  std::vector<bool> has_state;  // per kept param
  for (std::size_t i = 0; i < key.with_grad.size(); ++i) {
    if (!key.with_grad[i]) continue;
    kept.push_back(std::to_string(i));
    has_state.push_back(key.with_state[i]);
  }
  const std::size_t n = kept.size();
  CAPSIM_CHECK(sizes.size() == n, "one size per param with a grad");
  def->name = n == key.with_grad.size() ? fmt::format("{}.step", name)
                                        : fmt::format("{}.step[{}]", name, fmt::join(kept, ", "));
  if (n != key.with_grad.size()) {
    for (std::size_t i = 0; i < key.with_grad.size(); ++i) {
      if (key.with_grad[i]) def->step_params.push_back(static_cast<std::uint32_t>(i));
    }
  }
  def->mode = CompilationMode::kInference;
  for (std::size_t i = 0; i < n; ++i) def->input_names.push_back(fmt::format("param_{}", i));
  for (std::size_t i = 0; i < n; ++i) def->input_names.push_back(fmt::format("grad_{}", i));
  std::vector<ValueIndex> first_state;  // per kept param
  for (std::size_t i = 0; i < n; ++i) {
    first_state.push_back(static_cast<ValueIndex>(def->input_names.size()));
    if (!has_state[i]) continue;
    if (kind == OptimizerKind::kSgd) {
      def->input_names.push_back(fmt::format("momentum_buffer_{}", i));
    } else {
      def->input_names.push_back(fmt::format("exp_avg_{}", i));
      def->input_names.push_back(fmt::format("exp_avg_sq_{}", i));
      def->input_names.push_back(fmt::format("step_{}", i));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto p = static_cast<ValueIndex>(i);
    const auto g = static_cast<ValueIndex>(n + i);
    const ValueIndex s = first_state[i];
    if (!has_state[i]) {
      CAPSIM_CHECK(kind == OptimizerKind::kSgd, "only SGD steps without state");
      append_stateless_sgd(*def, p, g, sizes[i], sgd);
      continue;
    }
    BodyOp op;
    if (kind == OptimizerKind::kSgd) {
      op.kind = BodyOpKind::kSgd;
      op.args = {p, g, s};
      op.sgd = sgd;
    } else {
      op.kind = kind == OptimizerKind::kAdam ? BodyOpKind::kAdam : BodyOpKind::kAdamW;
      op.args = {p, g, s, static_cast<ValueIndex>(s + 1), static_cast<ValueIndex>(s + 2)};
      op.adam = adam;
    }
    def->ops.push_back(op);
  }
  return def;
}
}  // namespace

// Tracing: _init_group creates Adam's state eagerly (SGD's stays empty: its
// momentum buffers are made inside the step); Dynamo marks params and state
// static with guard=True ([M]) and installs them as attributes of the graph
// module, which keeps them alive until the finalizer.
Status CompiledOptimizers::trace(Optimizer& opt, const std::vector<std::uint64_t>& grads) {
  CAPSIM_CHECK(!opt.traced && opt.state.empty(), "an optimizer is traced once");
  opt.traced = true;
  for (std::uint64_t p : opt.params) {
    CAPSIM_TRY_ASSIGN(const Tensor t, store_.tensor(objects_.at(p).tensor));
    std::vector<std::uint64_t> state;
    auto add = [&](const Dims& sizes, float fill) -> Status {
      CAPSIM_TRY_ASSIGN(const TensorId s, world_.fresh_tensor(sizes, fill, 0));
      state.push_back(adopt_state(s));
      return {};
    };
    if (opt.kind != OptimizerKind::kSgd) {
      CAPSIM_TRY(add(t.meta.sizes, 0.0f));
      CAPSIM_TRY(add(t.meta.sizes, 0.0f));
      CAPSIM_TRY(add({2}, 1.0f));  // {beta1^t, beta2^t}: capsim's step state
    }
    objects_.at(p).static_guard = true;
    opt.state.push_back(std::move(state));
  }
  for (std::size_t i = 0; i < opt.params.size(); ++i) {
    opt.graph_attributes.push_back(opt.params[i]);
    for (std::uint64_t s : opt.state[i]) opt.graph_attributes.push_back(s);
  }
  for (std::uint64_t o : opt.graph_attributes) objects_.ref(o);
  std::size_t static_grads = 0;
  for (std::uint64_t g : grads) static_grads += objects_.at(g).static_guard.has_value();
  ctx_.emit(EventKind::kOptimizer,
            {{F::name, opt.name},
             {F::what, "traced"},
             {F::static_params, opt.params.size()},
             {F::static_state, opt.graph_attributes.size() - opt.params.size()},
             {F::static_grads, static_grads}});
  return {};
}

// A state tensor the optimizer now holds (one reference), marked static.
// (The move_optimizer_state control marks it without a guard, so that a move
// re-records at once instead of recompiling.)
std::uint64_t CompiledOptimizers::adopt_state(TensorId held) {
  const std::uint64_t o = objects_.new_object(held);
  objects_.ref(o);
  objects_.at(o).static_guard = options_.fault != Fault::kMoveOptimizerState;
  return o;
}

Status CompiledOptimizers::step(const OptimizerStep& a) {
  auto it = optimizers_.find(a.name);
  if (it == optimizers_.end()) return make_error(fmt::format("unknown optimizer '{}'", a.name));
  Optimizer& opt = *it->second;
  std::vector<std::uint64_t> grads;  // of the params that have one
  OptimizerStepKey key;
  for (std::uint64_t p : opt.params) {
    const std::optional<std::uint64_t>& g = objects_.at(p).grad;
    key.with_grad.push_back(g.has_value());
    if (g) grads.push_back(*g);
  }
  // No param has a grad: _init_group finds nothing and the step updates
  // nothing (a graph without kernels, which capsim does not compile).
  if (grads.empty()) return {};
  if (!opt.traced) {
    CAPSIM_TRY(trace(opt, grads));
  } else if (options_.fault == Fault::kMoveOptimizerState && opt.steps_taken == 2) {
    // The control of cudagraphs.static-never-reallocated: the state moves to
    // new storage once, after the step was warmed up and recorded, so that the
    // next call re-records over the new addresses.
    for (const auto& state : opt.state) {
      for (std::uint64_t o : state) CAPSIM_TRY(calls_.move_to_fresh_copy(o));
    }
  }
  ++opt.steps_taken;
  for (const auto& state : opt.state) key.with_state.push_back(!state.empty());
  CAPSIM_TRY_ASSIGN(const FunctionDef* step, step_for(opt, key));
  std::vector<std::uint64_t> args;
  std::vector<std::size_t> stateless;  // params whose SGD step makes a buffer
  for (std::size_t i = 0; i < opt.params.size(); ++i) {
    if (key.with_grad[i]) args.push_back(opt.params[i]);
  }
  args.insert(args.end(), grads.begin(), grads.end());
  for (std::size_t i = 0; i < opt.params.size(); ++i) {
    if (!key.with_grad[i]) continue;
    args.insert(args.end(), opt.state[i].begin(), opt.state[i].end());
    if (opt.state[i].empty()) stateless.push_back(i);
  }
  CAPSIM_TRY_ASSIGN(const auto outs, calls_.call_unbound(*step, args));
  if (!outs) return {};
  return keep_momentum_buffers(opt, stateless, *outs);
}

// The buffers a first SGD step returned become the params' state (none
// without momentum), held by the optimizer and, once the next step is
// traced, by the graph module too.
Status CompiledOptimizers::keep_momentum_buffers(Optimizer& opt,
                                                 const std::vector<std::size_t>& stateless,
                                                 const std::vector<TensorId>& outs) {
  const bool momentum = opt.kind == OptimizerKind::kSgd && opt.sgd.momentum != 0.0f;
  CAPSIM_CHECK(outs.size() == (momentum ? stateless.size() : 0), "one buffer per stateless param");
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const std::uint64_t o = adopt_state(outs[k]);
    opt.state.at(stateless[k]).push_back(o);
    opt.graph_attributes.push_back(o);
    objects_.ref(o);
  }
  return {};
}

// The step traced for this key. Another set of grads than the ones traced
// before fails Dynamo's `p.grad is None` guards, a state made since fails its
// guard on the state's length: a recompile either way.
Result<const FunctionDef*> CompiledOptimizers::step_for(Optimizer& opt,
                                                        const OptimizerStepKey& key) {
  auto [it, fresh] = opt.steps.try_emplace(key);
  if (!fresh) return it->second.get();
  std::vector<Dims> sizes;
  for (std::size_t i = 0; i < opt.params.size(); ++i) {
    if (!key.with_grad[i]) continue;
    CAPSIM_TRY_ASSIGN(const Tensor t, store_.tensor(objects_.at(opt.params[i]).tensor));
    sizes.push_back(t.meta.sizes);
  }
  it->second = build_step(key, opt.name, opt.kind, sizes, opt.sgd, opt.adam);
  CAPSIM_TRY(validate(*it->second));
  if (opt.steps.size() > 1) {
    bool grads_seen = false;
    for (const auto& [other, def] : opt.steps)
      grads_seen |= other != key && other.with_grad == key.with_grad;
    ++ctx_.counters.recompiles;
    ctx_.emit(EventKind::kCompile,
              {{F::function, it->second->name},
               {F::recompile, true},
               {F::reason, decision_key(grads_seen ? Decision::kCompileOptimizerStateGuard
                                                   : Decision::kCompileGradNoneGuard)}});
  }
  return it->second.get();
}

Status CompiledOptimizers::zero_grad(const ZeroGrad& a) {
  auto it = optimizers_.find(a.name);
  if (it == optimizers_.end()) return make_error(fmt::format("unknown optimizer '{}'", a.name));
  Optimizer& opt = *it->second;
  if (a.set_to_none && options_.config.zero_grad_static_error) {
    for (std::size_t i = 0; i < opt.params.size(); ++i) {
      const PyObject& p = objects_.at(opt.params[i]);
      if (p.grad && objects_.at(*p.grad).static_guard) {
        ctx_.emit(EventKind::kError,
                  {{F::id, decision_key(Decision::kErrorZeroGradStatic)},
                   {F::exception, "RuntimeError"},
                   {F::message, messages::zero_grad_static(fmt::format("param_{}", i))}});
        return {};
      }
    }
  }
  CAPSIM_TRY_ASSIGN(const std::size_t changed, clear_grads_of(opt.params, a.set_to_none));
  ctx_.emit(EventKind::kZeroGrad,
            {{F::name, a.name}, {F::set_to_none, a.set_to_none}, {F::grads, changed}});
  return {};
}

Result<std::size_t> CompiledOptimizers::clear_grads_of(const std::vector<std::uint64_t>& params,
                                                       bool set_to_none) {
  std::size_t changed = 0;
  for (std::uint64_t p : params) {
    PyObject& param = objects_.at(p);
    if (!param.grad) continue;
    ++changed;
    if (set_to_none) {
      const std::uint64_t g = *param.grad;
      param.grad.reset();
      CAPSIM_TRY(objects_.unref(g));
    } else {
      const TensorArg grad = held_tensor_arg(store_, objects_.at(*param.grad).tensor);
      CAPSIM_TRY_ASSIGN(const KernelLaunch fill, launch_fill(grad, 0.0f));
      CAPSIM_TRY(ctx_.backend.run_step(Step{fill, {}}));
    }
  }
  return changed;
}

Status CompiledOptimizers::clear_grads(const ClearGrads& a) {
  std::vector<std::uint64_t> params;
  for (const std::string& name : a.params) {
    CAPSIM_TRY_ASSIGN(const std::uint64_t p, objects_.lookup(name));
    params.push_back(p);
  }
  CAPSIM_TRY_ASSIGN(const std::size_t changed, clear_grads_of(params, a.set_to_none));
  ctx_.emit(EventKind::kZeroGrad,
            {{F::name, a.name}, {F::set_to_none, a.set_to_none}, {F::grads, changed}});
  return {};
}

Status CompiledOptimizers::drop(const DropOptimizer& a) {
  auto it = optimizers_.find(a.name);
  if (it == optimizers_.end()) return make_error(fmt::format("unknown optimizer '{}'", a.name));
  std::unique_ptr<Optimizer> opt = std::move(it->second);
  optimizers_.erase(it);
  std::vector<TensorId> param_tensors;
  for (std::uint64_t p : opt->params) param_tensors.push_back(objects_.at(p).tensor);
  std::vector<TensorId> state_tensors;
  for (const auto& state : opt->state) {
    for (std::uint64_t o : state) state_tensors.push_back(objects_.at(o).tensor);
  }
  // The finalizer: the graph module forgets its static attributes.
  if (options_.fault != Fault::kFinalizerKeepsState) {
    for (std::uint64_t o : opt->graph_attributes) CAPSIM_TRY(objects_.unref(o));
  }
  for (const auto& state : opt->state) {
    for (std::uint64_t o : state) CAPSIM_TRY(objects_.unref(o));
  }
  for (std::uint64_t p : opt->params) CAPSIM_TRY(objects_.unref(p));
  // The compiled step dies with the optimizer; so do its FunctionIds.
  for (const auto& [mask, step] : opt->steps) calls_.forget_compiled(*step);
  ctx_.emit(EventKind::kOptimizer, {{F::name, a.name},
                                    {F::what, "dropped"},
                                    {F::params_alive, world_.live_storages_of(param_tensors)},
                                    {F::state_alive, world_.live_storages_of(state_tensors)}});
  // The step's FunctionDef must outlive the manager's WrappedFunctions (the
  // World shuts the manager down next if none is left; a live one may still
  // name them).
  for (auto& [mask, step] : opt->steps) retired_defs_.push_back(std::move(step));
  return {};
}

}  // namespace capsim
