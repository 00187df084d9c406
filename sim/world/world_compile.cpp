// The compile room of the World: what Inductor makes of a first call of a
// function and key (dynamo.hpp, partitions.hpp), and how each kind of entry
// runs. A cudagraphed entry is one tree function; a partitioned entry is a
// tree function per partition, with the code between partitions run eagerly
// in the default pool; every other kind runs the body eagerly.
#include <fmt/format.h>

#include <algorithm>

#include "model/check.hpp"
#include "sim/core/body_interpreter.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/messages.hpp"
#include "sim/world/world.hpp"

namespace capsim {

namespace {

using Outputs = std::optional<std::vector<TensorId>>;

std::vector<std::uint32_t> mapped(const std::vector<ValueIndex>& piece_inputs,
                                  const std::vector<std::uint32_t>& graph_set) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < piece_inputs.size(); ++i) {
    if (std::binary_search(graph_set.begin(), graph_set.end(), piece_inputs[i])) out.push_back(i);
  }
  return out;
}

}  // namespace

void World::emit_compile_skip(const FunctionDef& def, const CompiledEntry& entry) {
  ++counters_.cudagraph_skips;
  std::vector<EventField> fields{{F::id, entry.skip_id}, {F::function, def.name}};
  if (!entry.skip_inputs.empty()) fields.push_back({F::inputs, int_list(entry.skip_inputs)});
  fields.push_back({F::message, entry.skip_reason});
  ctx_.emit(EventKind::kSkip, std::move(fields));
  if (entry.kind != EntryKind::kRaises) return;
  // log_cudagraph_skip_and_bump_counter raises once it has logged.
  ctx_.emit(EventKind::kError, {{F::id, decision_key(Decision::kErrorSkipRaised)},
                                {F::exception, "RuntimeError"},
                                {F::where, "compile"},
                                {F::message, entry.skip_reason}});
}

void World::skip_graph(const FunctionDef& def, CompiledEntry& entry, Decision id,
                       std::string message, std::vector<std::uint32_t> inputs, bool logged) {
  entry.skip_id = decision_key(id);
  entry.skip_reason = std::move(message);
  entry.skip_inputs = std::move(inputs);
  if (!logged) {
    // Nothing is logged or counted, and nothing raises: the calls just run
    // eagerly.
    entry.kind = EntryKind::kSilentSkip;
    return;
  }
  entry.kind = cudagraph_or_error(options_.config) ? EntryKind::kRaises : EntryKind::kSkipped;
  emit_compile_skip(def, entry);
}

FunctionId World::add_tree_function(const FunctionDef& def, std::vector<std::uint32_t> statics,
                                    std::vector<std::uint32_t> mutated,
                                    const std::vector<std::int64_t>& int_key,
                                    std::optional<std::uint32_t> partition) {
  // maybe_warning_due_to_dynamic_shape, once per wrapper.
  std::size_t& keys = cudagraphed_keys_[&def];
  const std::int64_t limit = dynamic_shape_warn_limit(options_.config);
  if (limit > 0 && static_cast<std::int64_t>(keys + 1) > limit &&
      warned_dynamic_.insert(&def).second) {
    ctx_.emit(EventKind::kWarning, {{F::id, decision_key(Decision::kWarnManySizes)},
                                    {F::message, messages::dynamic_shape_warning(keys + 1)}});
  }
  ++keys;
  WrappedFunction fn;
  fn.def = &def;
  fn.int_key = int_key;
  fn.static_input_idxs = std::move(statics);
  fn.mutated_input_idxs = std::move(mutated);
  const std::vector<std::uint32_t> shown = fn.static_input_idxs;
  const FunctionId fid = ensure_manager().add_function(std::move(fn));
  ++live_cudagraphified_;
  std::vector<EventField> fields{{F::function, def.name},
                                 {F::fid, fid},
                                 {F::int_key, int_list(int_key)},
                                 {F::static_input_idxs, int_list(shown)}};
  if (partition) fields.push_back({F::partition, *partition});
  if (!def.step_params.empty()) fields.push_back({F::step_params, int_list(def.step_params)});
  ctx_.emit(EventKind::kCompile, std::move(fields));
  return fid;
}

// cudagraphify_impl's own gates, before any tree function: the capture
// sizes, then (2.15) the limit on distinct keys. True when the key runs the
// model directly.
bool World::bypasses_trees(const FunctionDef& def, const std::vector<std::int64_t>& int_key,
                           CompiledEntry& entry) {
  const CudagraphConfig& c = options_.config;
  // A graph without symints has the key None, which no list of sizes holds.
  if (c.cudagraph_capture_sizes &&
      (int_key.empty() ||
       std::find(c.cudagraph_capture_sizes->begin(), c.cudagraph_capture_sizes->end(), int_key) ==
           c.cudagraph_capture_sizes->end())) {
    entry.kind = EntryKind::kCaptureSizeBypass;
    return true;
  }
  const std::optional<std::int64_t> limit = dynamic_shape_rerecord_limit(c);
  if (limit && static_cast<std::int64_t>(cudagraphed_keys_[&def]) >= *limit) {
    entry.kind = EntryKind::kRerecordLimited;
    if (warned_rerecord_limit_.insert(&def).second) {
      ctx_.emit(EventKind::kWarning,
                {{F::id, decision_key(Decision::kWarnDynamicShapeLimit)},
                 {F::message, messages::dynamic_shape_rerecord_limit(
                                  def.name, compilation_mode_name(def.mode), *limit)}});
    }
    return true;
  }
  return false;
}

// No cudagraphify at all: no skip is logged, no tree function is made, and a
// dynamic graph's new sizes need no compile. Nor is an unaligned input
// demoted: remove_unaligned_input_idxs runs only on the cudagraphify path
// (torch/_inductor/compile_fx.py), so every static index stays.
void World::compile_without_cudagraphs(const FunctionDef& def, const StaticInputs& statics,
                                       CompiledEntry& entry, bool another_size) {
  entry.kind = EntryKind::kNoCudagraphs;
  if (another_size) return;
  std::vector<std::uint32_t> all = statics.idxs;
  all.insert(all.end(), statics.demoted.begin(), statics.demoted.end());
  std::sort(all.begin(), all.end());
  std::vector<EventField> fields{{F::function, def.name}, {F::static_input_idxs, int_list(all)}};
  if (!def.step_params.empty()) fields.push_back({F::step_params, int_list(def.step_params)});
  ctx_.emit(EventKind::kCompile, std::move(fields));
}

void World::compile(const FunctionDef& def, std::span<const DynamoArg> args,
                    const std::vector<std::int64_t>& int_key, CompiledEntry& entry,
                    bool another_size) {
  const StaticInputs statics = static_input_idxs(def, args, options_.config);
  if (!options_.config.cudagraphs)
    return compile_without_cudagraphs(def, statics, entry, another_size);
  for (std::uint32_t i : statics.demoted) {
    ctx_.emit(EventKind::kAlignClone, {{F::function, def.name}, {F::input, i}, {F::demoted, true}});
  }
  ensure_manager();
  const bool dynamic = !int_key.empty();
  if (std::optional<GraphSkip> skip =
          lowering_skip(def, options_.config, dynamic, options_.fault)) {
    return skip_graph(def, entry, skip->id, std::move(skip->message), {});
  }
  if (std::optional<GraphSkip> skip = storage_mutation_skip(def, options_.config, options_.fault)) {
    return skip_graph(def, entry, skip->id, std::move(skip->message), def.input_storage_mutations);
  }
  std::vector<std::uint32_t> mutated = mutated_input_idxs(def);
  if (!options_.config.cudagraph_support_input_mutation && options_.fault != Fault::kIgnoreSkipS1) {
    std::vector<std::uint32_t> blocking = mutated_non_static(mutated, statics.idxs);
    if (!blocking.empty()) {
      std::string message =
          messages::mutated_inputs_at_compile(blocking.size(), mutation_stack_trace(def, blocking));
      return skip_graph(def, entry, Decision::kSkipMutatedInputs, std::move(message),
                        std::move(blocking));
    }
  }
  if (std::optional<GraphSkip> skip =
          fail_reasons_skip(def, args, options_.config, options_.fault)) {
    return skip_graph(def, entry, skip->id, std::move(skip->message), {}, skip->logged);
  }
  if (bypasses_trees(def, int_key, entry)) return;
  std::optional<std::vector<Segment>> pieces = partition_function(def, options_.config, dynamic);
  if (!pieces) {
    entry.kind = EntryKind::kCudagraphed;
    entry.fid = add_tree_function(def, statics.idxs, std::move(mutated), int_key, std::nullopt);
    return;
  }
  // The pieces outlive every entry and FunctionId made of them.
  auto [it, fresh] = pieces_.try_emplace({&def, dynamic}, std::move(*pieces));
  entry.kind = EntryKind::kPartitioned;
  entry.pieces = &it->second;
  for (const Segment& s : it->second) {
    if (!s.cudagraphed) {
      entry.piece_fids.emplace_back();
      continue;
    }
    std::vector<std::uint32_t> piece_statics = mapped(s.inputs, statics.idxs);
    if (options_.fault == Fault::kUnmappedPartitionStatics) {
      // The bug get_partition_cudagraph_metadata exists to avoid: graph
      // indices used as the partition's own.
      piece_statics.clear();
      for (std::uint32_t i : statics.idxs) {
        if (i < s.inputs.size()) piece_statics.push_back(i);
      }
    }
    entry.piece_fids.push_back(add_tree_function(s.def, std::move(piece_statics),
                                                 mapped(s.inputs, mutated), int_key, s.partition));
  }
  if (entry.tree_functions() == 0) entry.kind = EntryKind::kNoPartitions;
}

const Segment* World::partition_piece(FunctionId fid, std::string_view name) const {
  // The current manager's function, when it is the one named; else (a
  // manager made after a shutdown numbers from 0 again) the first piece of
  // that name.
  const FunctionDef* def = nullptr;
  if (manager_ && fid < manager_->function_count() && manager_->function(fid).def->name == name) {
    def = manager_->function(fid).def;
  }
  for (const auto& [key, pieces] : pieces_) {
    for (const Segment& s : pieces) {
      if (def != nullptr ? &s.def == def : s.def.name == name) return &s;
    }
  }
  return nullptr;
}

Status World::align_inputs(const WrappedFunction& fn, std::vector<TensorId>& inputs) {
  for (std::uint32_t i = 0; i < inputs.size(); ++i) {
    if (std::binary_search(fn.static_input_idxs.begin(), fn.static_input_idxs.end(), i)) continue;
    CAPSIM_TRY_ASSIGN(const Address ptr, store_.data_address(inputs[i]));
    if (is_aligned(ptr)) continue;
    // copy_misaligned_inputs: clone_preserve_strides before the tree sees it.
    CAPSIM_TRY_ASSIGN(const Tensor src, store_.tensor(inputs[i]));
    CAPSIM_TRY_ASSIGN(const TensorId clone, context_.fresh_tensor(src.meta.sizes, 0.0f, 0));
    // The clone has the input's sizes, so the copy cannot be refused.
    const KernelLaunch copy = CAPSIM_MUST(
        launch_copy(held_tensor_arg(store_, clone), held_tensor_arg(store_, inputs[i])));
    CAPSIM_TRY(backend_.run_step(Step{copy, {}}));
    CAPSIM_TRY(refs_.drop(inputs[i]));
    inputs[i] = clone;
    ctx_.emit(EventKind::kAlignClone, {{F::function, fn.def->name}, {F::input, i}});
  }
  return {};
}

Result<std::vector<TensorId>> World::run_eagerly(const FunctionDef& def,
                                                 std::vector<TensorId>& inputs) {
  BodyEnv env{refs_, backend_, kDefaultPool, nullptr};
  CAPSIM_TRY_ASSIGN(std::vector<TensorId> outs, run_body(def, inputs, env));
  for (TensorId t : inputs) CAPSIM_TRY(refs_.drop(t));
  inputs.clear();
  return outs;
}

// The graph's `call`: each partition through its tree function, the code
// between them eagerly. `values` holds one reference to each graph value
// defined so far; each piece's input list holds its own, as a call's does.
Result<Outputs> World::run_partitioned(const FunctionDef& def, const CompiledEntry& entry,
                                       std::vector<TensorId>& inputs) {
  CAPSIM_CHECK(entry.pieces != nullptr && entry.piece_fids.size() == entry.pieces->size());
  std::vector<std::optional<TensorId>> values(def.num_inputs() + def.ops.size());
  CAPSIM_CHECK(inputs.size() == def.num_inputs(), "one input per placeholder");
  for (std::size_t i = 0; i < inputs.size(); ++i) values[i] = inputs[i];
  inputs.clear();
  const auto release = [&]() -> Status {
    for (auto& v : values) {
      if (v) CAPSIM_TRY(refs_.drop(*v));
      v.reset();
    }
    return {};
  };
  for (std::size_t p = 0; p < entry.pieces->size(); ++p) {
    const Segment& s = (*entry.pieces)[p];
    std::vector<TensorId> list;
    for (ValueIndex v : s.inputs) {
      CAPSIM_CHECK(v < values.size() && values[v], "a piece reads defined values");
      refs_.hold(*values[v]);
      list.push_back(*values[v]);
    }
    std::vector<TensorId> outs;
    if (const std::optional<FunctionId> fid = entry.piece_fids[p]) {
      CAPSIM_TRY(align_inputs(manager_->function(*fid), list));
      CAPSIM_TRY_ASSIGN(CallOutcome outcome, manager_->run(*fid, std::move(list)));
      if (outcome.path == CallPath::kRaised) {
        CAPSIM_TRY(release());
        return Outputs{};
      }
      outs = std::move(outcome.outputs);
    } else {
      CAPSIM_TRY_ASSIGN(outs, run_eagerly(s.def, list));
    }
    CAPSIM_CHECK(outs.size() == s.outputs.size(), "a piece returns its outputs");
    for (std::size_t j = 0; j < outs.size(); ++j) {
      values[s.outputs[j]] = outs[j];
    }
  }
  std::vector<TensorId> result;
  for (ValueIndex v : def.outputs) {
    CAPSIM_CHECK(v < values.size() && values[v], "the graph's outputs are defined");
    refs_.hold(*values[v]);
    result.push_back(*values[v]);
  }
  CAPSIM_TRY(release());
  return Outputs{std::move(result)};
}

Result<Outputs> World::run_entry(const FunctionDef& def, const CompiledEntry& entry,
                                 std::vector<TensorId>& inputs,
                                 const std::vector<std::string>& consume) {
  // Misaligned inputs are cloned before the consumed names let go.
  if (entry.kind == EntryKind::kCudagraphed) {
    CAPSIM_TRY(align_inputs(manager_->function(*entry.fid), inputs));
  }
  for (const std::string& name : consume) CAPSIM_TRY(objects_.unbind(name));
  switch (entry.kind) {
    case EntryKind::kCudagraphed: {
      CAPSIM_TRY_ASSIGN(CallOutcome outcome, manager_->run(*entry.fid, std::move(inputs)));
      if (outcome.path == CallPath::kRaised) return Outputs{};
      return Outputs{std::move(outcome.outputs)};
    }
    case EntryKind::kPartitioned: return run_partitioned(def, entry, inputs);
    case EntryKind::kRaises: {
      for (TensorId t : inputs) CAPSIM_TRY(refs_.drop(t));
      inputs.clear();
      return Outputs{};
    }
    case EntryKind::kSkipped:
    case EntryKind::kSilentSkip:
    case EntryKind::kNoPartitions:
    case EntryKind::kCaptureSizeBypass:
    case EntryKind::kRerecordLimited: break;
    case EntryKind::kNoCudagraphs: {
      // Inductor's own code, not a fallback: nothing to report.
      CAPSIM_TRY_ASSIGN(std::vector<TensorId> outs, run_eagerly(def, inputs));
      return Outputs{std::move(outs)};
    }
  }
  CAPSIM_TRY_ASSIGN(std::vector<TensorId> outs, run_eagerly(def, inputs));
  ++counters_.eager_fallbacks;
  const std::optional<Decision> eager = entry_eager_decision(entry.kind);
  CAPSIM_CHECK(eager.has_value(), "an entry that runs eagerly names its decision");
  ctx_.emit(EventKind::kEager, {{F::function, def.name}, {F::reason, decision_key(*eager)}});
  // cudagraphify_impl's run_eager (2.15) tells the manager a backward ran.
  const bool direct =
      entry.kind == EntryKind::kCaptureSizeBypass || entry.kind == EntryKind::kRerecordLimited;
  if (direct && def.mode == CompilationMode::kBackward && manager_ &&
      profile_rules(options_.config.torch_profile).direct_backward_clears_pending) {
    manager_->set_to_running_backward();
  }
  return Outputs{std::move(outs)};
}

}  // namespace capsim
