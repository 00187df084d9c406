#include "sim/world/plain_graphs.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/core/body_interpreter.hpp"
#include "sim/core/eager_oracle.hpp"

namespace capsim {

// One capture (docs/cudagraph-trees.md §3.4).
struct PlainGraphs::PlainGraph {
  // The static input surface: the sample args, pinned; params are not pinned
  // (the graph holds the Parameter object, whose storage may change).
  std::vector<std::optional<TensorId>> surface;
  std::vector<TensorArg> surface_args;  // as captured
  std::vector<bool> is_param;
  GraphHandle graph;
  std::vector<TensorId> outputs;  // static outputs, pinned, overwritten by every replay
};

PlainGraphs::PlainGraphs(WorldContext& world)
    : ctx_(world.sim),
      objects_(world.objects),
      store_(world.store),
      oracle_(world.oracle),
      verify_replays_(world.options.verify_replays) {}

PlainGraphs::~PlainGraphs() = default;

Result<std::vector<TensorId>> PlainGraphs::call(const FunctionDef& def,
                                                const std::vector<std::uint64_t>& args) {
  std::vector<TensorId> inputs;
  for (std::uint64_t o : args) inputs.push_back(objects_.at(o).tensor);
  auto it = graphs_.find(&def);
  if (it == graphs_.end()) return capture(def, args, inputs);
  return replay(def, *it->second, inputs);
}

// The first call: run the body once into a StepProgram over the call's own
// arguments, which become the graph's static input surface (parameters are
// baked in as they are, the other arguments pinned as placeholders).
Result<std::vector<TensorId>> PlainGraphs::capture(const FunctionDef& def,
                                                   const std::vector<std::uint64_t>& args,
                                                   const std::vector<TensorId>& inputs) {
  if (!pool_) {
    CAPSIM_TRY_ASSIGN(pool_, ctx_.allocator.create_pool());
  }
  auto graph = std::make_unique<PlainGraph>();
  for (std::uint32_t i = 0; i < args.size(); ++i) {
    const bool param = objects_.at(args[i]).parameter ||
                       std::count(def.param_input_idxs.begin(), def.param_input_idxs.end(), i);
    graph->is_param.push_back(param);
    graph->surface.push_back(param ? std::nullopt : std::optional<TensorId>(inputs[i]));
    if (!param) ctx_.refs.pin(inputs[i]);
    graph->surface_args.push_back(held_tensor_arg(store_, inputs[i]));
  }
  StepProgram program{fmt::format("{}#plain", def.name), {}};
  BodyEnv env{ctx_.refs, ctx_.backend, *pool_, &program};
  CAPSIM_TRY_ASSIGN(const std::vector<TensorId> outs, run_body(def, inputs, env));
  CAPSIM_TRY(ctx_.backend.materialize(ctx_.memory.layout()));
  CAPSIM_TRY_ASSIGN(graph->graph, ctx_.backend.instantiate(program));
  CAPSIM_TRY(ctx_.backend.replay(graph->graph));
  CAPSIM_TRY_ASSIGN(const std::optional<GraphEvidence> evidence,
                    ctx_.replay_evidence(graph->graph));
  for (TensorId t : outs) {
    ctx_.refs.pin(t);
    graph->outputs.push_back(t);
  }
  ++ctx_.counters.graphs_recorded;
  ctx_.emit(EventKind::kRecord,
            {{F::function, def.name}, {F::api, "plain"}, {F::steps, program.steps.size()}});
  ctx_.emit_device(evidence);
  graphs_.emplace(&def, std::move(graph));
  // The capture's outputs are handed out as they are.
  return outs;
}

// A later call: copy each non-parameter argument whose pointer differs into
// its surface slot, replay, and hand out the same output tensors again.
Result<std::vector<TensorId>> PlainGraphs::replay(const FunctionDef& def, PlainGraph& graph,
                                                  const std::vector<TensorId>& inputs) {
  std::optional<std::vector<ElementBits>> expected;
  if (verify_replays_) {
    CAPSIM_TRY_ASSIGN(expected, oracle_.outputs(def, store_, ctx_.memory, inputs));
  }
  CAPSIM_TRY(copy_into_surface(def, graph, inputs));
  if (verify_replays_) {
    // P-static: a parameter the graph baked in must still be where it was.
    for (std::uint32_t i = 0; i < inputs.size(); ++i) {
      if (!graph.is_param[i]) continue;
      const TensorArg now = held_tensor_arg(store_, inputs[i]);
      if (now.address != graph.surface_args[i].address) ++ctx_.counters.static_violations;
    }
  }
  CAPSIM_TRY(ctx_.backend.replay(graph.graph));
  CAPSIM_TRY_ASSIGN(const std::optional<GraphEvidence> evidence, ctx_.replay_evidence(graph.graph));
  ++ctx_.counters.replays;
  if (expected) {
    ++ctx_.counters.replay_checks;
    bool equal = true;
    for (std::size_t k = 0; k < graph.outputs.size() && equal; ++k) {
      const TensorArg out = held_tensor_arg(store_, graph.outputs[k]);
      CAPSIM_TRY_ASSIGN(const ElementBits got, gather_bits(ctx_.memory, out.address, out.meta));
      equal = got == (*expected)[k];
    }
    if (!equal) ctx_.counters.note_replay_mismatch(ctx_.events.size());
  }
  ctx_.emit(EventKind::kReplay, {{F::function, def.name}, {F::api, "plain"}});
  ctx_.emit_device(evidence);
  for (TensorId t : graph.outputs) ctx_.refs.hold(t);
  return graph.outputs;
}

// The copy-in of make_graphed_callables: parameters are assumed unchanged,
// and an argument already at its slot's address is not copied.
Status PlainGraphs::copy_into_surface(const FunctionDef& def, const PlainGraph& graph,
                                      const std::vector<TensorId>& inputs) {
  std::uint64_t copies = 0, bytes = 0;
  for (std::uint32_t i = 0; i < inputs.size(); ++i) {
    if (graph.is_param[i]) continue;
    const TensorArg src = held_tensor_arg(store_, inputs[i]);
    const TensorArg& dst = graph.surface_args[i];
    if (src.address == dst.address) continue;
    CAPSIM_TRY_ASSIGN(const KernelLaunch copy, launch_copy(dst, src));
    CAPSIM_TRY(ctx_.backend.run_step(Step{copy, {}}));
    ++copies;
    bytes += extent_bytes(dst.meta);
  }
  ctx_.counters.copies += copies;
  ctx_.counters.copy_bytes += bytes;
  ctx_.emit(EventKind::kCopyIn, {{F::function, def.name}, {F::copies, copies}, {F::bytes, bytes}});
  return {};
}

}  // namespace capsim
