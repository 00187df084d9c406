// WorldAutograd: a backward through compiled autograd, on the World's own graph
// (program.hpp's Backward with `compiled`; world_autograd.cpp has the rest).
//
// As torch/csrc/dynamo/python_compiled_autograd.cpp's compiled_autograd():
// Phase A and the cache (capture_one_backward), on a miss the functional
// capture, then the call of the compiled graph with the lifted inputs, and
// release_variables() on every node when the graph is not retained. The
// compiled graph is what Inductor compiles with mode="reduce-overhead": here
// the capture lowered to a BACKWARD function that the tree manager warms up,
// records and replays. Its inputs are the saved tensors, the params and the
// root grad; the params are its static inputs.
#include <fmt/format.h>

#include <algorithm>

#include "sim/compiled_autograd/compiled_backward.hpp"
#include "sim/compiled_autograd/function_lowering.hpp"
#include "sim/compiled_autograd/runner.hpp"
#include "sim/world/world_autograd_state.hpp"

namespace capsim {

namespace {

// The engine's nodes a backward runs, in its order (its GraphRoot is the
// graph's own, not the engine's).
std::vector<AutogradNodeId> engine_nodes_run(const AutogradEngine::BackwardGraph& bg,
                                             const CollectedBackward& collected) {
  std::vector<AutogradNodeId> ran;
  for (const NodeCall& c : collected.ordered_calls) {
    if (c.node != bg.root) ran.push_back(bg.engine_id(c.node));
  }
  return ran;
}

}  // namespace

Status WorldAutograd::compiled_autograd_backward(const Backward& a, const Variable& root,
                                                 const std::optional<Variable>& grad,
                                                 CaptureMode mode) {
  State& ag = *state_;
  AutogradEngine& e = ag.engine;
  CAPSIM_TRY_ASSIGN(const AutogradEngine::BackwardGraph bg, e.backward_graph(root));
  CaptureRunLog log;
  log.backwards = ag.backwards;
  CAPSIM_TRY_ASSIGN(BackwardCapture b,
                    capture_one_backward(bg.graph, bg.root, store_,
                                         mode == CaptureMode::kLegacy ? ag.legacy_cache : ag.cache,
                                         mode, a.dynamic, log));
  ag.backwards = log.backwards;
  for (Event& ev : log.events) ctx_.emit(ev.kind, std::move(ev.fields));
  ctx_.counters.ca_captures += log.captures;
  ctx_.counters.ca_metadata_reads += log.metadata_reads;
  if (mode == CaptureMode::kLegacy) {
    // The legacy capture's graph is a model of what it read, not a program:
    // it is shown, never cached for a lowering, and the grads come from the
    // eager engine.
    if (options_.on_backward) {
      options_.on_backward(ctx_.action, BackwardView{b.backward, mode, &bg.graph, &store_,
                                                     b.captured ? &*b.captured : nullptr});
    }
    AutogradEngine::BackwardOptions options;
    options.grad_output = grad;
    options.retain_graph = a.retain_graph;
    CAPSIM_TRY(e.autograd_backward(root, options));
    take_grads_from_engine();
    return drop_released_saved_tensors();
  }
  // compiled_fn(inputs, sizes, ...): the root grad is ones unless given.
  std::optional<TensorId> ones;
  if (!grad) {
    CAPSIM_TRY_ASSIGN(const Tensor out, store_.tensor(root.tensor));
    CAPSIM_TRY_ASSIGN(ones, world_.fresh_tensor(out.meta.sizes, 1.0f, 0));
  }
  const TensorId root_grad = grad ? grad->tensor : *ones;
  const CompiledBackwardCall call = make_call(bg, b.collected, std::span(&root_grad, 1));
  const std::vector<AutogradNodeId> ran = engine_nodes_run(bg, b.collected);
  const std::uint64_t entry = b.decision.entry;
  if (b.captured) replace_capture(entry, std::move(*b.captured));
  if (options_.on_backward) {
    options_.on_backward(ctx_.action,
                         BackwardView{b.backward, CaptureMode::kFunctional, &bg.graph, &store_,
                                      b.decision.hit ? nullptr : &ag.entries.at(entry).captured});
  }
  CAPSIM_TRY_ASSIGN(const LoweredBackward* function, lowered_function(entry, call));
  CAPSIM_TRY_ASSIGN(const std::size_t leaves, function != nullptr
                                                  ? call_lowered_backward(*function, call)
                                                  : interpret_backward(bg.graph, ran, entry, call));
  if (ones) CAPSIM_TRY(ctx_.refs.drop(*ones));
  for (const auto& [leaf, object] : ag.leaf_objects) e.set_grad(leaf, std::nullopt);
  if (!a.retain_graph) {
    // release_variables() on every node the backward ran.
    e.release_saved_state(ran);
    CAPSIM_TRY(drop_released_saved_tensors());
  }
  CAPSIM_CHECK(e.owned().empty(), "a backward leaves the engine owning nothing");
  std::vector<EventField> fields{{F::name, a.tensor},
                                 {F::compiled, true},
                                 {F::node_calls, b.collected.ordered_calls.size()},
                                 {F::leaves, leaves},
                                 {F::backward, b.backward}};
  if (function != nullptr) fields.push_back({F::function, ag.entries.at(entry).name});
  ctx_.emit(EventKind::kBackward, std::move(fields));
  return {};
}

// A capture that does not lower: the FX interpreter on the engine, with the
// same formulas and no tree function. Returns the AccumulateGrads it ran.
Result<std::size_t> WorldAutograd::interpret_backward(const AutogradGraph& graph,
                                                      std::span<const AutogradNodeId> ran,
                                                      std::uint64_t entry,
                                                      const CompiledBackwardCall& call) {
  AutogradEngine& e = state_->engine;
  ++ctx_.counters.eager_fallbacks;
  ctx_.emit(EventKind::kEager, {{F::function, "CompiledAutograd"},
                                {F::reason, decision_key(Decision::kEagerNotLowerable)}});
  CAPSIM_TRY(run_compiled_backward(e, graph, state_->entries.at(entry).captured, call));
  take_grads_from_engine();
  return static_cast<std::size_t>(accumulate_grads_among(ran));
}

// A new capture for `entry`, named CompiledAutograd0, 1, ... in capture
// order. The functions lowered from the capture it replaces are retired: a
// live tree manager may still name them.
void WorldAutograd::replace_capture(std::uint64_t entry, FxGraph captured) {
  State& ag = *state_;
  const auto old = ag.entries.find(entry);
  if (old != ag.entries.end()) {
    for (auto& [sizes, f] : old->second.functions) retired_defs_.push_back(std::move(f.def));
  }
  State::Entry fresh;
  fresh.captured = std::move(captured);
  fresh.name = fmt::format("CompiledAutograd{}", ag.cache.captures() - 1);
  ag.entries.insert_or_assign(entry, std::move(fresh));
}

// The entry's function for this call's sizes, lowered on first use; null
// when the capture does not lower (the reason stays in `why_not`).
Result<const WorldAutograd::LoweredBackward*> WorldAutograd::lowered_function(
    std::uint64_t entry, const CompiledBackwardCall& call) {
  State& ag = *state_;
  State::Entry& e = ag.entries.at(entry);
  if (!e.why_not.empty()) return nullptr;
  if (const auto it = e.functions.find(call.sizes); it != e.functions.end()) return &it->second;
  CAPSIM_TRY_ASSIGN(FunctionInputs in, function_inputs(ag.engine, store_, call));
  LowerOptions options;
  options.sizes = call.sizes;
  options.mode = CompilationMode::kInference;
  Result<CompiledBackwardFunction> f = to_function_def(
      e.captured, e.name, in.sizes, std::move(in.names), std::move(in.params), options);
  if (!f) {
    e.why_not = f.error().message;
    return nullptr;
  }
  LoweredBackward& out = e.functions[call.sizes];
  out.def = std::make_unique<FunctionDef>(std::move(f->def));
  out.grad_of = std::move(f->grad_of);
  return &out;
}

// compiled_fn(inputs, sizes) through the tree manager, then AccumulateGrad
// of each grad output into its param. The call's inputs are the params'
// own objects (so Dynamo sees them as the program made them) and, for the
// saved tensors and the root grad, objects made for the call alone.
Result<std::size_t> WorldAutograd::call_lowered_backward(const LoweredBackward& compiled,
                                                         const CompiledBackwardCall& call) {
  State& ag = *state_;
  std::vector<std::uint64_t> args;
  std::vector<std::uint64_t> temporaries;
  for (TensorId t : call.inputs) {
    const auto leaf = ag.leaf_objects.find(t);
    if (leaf != ag.leaf_objects.end() && objects_.contains(leaf->second)) {
      args.push_back(leaf->second);
      continue;
    }
    ctx_.refs.hold(t);
    const std::uint64_t o = objects_.new_object(t);
    objects_.ref(o);
    temporaries.push_back(o);
    args.push_back(o);
  }
  // compiled_fn is a torch.compile'd callable: entering it starts a new
  // invocation (OptimizeContext's on_enter bumps GenerationTracker.generation).
  auto outs = calls_.run_compiled(*compiled.def, args, call.sizes, /*new_invocation=*/true, {});
  for (std::uint64_t o : temporaries) CAPSIM_TRY(objects_.unref(o));
  if (!outs) return outs.error();
  if (!*outs) return std::size_t{0};  // it raised; the error event is out
  const std::vector<TensorId>& grads = **outs;
  CAPSIM_CHECK(grads.size() == compiled.grad_of.size(), "one grad output per param");
  for (std::size_t k = 0; k < grads.size(); ++k) {
    const std::uint64_t g = objects_.new_object(grads[k]);
    objects_.ref(g);
    CAPSIM_TRY(accumulate_into(args.at(compiled.grad_of[k]), g));
    CAPSIM_TRY(objects_.unref(g));
  }
  return grads.size();
}

}  // namespace capsim
