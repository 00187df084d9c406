// Graph partitions and compile-time skips (partitions.hpp).
#include "sim/world/partitions.hpp"

#include "sim/core/decisions.hpp"
#include "sim/world/dynamo.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/check.hpp"
#include "sim/core/messages.hpp"

namespace capsim {

namespace {

// From 2.10, graph_partition replaces the unsafe-op and dynamic-shape skips
// by cuts (compile_fx.py: "partitioning handles ...").
bool partition_bypasses_skips(const CudagraphConfig& config) {
  return graph_partition(config) &&
         profile_rules(config.torch_profile).partition_bypasses_graph_skips;
}

// The pieces [begin, end) of `num_ops` ops: the gaps between cuts are
// partitions, the cuts eager code; adjacent eager pieces merge.
std::vector<Segment> cut_pieces(const std::vector<PartitionCut>& cuts, std::uint32_t num_ops) {
  std::vector<Segment> pieces;
  const auto add = [&](std::uint32_t b, std::uint32_t e, bool graphed) {
    if (b >= e) return;
    if (!graphed && !pieces.empty() && !pieces.back().cudagraphed) {
      pieces.back().end = e;
      return;
    }
    Segment s;
    s.begin = b;
    s.end = e;
    s.cudagraphed = graphed;
    pieces.push_back(std::move(s));
  };
  std::uint32_t at = 0;
  for (const PartitionCut& c : cuts) {
    add(at, c.begin, true);
    add(c.begin, c.end, false);
    at = c.end;
  }
  add(at, num_ops, true);
  return pieces;
}

// cudagraph_min_partition_size: a partition with fewer kernels runs eagerly,
// and joins the eager code around it.
void apply_min_partition_size(const FunctionDef& def, const CudagraphConfig& config,
                              std::vector<Segment>& pieces) {
  const std::int64_t min = min_partition_size(config);
  if (min <= 0) return;
  std::vector<Segment> merged;
  for (Segment& s : pieces) {
    if (s.cudagraphed && static_cast<std::int64_t>(kernel_ops(def, s.begin, s.end)) < min) {
      s.cudagraphed = false;
    }
    if (!s.cudagraphed && !merged.empty() && !merged.back().cudagraphed) {
      merged.back().end = s.end;
      continue;
    }
    merged.push_back(std::move(s));
  }
  pieces = std::move(merged);
}

// Whether op `k`'s result is its argument 0's storage: a view, or an
// in-place op (which returns the tensor it wrote).
bool aliases_arg0(const FunctionDef& def, std::uint32_t k) {
  return body_op_is_view(def.ops[k].kind) || body_op_in_place(def.ops[k].kind);
}

// The value whose buffer `v` is: Inductor never makes a view a buffer of its
// own (a ReinterpretView is named after its base), and an in-place op's
// result is the buffer it mutated (a MutationOutput), so a partition's
// signature names that buffer (Scheduler.get_graph_partition_signature) and
// a view is made again inside it (reinterpret_tensor). A view of a static
// input, or the result of an in-place op on it, made in eager code between
// partitions thus reaches the next partition as the static input itself,
// not as a non-static input that a replay would copy.
ValueIndex buffer_root(const FunctionDef& def, ValueIndex v) {
  const auto n = static_cast<ValueIndex>(def.num_inputs());
  while (v >= n && aliases_arg0(def, v - n)) v = def.ops[v - n].args.at(0);
  return v;
}

// The piece's inputs (graph values from outside it, views and in-place
// results replaced by their buffers, in value order) and outputs (its values
// that later ops, by their bases, or the graph's outputs use). Returns the
// views and in-place results from outside that the piece reads.
std::vector<ValueIndex> find_piece_boundary(const FunctionDef& def, Segment& s) {
  const auto n = static_cast<ValueIndex>(def.num_inputs());
  const ValueIndex first = n + s.begin;
  const ValueIndex past = n + s.end;
  std::vector<bool> used_from_outside(n + def.ops.size(), false);
  std::vector<ValueIndex> outside_aliases;
  for (std::uint32_t k = s.begin; k < s.end; ++k) {
    for (ValueIndex v : def.ops[k].args) {
      if (v >= first) continue;
      const ValueIndex base = buffer_root(def, v);
      used_from_outside[base] = true;
      if (base != v) outside_aliases.push_back(v);
    }
  }
  for (ValueIndex v = 0; v < first; ++v) {
    if (used_from_outside[v]) s.inputs.push_back(v);
  }
  std::vector<bool> used_later(n + def.ops.size(), false);
  for (std::size_t k = s.end; k < def.ops.size(); ++k) {
    for (ValueIndex v : def.ops[k].args) used_later[buffer_root(def, v)] = true;
  }
  for (ValueIndex v : def.outputs) used_later[v] = true;
  for (ValueIndex v = first; v < past; ++v) {
    if (used_later[v]) s.outputs.push_back(v);
  }
  return outside_aliases;
}

// The body's inputs: their names, static and parameter indices, and their
// places in `local` (graph value -> body value).
void add_piece_inputs(const FunctionDef& def, Segment& s, std::vector<ValueIndex>& local) {
  const auto n = static_cast<ValueIndex>(def.num_inputs());
  FunctionDef& body = s.def;
  for (std::uint32_t i = 0; i < s.inputs.size(); ++i) {
    const ValueIndex v = s.inputs[i];
    local[v] = i;
    // get_partition_cudagraph_metadata's name for an input that is not the graph's.
    body.input_names.push_back(v < n ? def.input_names[v]
                                     : fmt::format("partition_{}_placeholder_{}", s.partition, i));
    const auto in = [&](const std::vector<std::uint32_t>& set) {
      return v < n && std::find(set.begin(), set.end(), v) != set.end();
    };
    if (in(def.static_input_idxs)) body.static_input_idxs.push_back(i);
    if (in(def.param_input_idxs)) body.param_input_idxs.push_back(i);
  }
}

// The outside views this piece reads, made again from its inputs: each
// view op of a chain once, bases first (value order is SSA order); an
// in-place result in a chain is its argument's buffer.
void remake_outside_views(const FunctionDef& def, Segment& s,
                          std::vector<ValueIndex> outside_aliases, std::vector<ValueIndex>& local) {
  const auto n = static_cast<ValueIndex>(def.num_inputs());
  FunctionDef& body = s.def;
  std::vector<bool> made(n + def.ops.size(), false);
  for (ValueIndex v : s.inputs) made[v] = true;
  std::sort(outside_aliases.begin(), outside_aliases.end());
  std::vector<ValueIndex> chain;
  for (ValueIndex v : outside_aliases) {
    for (ValueIndex c = v; !made[c]; c = def.ops[c - n].args.at(0)) chain.push_back(c);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      made[*it] = true;
      // An in-place op already ran where it stands: its result is its
      // argument's buffer, never run again here.
      if (body_op_in_place(def.ops[*it - n].kind)) {
        local[*it] = local[def.ops[*it - n].args.at(0)];
        continue;
      }
      local[*it] = static_cast<ValueIndex>(s.inputs.size() + body.ops.size());
      BodyOp op = def.ops[*it - n];
      for (ValueIndex& a : op.args) a = local[a];
      body.ops.push_back(std::move(op));
    }
    chain.clear();
  }
}

// The piece's own body: its inputs, the views it reads made again, its ops
// and its outputs.
void build_piece_body(const FunctionDef& def, Segment& s, std::uint32_t eager_index) {
  const auto n = static_cast<ValueIndex>(def.num_inputs());
  std::vector<ValueIndex> outside_aliases = find_piece_boundary(def, s);
  FunctionDef& body = s.def;
  body.name = s.cudagraphed ? fmt::format("{}.partition_{}", def.name, s.partition)
                            : fmt::format("{}.eager_{}", def.name, eager_index);
  body.mode = def.mode;
  std::vector<ValueIndex> local(n + def.ops.size(), 0);
  add_piece_inputs(def, s, local);
  remake_outside_views(def, s, std::move(outside_aliases), local);
  const auto m = static_cast<ValueIndex>(s.inputs.size() + body.ops.size());
  for (std::uint32_t k = s.begin; k < s.end; ++k) {
    local[n + k] = m + (k - s.begin);
    BodyOp op = def.ops[k];
    for (ValueIndex& a : op.args) a = local[a];
    body.ops.push_back(std::move(op));
  }
  // A piece input that is a graph input keeps its mutating use's trace.
  if (!def.mutating_use_stack_traces.empty()) {
    for (ValueIndex v : s.inputs) {
      body.mutating_use_stack_traces.push_back(v < n ? def.mutating_use_stack_traces[v]
                                                     : std::nullopt);
    }
  }
  // get_partition_cudagraph_metadata: a partition output is user-visible
  // when a graph output it is, is.
  body.user_visible_outputs.emplace();
  for (std::uint32_t j = 0; j < s.outputs.size(); ++j) {
    body.outputs.push_back(local[s.outputs[j]]);
    for (std::uint32_t o = 0; o < def.outputs.size(); ++o) {
      if (def.outputs[o] == s.outputs[j] && user_visible_output(def, o)) {
        body.user_visible_outputs->push_back(j);
        break;
      }
    }
  }
  CAPSIM_CHECK(validate(body).ok(), "a piece of a valid body is valid");
}

}  // namespace

std::string fx_node_name(const FunctionDef& def, std::uint32_t k) {
  CAPSIM_CHECK(k < def.ops.size(), "an FX node name of an op of the body");
  std::size_t before = 0;
  for (std::uint32_t j = 0; j < k; ++j) before += def.ops[j].kind == def.ops[k].kind ? 1 : 0;
  const std::string_view name = body_op_name(def.ops[k].kind);
  return before == 0 ? std::string(name) : fmt::format("{}_{}", name, before);
}

std::size_t kernel_ops(const FunctionDef& def, std::uint32_t begin, std::uint32_t end) {
  std::size_t count = 0;
  for (std::uint32_t k = begin; k < end && k < def.ops.size(); ++k) {
    count += body_op_is_view(def.ops[k].kind) ? 0 : 1;
  }
  return count;
}

std::optional<GraphSkip> lowering_skip(const FunctionDef& def, const CudagraphConfig& config,
                                       bool dynamic, Fault fault) {
  const bool bypass = partition_bypasses_skips(config);
  const bool s5 = fault != Fault::kIgnoreSkipS5;
  if (s5 && config.cudagraph_skip_dynamic_graphs && dynamic && !bypass) {
    return GraphSkip{Decision::kSkipDynamicShapes, messages::symbolic_shapes()};
  }
  if (s5 && !bypass) {
    for (const PartitionCut& c : def.partition_cuts) {
      if (c.reason != PartitionCutReason::kCudagraphUnsafe) continue;
      return GraphSkip{Decision::kSkipDynamicShapes,
                       messages::incompatible_op(std::string(body_op_name(def.ops[c.begin].kind)))};
    }
  }
  if (!config.caching_allocator_enabled &&
      profile_rules(config.torch_profile).caching_allocator_skip && fault != Fault::kIgnoreSkipS6) {
    return GraphSkip{Decision::kSkipUncachedAllocator, messages::uncached_allocator()};
  }
  if (!graph_partition(config) && fault != Fault::kIgnoreSkipS2) {
    for (const PartitionCut& c : def.partition_cuts) {
      if (c.reason != PartitionCutReason::kCpu) continue;
      return GraphSkip{Decision::kSkipCpuOp, messages::cpu_device(fx_node_name(def, c.begin))};
    }
  }
  if (def.cuda_devices.size() > 1 && fault != Fault::kIgnoreSkipS3)
    return GraphSkip{Decision::kSkipMultipleDevices, messages::multiple_devices(def.cuda_devices)};
  return std::nullopt;
}

std::optional<GraphSkip> storage_mutation_skip(const FunctionDef& def,
                                               const CudagraphConfig& config, Fault fault) {
  if (def.input_storage_mutations.empty() || fault == Fault::kIgnoreSkipS7) return std::nullopt;
  // World::begin refuses the declaration under a profile without the skip.
  CAPSIM_CHECK(profile_rules(config.torch_profile).input_storage_mutation_skip);
  return GraphSkip{Decision::kSkipInputStorageReplaced,
                   messages::input_storage_mutation(def.input_storage_mutations.size())};
}

// CompiledFxGraph.__init__'s cudagraph_tests after the mutation test, in its
// order: "complex memory overlap" (up to 2.12: an example input whose
// elements share memory), then "non-Tensor inputs".
std::optional<GraphSkip> fail_reasons_skip(const FunctionDef& def, std::span<const DynamoArg> args,
                                           const CudagraphConfig& config, Fault fault) {
  const TorchProfileRules& rules = profile_rules(config.torch_profile);
  std::vector<std::string_view> reasons;
  if (rules.complex_memory_overlap_test && fault != Fault::kIgnoreSkipS4 &&
      std::any_of(args.begin(), args.end(),
                  [](const DynamoArg& a) { return a.complex_memory_overlap; })) {
    reasons.emplace_back("complex memory overlap");
  }
  const bool all_allowed = std::all_of(
      def.non_tensor_inputs.begin(), def.non_tensor_inputs.end(), [&](NonTensorInput k) {
        return k == NonTensorInput::kGenerator ||
               (k == NonTensorInput::kOpaque && rules.opaque_inputs_allowed);
      });
  if (!all_allowed && fault != Fault::kIgnoreSkipS4) reasons.emplace_back("non-Tensor inputs");
  if (reasons.empty()) return std::nullopt;
  return GraphSkip{Decision::kSkipFailedCompileTest, messages::fail_reasons(reasons),
                   !graph_partition(config)};
}

std::vector<PartitionCut> applied_cuts(const FunctionDef& def, const CudagraphConfig& config,
                                       bool dynamic) {
  std::vector<PartitionCut> out;
  const bool dynamic_cuts = dynamic && config.cudagraph_skip_dynamic_graphs &&
                            profile_rules(config.torch_profile).partition_bypasses_graph_skips;
  for (const PartitionCut& c : def.partition_cuts) {
    if (c.reason == PartitionCutReason::kDynamicShape && !dynamic_cuts) continue;
    out.push_back(c);
  }
  return out;
}

std::optional<std::vector<Segment>> partition_function(const FunctionDef& def,
                                                       const CudagraphConfig& config,
                                                       bool dynamic) {
  if (!graph_partition(config)) return std::nullopt;
  const std::vector<PartitionCut> cuts = applied_cuts(def, config, dynamic);
  if (cuts.empty()) return std::nullopt;
  std::vector<Segment> pieces = cut_pieces(cuts, static_cast<std::uint32_t>(def.ops.size()));
  apply_min_partition_size(def, config, pieces);
  std::uint32_t partitions = 0, eager = 0;
  for (Segment& s : pieces) {
    if (s.cudagraphed) s.partition = partitions;
    build_piece_body(def, s, eager);
    (s.cudagraphed ? partitions : eager) += 1;
  }
  return pieces;
}

}  // namespace capsim
