// WorldAutograd: the compiled-autograd actions. run_capture_scenario runs a scenario
// found through WorldOptions::autograd_scenarios (the built-in ones are
// content, sim/scenarios/, which this wing never includes) as a thin adapter:
// each of its forwards builds its graph on the World's own engine, memory and
// default pool, and its backward is a compiled `backward` action over that
// graph (world_compiled_autograd.cpp), so a capture that lowers is warmed
// up, recorded and replayed by the tree manager like every compiled function.
// autograd_graph and compiled_backward work on graphs a recorder of real
// PyTorch walked (sim/compiled_autograd/imported_autograd.hpp); those touch none of
// the World's memory, pools, tensors or trees.
#include <fmt/format.h>

#include "sim/compiled_autograd/imported_autograd.hpp"
#include "sim/compiled_autograd/runner.hpp"
#include "sim/world/release_forms.hpp"
#include "sim/world/world_autograd_state.hpp"

namespace capsim {

Status WorldAutograd::run_capture_scenario(const RunCaptureScenario& a) {
  const AutogradScenario* scenario =
      options_.autograd_scenarios ? options_.autograd_scenarios(a.name) : nullptr;
  if (scenario == nullptr) {
    return make_error(
        fmt::format("capture scenario '{}': unknown (see capsim capture --list)", a.name));
  }
  for (int i = 0; i < scenario->backwards; ++i) {
    CAPSIM_TRY_ASSIGN(const bool ran, scenario_backward(*scenario, i, a.mode));
    if (!ran) break;
  }
  return {};
}

// The forward builds on the engine; what it made becomes the World's: its
// leaves get objects (whose .grad AccumulateGrad fills), the loss an object,
// the graph holds its saved tensors, everything else dies with the forward.
// Then `loss.backward()` through compiled autograd and, in functional mode,
// the grads against an eager backward of the same forward (a ca_run event).
Result<bool> WorldAutograd::scenario_backward(const AutogradScenario& s, int i, CaptureMode mode) {
  State& ag = ensure();
  AutogradEngine& e = ag.engine;
  CAPSIM_CHECK(e.owned().empty(), "the engine owns nothing between actions");
  const std::size_t first_node = e.num_nodes();
  const Result<Variable> loss = s.forward(e, i);
  const std::vector<TensorId> made = take_engine_made();
  std::vector<std::uint64_t> leaves;
  for (TensorId t : made) {
    const Result<Variable> v = e.variable(t);
    if (!loss || !v || !v->requires_grad || v->grad_fn) continue;
    ctx_.refs.hold(t);
    leaves.push_back(objects_.new_object(t));
    objects_.ref(leaves.back());
    ag.leaf_objects.emplace(t, leaves.back());
  }
  std::optional<std::uint64_t> root;
  if (loss) {
    hold_saved_tensors(first_node);
    ctx_.refs.hold(loss->tensor);
    root = objects_.new_object(loss->tensor);
    objects_.ref(*root);
  }
  for (TensorId t : made) CAPSIM_TRY(ctx_.refs.drop(t));
  if (!loss) return loss.error();
  Backward b;
  b.tensor = "loss";
  b.compiled = true;
  b.dynamic = s.dynamic;
  CAPSIM_TRY(backward_of(b, *root, std::nullopt, mode));
  const bool ran = !ctx_.events.empty() && ctx_.events.back().kind == EventKind::kBackward;
  if (ran && mode == CaptureMode::kFunctional) CAPSIM_TRY(check_scenario_grads(s, i, leaves));
  for (std::uint64_t o : leaves) {
    ag.leaf_objects.erase(objects_.at(o).tensor);
    CAPSIM_TRY(objects_.unref(o));
  }
  CAPSIM_TRY(objects_.unref(*root));
  return ran || mode == CaptureMode::kLegacy;
}

// The ca_run of a scenario's backward `i`: its leaves' grads, bitwise against
// the eager engine's on a device of its own (a mismatch is counted).
Status WorldAutograd::check_scenario_grads(const AutogradScenario& s, int i,
                                           const std::vector<std::uint64_t>& leaves) {
  LeafGrads got;
  for (std::uint64_t o : leaves) {
    const std::optional<std::uint64_t> grad = objects_.at(o).grad;
    if (!grad) continue;
    CAPSIM_TRY_ASSIGN(std::vector<float> g, state_->engine.read(objects_.at(*grad).tensor));
    got.push_back(std::move(g));
  }
  CAPSIM_TRY_ASSIGN(const LeafGrads want, s.eager_grads(i));
  if (!bitwise_equal(got, want)) ++ctx_.counters.ca_mismatches;
  ctx_.emit(
      EventKind::kCaRun,
      {{F::backward, state_->backwards - 1}, {F::leaves, got.size()}, {F::digest, digest_of(got)}});
  return {};
}

Status WorldAutograd::define_autograd_graph(const DefineAutogradGraph& a) {
  if (!recorded_) {
    recorded_ = std::make_unique<ImportedAutograd>(ca_graph_form_of(options_.config.torch_profile));
  }
  return recorded_->define(a);
}

Status WorldAutograd::compiled_backward(const CompiledBackward& a) {
  if (!recorded_) {
    return make_error(
        fmt::format("autograd graph '{}': no autograd_graph action defined it", a.graph));
  }
  const std::uint64_t before = recorded_->captures();
  std::function<void(const BackwardView&)> observer;
  if (options_.on_backward) {
    observer = [this](const BackwardView& view) { options_.on_backward(ctx_.action, view); };
  }
  CAPSIM_TRY_ASSIGN(std::vector<Event> events, recorded_->compiled_backward(a, observer));
  for (Event& e : events) ctx_.emit(e.kind, std::move(e.fields));
  ctx_.counters.ca_captures += recorded_->captures() - before;
  return {};
}

}  // namespace capsim
