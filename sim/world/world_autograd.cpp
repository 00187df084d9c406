// WorldAutograd: autograd over the World's own tensors (program.hpp's NewTensor
// requires_grad, EagerCall on tensors that require grad, AccumulateGrad,
// Backward).
//
// The engine (sim/autograd/autograd_engine.hpp) runs on the World's memory,
// store and default pool, so saved tensors are the World's real storages and
// grads are real allocations. It owns nothing between actions: whatever it
// makes is handed to the World's TensorRefs at once (AutogradEngine::disown),
// the tensors a node saves are held there for the graph, and the World's
// objects are the only truth about .grad (lent to the engine for a backward,
// taken back after it).
//
// A compiled backward is compiled autograd's Phase A, cache and functional
// capture over the same graph; the capture is lowered to a BACKWARD function
// (sim/compiled_autograd/function_lowering.hpp) and called through the tree
// manager like every other compiled function, so its warmup, recording,
// replays, input copies and pool use are the tree manager's real events, and
// its grads are outputs in the cudagraph pool. AccumulateGrad then runs
// outside the graph, as the lowering documents. A capture the lowering cannot
// express runs through the FX interpreter instead, with no tree function (an
// `eager` event with reason `not_lowerable`: capsim's limit, not PyTorch's).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sim/autograd/autograd_body.hpp"
#include "sim/autograd/autograd_errors.hpp"
#include "sim/compiled_autograd/compiled_backward.hpp"
#include "sim/compiled_autograd/function_lowering.hpp"
#include "sim/compiled_autograd/imported_autograd.hpp"
#include "sim/compiled_autograd/runner.hpp"
#include "sim/core/body_interpreter.hpp"
#include "sim/core/decisions.hpp"
#include "sim/world/world_autograd_state.hpp"

namespace capsim {

WorldAutograd::WorldAutograd(WorldContext& world)
    : world_(world),
      ctx_(world.sim),
      objects_(world.objects),
      store_(world.store),
      calls_(world.calls),
      options_(world.options) {}

WorldAutograd::~WorldAutograd() = default;

WorldAutograd::State& WorldAutograd::ensure() {
  if (!state_) {
    state_ =
        std::make_unique<State>(AutogradDevice{ctx_.memory, store_, ctx_.backend, kDefaultPool});
  }
  return *state_;
}

bool WorldAutograd::requires_grad(const std::vector<TensorId>& inputs) const {
  if (!state_) return false;
  return std::any_of(inputs.begin(), inputs.end(), [&](TensorId t) {
    const Result<Variable> v = state_->engine.variable(t);
    return v.ok() && v->requires_grad;
  });
}

Status WorldAutograd::adopt_leaf(TensorId tensor, std::uint64_t object) {
  State& ag = ensure();
  CAPSIM_TRY(ag.engine.adopt(tensor, true));
  ag.leaf_objects.emplace(tensor, object);
  return {};
}

// --- The forward ------------------------------------------------------------------

Status WorldAutograd::eager_call(const FunctionDef& def, const std::vector<TensorId>& inputs,
                                 const std::vector<std::string>& outputs) {
  AutogradEngine& e = state_->engine;
  CAPSIM_CHECK(e.owned().empty(), "the engine owns nothing between actions");
  std::vector<Variable> in;
  for (TensorId t : inputs) {
    CAPSIM_TRY_ASSIGN(const Variable v, e.adopt(t, false));
    in.push_back(v);
  }
  const std::size_t first_node = e.num_nodes();
  const Result<std::vector<Variable>> outs = run_body_with_autograd(e, def, in);
  const std::vector<TensorId> made = take_engine_made();
  std::vector<TensorId> results;
  if (outs.ok()) {
    hold_saved_tensors(first_node);
    for (const Variable& v : *outs) {
      ctx_.refs.hold(v.tensor);
      results.push_back(v.tensor);
    }
  }
  for (TensorId t : made) CAPSIM_TRY(ctx_.refs.drop(t));
  if (!outs.ok()) return outs.error();
  return world_.bind_outputs(results, outputs);
}

// Everything the engine made becomes the World's, held once until the graph
// and the caller have taken their own references; the caller drops these
// holds then.
std::vector<TensorId> WorldAutograd::take_engine_made() {
  AutogradEngine& e = state_->engine;
  const std::vector<TensorId> made(e.owned().begin(), e.owned().end());
  for (TensorId t : made) {
    e.disown(t);
    ctx_.refs.hold(t);
  }
  return made;
}

void WorldAutograd::hold_saved_tensors(std::size_t first_node) {
  AutogradEngine& e = state_->engine;
  for (std::size_t id = first_node; id < e.num_nodes(); ++id) {
    const auto node = static_cast<AutogradNodeId>(id);
    for (TensorId t : e.node(node).saved_tensors) {
      ctx_.refs.hold(t);
      state_->saved_holds[node].push_back(t);
    }
  }
}

Status WorldAutograd::drop_released_saved_tensors() {
  auto& holds = state_->saved_holds;
  for (auto it = holds.begin(); it != holds.end();) {
    if (!state_->engine.released(it->first)) {
      ++it;
      continue;
    }
    for (TensorId t : it->second) CAPSIM_TRY(ctx_.refs.drop(t));
    it = holds.erase(it);
  }
  return {};
}

Status WorldAutograd::retarget_leaf(TensorId old, TensorId now) {
  if (!state_) return {};
  auto& leaves = state_->leaf_objects;
  const auto it = leaves.find(old);
  if (it == leaves.end()) return {};
  const std::uint64_t object = it->second;
  leaves.erase(it);
  leaves.emplace(now, object);
  return state_->engine.replace_leaf(old, now);
}

// --- .grad, lent and taken back -------------------------------------------------

// Returns false, with the E1 event out, when a .grad the backward would add
// to was freed by a new generation (PyTorch raises when AccumulateGrad reads
// it; capsim checks every leaf's .grad, reached or not).
bool WorldAutograd::lend_grads_to_engine() {
  std::vector<std::uint64_t> grads;
  for (const auto& [leaf, object] : state_->leaf_objects) {
    const PyObject* o = objects_.find(object);
    if (o != nullptr && o->grad) grads.push_back(*o->grad);
  }
  if (world_.raise_if_poisoned(grads)) return false;
  for (const auto& [leaf, object] : state_->leaf_objects) {
    const PyObject* o = objects_.find(object);
    std::optional<TensorId> grad;
    if (o != nullptr && o->grad) grad = objects_.at(*o->grad).tensor;
    state_->engine.set_grad(leaf, grad);
  }
  return true;
}

// Each leaf whose .grad was None and is set now gets the engine's tensor as
// a new object; one that had a grad was added to in place.
void WorldAutograd::take_grads_from_engine() {
  AutogradEngine& e = state_->engine;
  for (const auto& [leaf, object] : state_->leaf_objects) {
    const std::optional<TensorId> grad = e.grad_of(leaf);
    e.set_grad(leaf, std::nullopt);
    PyObject* const o = objects_.find(object);
    if (!grad || o == nullptr) continue;
    PyObject& param = *o;
    if (param.grad && objects_.at(*param.grad).tensor == *grad) continue;
    CAPSIM_CHECK(!param.grad, "a backward replaces no existing .grad");
    e.disown(*grad);
    ctx_.refs.hold(*grad);
    const std::uint64_t g = objects_.new_object(*grad);
    objects_.ref(g);
    param.grad = g;
  }
}

std::int64_t WorldAutograd::accumulate_grads_among(std::span<const AutogradNodeId> nodes) const {
  const AutogradEngine& e = state_->engine;
  return std::count_if(nodes.begin(), nodes.end(), [&](AutogradNodeId id) {
    return id < e.num_nodes() && e.node(id).kind == AutogradNodeKind::kAccumulateGrad;
  });
}

// --- AccumulateGrad outside a graph ------------------------------------------------

Status WorldAutograd::accumulate_grad(const AccumulateGrad& a) {
  CAPSIM_TRY_ASSIGN(const std::uint64_t p, objects_.lookup(a.param));
  CAPSIM_TRY_ASSIGN(const std::uint64_t g, objects_.lookup(a.grad));
  // PyTorch's engine refuses a grad whose shape is not the parameter's
  // (validate_outputs: "... returned an invalid gradient at index 0 - got
  // [..] but expected shape compatible with [..]"); it would sum a grad that
  // broadcasts to it, which capsim does not model, so that is refused too.
  CAPSIM_TRY_ASSIGN(const Tensor param, store_.tensor(objects_.at(p).tensor));
  CAPSIM_TRY_ASSIGN(const Tensor grad, store_.tensor(objects_.at(g).tensor));
  if (param.meta.sizes != grad.meta.sizes) {
    return make_error(fmt::format(
        "an invalid gradient for '{}': got [{}] but expected shape compatible "
        "with [{}] (PyTorch raises here; capsim accumulates only a grad of the parameter's "
        "sizes)",
        a.param, fmt::join(grad.meta.sizes, ", "), fmt::join(param.meta.sizes, ", ")));
  }
  return accumulate_into(p, g);
}

Status WorldAutograd::accumulate_into(std::uint64_t p, std::uint64_t g) {
  if (world_.raise_if_poisoned({g})) return {};
  PyObject& param = objects_.at(p);
  if (!param.grad) {
    if (ctx_.fault == Fault::kCloneCompiledGrads) {
      // The control of loop.grads-not-copied-when-backward-cudagraphed.
      const TensorId grad = objects_.at(g).tensor;
      CAPSIM_TRY_ASSIGN(const Tensor t, store_.tensor(grad));
      CAPSIM_TRY_ASSIGN(const TensorId clone, world_.fresh_tensor(t.meta.sizes, 0.0f, 0));
      const KernelLaunch copy =
          CAPSIM_MUST(launch_copy(held_tensor_arg(store_, clone), held_tensor_arg(store_, grad)));
      CAPSIM_TRY(ctx_.backend.run_step(Step{copy, {}}));
      const std::uint64_t cloned = objects_.new_object(clone);
      objects_.ref(cloned);
      objects_.at(p).grad = cloned;
      return {};
    }
    // AccumulateGrad steals the incoming grad: .grad is that very tensor.
    objects_.ref(g);
    param.grad = g;
    return {};
  }
  if (world_.raise_if_poisoned({*param.grad})) return {};
  const TensorArg acc = held_tensor_arg(store_, objects_.at(*param.grad).tensor);
  const TensorArg inc = held_tensor_arg(store_, objects_.at(g).tensor);
  CAPSIM_TRY_ASSIGN(const KernelLaunch add, launch_binary(KernelKind::kAdd, acc, acc, inc));
  return ctx_.backend.run_step(Step{add, {}});
}

// --- Backward -----------------------------------------------------------------------

Status WorldAutograd::backward(const Backward& a) {
  CAPSIM_TRY_ASSIGN(const std::uint64_t root_object, objects_.lookup(a.tensor));
  std::optional<std::uint64_t> grad_object;
  if (a.grad) {
    CAPSIM_TRY_ASSIGN(grad_object, objects_.lookup(*a.grad));
  }
  return backward_of(a, root_object, grad_object, options_.compiled_autograd_capture);
}

Status WorldAutograd::backward_of(const Backward& a, std::uint64_t root_object,
                                  std::optional<std::uint64_t> grad_object, CaptureMode mode) {
  CAPSIM_CHECK(a.grad.has_value() == grad_object.has_value(), "a given grad names its object");
  std::vector<std::uint64_t> used{root_object};
  if (grad_object) used.push_back(*grad_object);
  if (world_.raise_if_poisoned(used)) return {};
  AutogradEngine& e = ensure().engine;
  CAPSIM_TRY_ASSIGN(const Variable root, e.adopt(objects_.at(root_object).tensor, false));
  AutogradEngine::BackwardOptions options;
  options.retain_graph = a.retain_graph;
  if (a.grad) {
    CAPSIM_TRY_ASSIGN(options.grad_output, e.adopt(objects_.at(used[1]).tensor, false));
  }
  const bool compiled = a.compiled && !options_.all_eager;
  CAPSIM_TRY_ASSIGN(const std::optional<BackwardRaise> raise,
                    backward_raise(e, root, options, compiled));
  if (raise) {
    ctx_.emit(EventKind::kError, {{F::id, decision_key(raise->id)},
                                  {F::exception, "RuntimeError"},
                                  {F::message, raise->message}});
    return {};
  }
  if (!lend_grads_to_engine()) return {};
  if (compiled) return compiled_autograd_backward(a, root, options.grad_output, mode);
  const Result<BackwardResult> r = e.autograd_backward(root, options);
  if (!r && r.error().message == kErrBackwardTwice) {
    // The engine reached a freed node: what ran before it stays done (its
    // AccumulateGrads wrote .grad, its nodes released their saved state).
    take_grads_from_engine();
    CAPSIM_TRY(drop_released_saved_tensors());
    ctx_.emit(EventKind::kError, {{F::id, decision_key(Decision::kErrorBackwardTwice)},
                                  {F::exception, "RuntimeError"},
                                  {F::message, kErrBackwardTwice}});
    return {};
  }
  if (!r) return r.error();
  take_grads_from_engine();
  CAPSIM_CHECK(e.owned().empty(), "a backward leaves the engine owning nothing");
  CAPSIM_TRY(drop_released_saved_tensors());
  ctx_.emit(EventKind::kBackward, {{F::name, a.tensor},
                                   {F::compiled, false},
                                   {F::node_calls, r->node_calls},
                                   {F::leaves, accumulate_grads_among(r->executed)}});
  return {};
}

}  // namespace capsim
