// The plain CUDA-graph API (torch.cuda.graph and make_graphed_callables;
// docs/cudagraph-trees.md §3.4), for comparison with trees: the first call
// captures the function over its own arguments (they become the static input
// surface); every later call copies an argument into its surface slot only
// when the pointers differ, never looks at parameters, and replays. The
// outputs are the same tensors every time, overwritten by each replay. Nothing
// is checked, so a parameter whose `.data` was reassigned is read at its old
// address.
#include <fmt/format.h>

#include <algorithm>

#include "sim/core/body_interpreter.hpp"
#include "sim/core/eager_oracle.hpp"
#include "sim/world/world_parts.hpp"

namespace capsim {

Result<std::vector<TensorId>> World::call_plain(const FunctionDef& def,
                                                const std::vector<std::uint64_t>& args) {
  std::vector<TensorId> inputs;
  for (std::uint64_t o : args) inputs.push_back(objects_.at(o).tensor);
  auto it = plain_graphs_.find(&def);
  if (it == plain_graphs_.end()) return capture_plain(def, args, inputs);
  return replay_plain(def, *it->second, inputs);
}

// The first call: run the body once into a StepProgram over the call's own
// arguments, which become the graph's static input surface (parameters are
// baked in as they are, the other arguments pinned as placeholders).
Result<std::vector<TensorId>> World::capture_plain(const FunctionDef& def,
                                                   const std::vector<std::uint64_t>& args,
                                                   const std::vector<TensorId>& inputs) {
  if (!plain_pool_) {
    CAPSIM_TRY_ASSIGN(plain_pool_, allocator_.create_pool());
    tree_pool_ = plain_pool_;  // pool_live_blocks() reports this pool
  }
  auto graph = std::make_unique<PlainGraph>();
  for (std::uint32_t i = 0; i < args.size(); ++i) {
    const bool param = objects_.at(args[i]).parameter ||
                       std::count(def.param_input_idxs.begin(), def.param_input_idxs.end(), i);
    graph->is_param.push_back(param);
    graph->surface.push_back(param ? std::nullopt : std::optional<TensorId>(inputs[i]));
    if (!param) refs_.pin(inputs[i]);
    graph->surface_args.push_back(held_tensor_arg(store_, inputs[i]));
  }
  StepProgram program{fmt::format("{}#plain", def.name), {}};
  BodyEnv env{refs_, backend_, *plain_pool_, &program};
  CAPSIM_TRY_ASSIGN(const std::vector<TensorId> outs, run_body(def, inputs, env));
  CAPSIM_TRY(backend_.materialize(memory_.layout()));
  CAPSIM_TRY_ASSIGN(graph->graph, backend_.instantiate(program));
  CAPSIM_TRY(backend_.replay(graph->graph));
  CAPSIM_TRY_ASSIGN(const std::optional<GraphEvidence> evidence,
                    ctx_.replay_evidence(graph->graph));
  for (TensorId t : outs) {
    refs_.pin(t);
    graph->outputs.push_back(t);
  }
  ++counters_.graphs_recorded;
  ctx_.emit(EventKind::kRecord,
            {{F::function, def.name}, {F::api, "plain"}, {F::steps, program.steps.size()}});
  ctx_.emit_device(evidence);
  plain_graphs_.emplace(&def, std::move(graph));
  // The capture's outputs are handed out as they are.
  return outs;
}

// A later call: copy each non-parameter argument whose pointer differs into
// its surface slot, replay, and hand out the same output tensors again.
Result<std::vector<TensorId>> World::replay_plain(const FunctionDef& def, PlainGraph& graph,
                                                  const std::vector<TensorId>& inputs) {
  std::optional<std::vector<ElementBits>> expected;
  if (options_.verify_replays) {
    CAPSIM_TRY_ASSIGN(expected, oracle_.outputs(def, store_, memory_, inputs));
  }
  CAPSIM_TRY(copy_into_plain_surface(def, graph, inputs));
  if (options_.verify_replays) {
    // P-static: a parameter the graph baked in must still be where it was.
    for (std::uint32_t i = 0; i < inputs.size(); ++i) {
      if (!graph.is_param[i]) continue;
      const TensorArg now = held_tensor_arg(store_, inputs[i]);
      if (now.address != graph.surface_args[i].address) ++counters_.static_violations;
    }
  }
  CAPSIM_TRY(backend_.replay(graph.graph));
  CAPSIM_TRY_ASSIGN(const std::optional<GraphEvidence> evidence, ctx_.replay_evidence(graph.graph));
  ++counters_.replays;
  if (expected) {
    ++counters_.replay_checks;
    bool equal = true;
    for (std::size_t k = 0; k < graph.outputs.size() && equal; ++k) {
      const TensorArg out = held_tensor_arg(store_, graph.outputs[k]);
      CAPSIM_TRY_ASSIGN(const ElementBits got, gather_bits(memory_, out.address, out.meta));
      equal = got == (*expected)[k];
    }
    if (!equal) counters_.note_replay_mismatch(ctx_.events.size());
  }
  ctx_.emit(EventKind::kReplay, {{F::function, def.name}, {F::api, "plain"}});
  ctx_.emit_device(evidence);
  for (TensorId t : graph.outputs) refs_.hold(t);
  return graph.outputs;
}

// The copy-in of make_graphed_callables: parameters are assumed unchanged,
// and an argument already at its slot's address is not copied.
Status World::copy_into_plain_surface(const FunctionDef& def, const PlainGraph& graph,
                                      const std::vector<TensorId>& inputs) {
  std::uint64_t copies = 0, bytes = 0;
  for (std::uint32_t i = 0; i < inputs.size(); ++i) {
    if (graph.is_param[i]) continue;
    const TensorArg src = held_tensor_arg(store_, inputs[i]);
    const TensorArg& dst = graph.surface_args[i];
    if (src.address == dst.address) continue;
    CAPSIM_TRY_ASSIGN(const KernelLaunch copy, launch_copy(dst, src));
    CAPSIM_TRY(backend_.run_step(Step{copy, {}}));
    ++copies;
    bytes += extent_bytes(dst.meta);
  }
  counters_.copies += copies;
  counters_.copy_bytes += bytes;
  ctx_.emit(EventKind::kCopyIn, {{F::function, def.name}, {F::copies, copies}, {F::bytes, bytes}});
  return {};
}

}  // namespace capsim
