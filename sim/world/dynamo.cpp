// The dynamo room (dynamo.hpp).
#include "sim/world/dynamo.hpp"

#include <algorithm>
#include <set>

#include "model/check.hpp"

namespace capsim {

std::optional<Decision> entry_eager_decision(EntryKind kind) {
  switch (kind) {
#define CAPSIM_DECISION_(e, decision) \
  case EntryKind::e: return decision;
    CAPSIM_ENTRY_KINDS(CAPSIM_DECISION_)
#undef CAPSIM_DECISION_
  }
  return kNoEagerEvent;
}

std::size_t CompiledEntry::tree_functions() const {
  std::size_t n = fid ? 1 : 0;
  for (const auto& f : piece_fids) n += f ? 1 : 0;
  return n;
}

StaticInputs static_input_idxs(const FunctionDef& def, std::span<const DynamoArg> args,
                               const CudagraphConfig& config) {
  std::set<std::uint32_t> statics(def.static_input_idxs.begin(), def.static_input_idxs.end());
  statics.insert(def.param_input_idxs.begin(), def.param_input_idxs.end());
  for (std::uint32_t i = 0; i < args.size(); ++i) {
    if (args[i].static_guard || (args[i].parameter && inline_inbuilt_nn_modules(config))) {
      statics.insert(i);
    }
  }
  StaticInputs out;
  // remove_unaligned_input_idxs, at the first call of this key.
  for (std::uint32_t i : statics) {
    CAPSIM_CHECK(i < args.size(), "a static input index names an argument");
    if (is_aligned(args[i].data_ptr)) {
      out.idxs.push_back(i);
    } else {
      out.demoted.push_back(i);
    }
  }
  return out;
}

std::vector<std::uint32_t> mutated_non_static(std::span<const std::uint32_t> mutated,
                                              std::span<const std::uint32_t> statics) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i : mutated) {
    if (!std::binary_search(statics.begin(), statics.end(), i)) out.push_back(i);
  }
  return out;
}

CompileCache::Lookup CompileCache::find(const FunctionDef* def,
                                        const std::vector<std::int64_t>& int_key,
                                        std::span<const DynamoArg> args) const {
  Lookup out;
  const auto it = entries_.find(def);
  if (it == entries_.end()) return out;
  for (const Entry& e : it->second) {
    if (e.int_key != int_key) continue;
    out.recompile = true;
    bool guards_hold = true;
    for (std::size_t g = 0; g < e.guarded_positions.size() && guards_hold; ++g) {
      CAPSIM_CHECK(e.guarded_positions[g] < args.size(), "a guard names an argument");
      guards_hold = args[e.guarded_positions[g]].object == e.guarded_objects[g];
    }
    if (guards_hold) {
      out.hit = &e.compiled;
      out.recompile = false;
      return out;
    }
  }
  return out;
}

CompiledEntry& CompileCache::insert(const FunctionDef* def,
                                    const std::vector<std::int64_t>& int_key,
                                    std::span<const DynamoArg> args) {
  Entry e;
  e.int_key = int_key;
  for (std::uint32_t i = 0; i < args.size(); ++i) {
    if (!args[i].static_guard.value_or(false)) continue;
    e.guarded_positions.push_back(i);
    e.guarded_objects.push_back(args[i].object);
  }
  std::vector<Entry>& list = entries_[def];
  list.push_back(std::move(e));
  return list.back().compiled;
}

std::size_t CompileCache::erase(const FunctionDef* def) {
  const auto it = entries_.find(def);
  if (it == entries_.end()) return 0;
  std::size_t with_fid = 0;
  for (const Entry& e : it->second) with_fid += e.compiled.tree_functions();
  entries_.erase(it);
  return with_fid;
}

}  // namespace capsim
