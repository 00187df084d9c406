// The JSON form of Programs and CudagraphConfig (see program_json.hpp): the writers and the
// strict readers of functions, and the names of their enums (actions: action_json.cpp).
#include "traces/format/program_json.hpp"

#include "model/dtype_values.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>
#include <variant>

#include "traces/format/body_op_json.hpp"
#include "traces/format/generic_op_json.hpp"
#include "traces/format/imported_graph_json.hpp"

namespace capsim {
namespace {

Status check_name(const std::string& s, std::string_view path) {
  if (s.size() > kMaxJsonNameBytes) {
    return field_error(
        path, fmt::format("name of {} bytes, the limit is {}", s.size(), kMaxJsonNameBytes));
  }
  return {};
}

Result<std::vector<std::uint32_t>> read_indices(ObjectReader& r, std::string_view key,
                                                std::size_t limit) {
  CAPSIM_TRY(check_length(r, key, limit));
  return r.index_list(key);
}

// Every entry of `key` below `bound`; else "<noun> <entry> is not <what>".
Status check_below(const ObjectReader& r, std::string_view key,
                   const std::vector<std::uint32_t>& idxs, std::size_t bound, std::string_view noun,
                   std::string_view what) {
  for (std::size_t i = 0; i < idxs.size(); ++i) {
    if (idxs[i] >= bound) {
      return field_error(fmt::format("{}[{}]", r.path_of(key), i),
                         fmt::format("{} {} is not {}", noun, idxs[i], what));
    }
  }
  return {};
}

}  // namespace

Result<std::string> read_name(ObjectReader& r, std::string_view key) {
  CAPSIM_TRY_ASSIGN(std::string s, r.string(key));
  CAPSIM_TRY(check_name(s, r.path_of(key)));
  return s;
}

Result<std::vector<std::string>> read_names(ObjectReader& r, std::string_view key,
                                            std::size_t limit) {
  CAPSIM_TRY(check_length(r, key, limit));
  CAPSIM_TRY_ASSIGN(std::vector<std::string> names, r.string_list(key));
  for (std::size_t i = 0; i < names.size(); ++i) {
    CAPSIM_TRY(check_name(names[i], fmt::format("{}[{}]", r.path_of(key), i)));
  }
  return names;
}

// --- Names -----------------------------------------------------------------

Result<OptimizerKind> optimizer_kind_from_name(std::string_view name, std::string_view path) {
  using Enum = OptimizerKind;
  return from_name<Enum>(name, path, "optimizer kind", {CAPSIM_OPTIMIZER_KINDS(CAPSIM_PAIR_)});
}

Result<CompilationMode> compilation_mode_from_name(std::string_view name, std::string_view path) {
  using Enum = CompilationMode;
  return from_name<Enum>(name, path, "mode", {CAPSIM_COMPILATION_MODES(CAPSIM_PAIR_)});
}

// --- Functions -------------------------------------------------------------

namespace {

// partition_cuts: [{"begin": B, "end": E, "reason": R}, ...], sorted, each
// [B, E) non-empty within the ops, none overlapping.
Result<std::vector<PartitionCut>> read_cuts(ObjectReader& r, std::size_t num_ops) {
  CAPSIM_TRY(check_length(r, "partition_cuts", kMaxBodyOps));
  CAPSIM_TRY_ASSIGN(const Json* v, r.value("partition_cuts"));
  const std::string path = r.path_of("partition_cuts");
  if (!v->is_array()) return field_error(path, "expected an array of cut objects");
  std::vector<PartitionCut> cuts;
  for (std::size_t k = 0; k < v->size(); ++k) {
    CAPSIM_TRY_ASSIGN(ObjectReader c, ObjectReader::of((*v)[k], fmt::format("{}[{}]", path, k)));
    PartitionCut cut;
    CAPSIM_TRY_ASSIGN(const std::int64_t begin, c.integer("begin"));
    CAPSIM_TRY_ASSIGN(const std::int64_t end, c.integer("end"));
    if (begin < 0 || end <= begin || static_cast<std::uint64_t>(end) > num_ops) {
      return field_error(
          c.path_of("end"),
          fmt::format("ops [{}, {}) is empty or not within the {} ops", begin, end, num_ops));
    }
    if (!cuts.empty() && begin < cuts.back().end) {
      return field_error(c.path_of("begin"),
                         fmt::format("ops [{}, {}) overlap or precede the cut before", begin, end));
    }
    cut.begin = static_cast<std::uint32_t>(begin);
    cut.end = static_cast<std::uint32_t>(end);
    CAPSIM_TRY_ASSIGN(const std::string reason, c.string("reason"));
    const std::optional<PartitionCutReason> why = partition_cut_reason_from_name(reason);
    if (!why) {
      return field_error(c.path_of("reason"),
                         fmt::format("unknown cut reason '{}' (cpu, cudagraph_unsafe, "
                                     "custom_should_partition_ops, dynamic_shape)",
                                     reason));
    }
    cut.reason = *why;
    CAPSIM_TRY(c.finish());
    cuts.push_back(cut);
  }
  return cuts;
}

// non_tensor_inputs (kind names), cuda_devices and input_storage_mutations
// (indices), warmups_marked_incomplete (a count); validate() checks their
// ranges and order.
// `stack_traces` (one per output) or `mutating_use_stack_traces` (one per
// input): a string or null each, each at most kMaxStackTraceChars long.
Result<std::vector<std::optional<std::string>>> read_stack_traces(ObjectReader& r,
                                                                  const char* field,
                                                                  std::size_t count,
                                                                  const char* per) {
  CAPSIM_TRY_ASSIGN(const Json* traces, r.value(field));
  const std::string path = r.path_of(field);
  if (!traces->is_array() || traces->size() != count) {
    return field_error(
        path, fmt::format("expected an array of {} strings or nulls, one per {}", count, per));
  }
  std::vector<std::optional<std::string>> out;
  for (std::size_t k = 0; k < traces->size(); ++k) {
    const Json& t = (*traces)[k];
    if (t.is_null()) {
      out.emplace_back();
      continue;
    }
    if (!t.is_string() || t.get_ref<const std::string&>().size() > kMaxStackTraceChars) {
      return field_error(
          fmt::format("{}[{}]", path, k),
          fmt::format("expected a string of at most {} characters, or null", kMaxStackTraceChars));
    }
    out.push_back(t.get<std::string>());
  }
  return out;
}

Status read_compile_facts(ObjectReader& r, FunctionDef& def) {
  if (r.has("non_tensor_inputs")) {
    CAPSIM_TRY_ASSIGN(const std::vector<std::string> kinds,
                      read_names(r, "non_tensor_inputs", kMaxBodyInputs));
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      const std::optional<NonTensorInput> kind = non_tensor_input_from_name(kinds[k]);
      if (!kind) {
        return field_error(
            fmt::format("{}[{}]", r.path_of("non_tensor_inputs"), k),
            fmt::format("unknown kind '{}' (int, float, bool, none, generator, opaque)", kinds[k]));
      }
      def.non_tensor_inputs.push_back(*kind);
    }
  }
  if (r.has("cuda_devices")) {
    CAPSIM_TRY_ASSIGN(def.cuda_devices, read_indices(r, "cuda_devices", kMaxCudaDevices));
  }
  if (r.has("input_storage_mutations")) {
    CAPSIM_TRY_ASSIGN(def.input_storage_mutations,
                      read_indices(r, "input_storage_mutations", kMaxBodyInputs));
  }
  if (r.has("warmups_marked_incomplete")) {
    CAPSIM_TRY_ASSIGN(const std::int64_t n, r.integer("warmups_marked_incomplete"));
    if (n < 0 || n > kMaxWarmupsMarkedIncomplete) {
      return field_error(r.path_of("warmups_marked_incomplete"),
                         fmt::format("must be 0 to {}, got {}", kMaxWarmupsMarkedIncomplete, n));
    }
    def.warmups_marked_incomplete = static_cast<std::uint32_t>(n);
  }
  return {};
}

}  // namespace

Json function_to_json(const FunctionDef& def) {
  Json j = Json::object();
  j["function"] = def.name;
  j["mode"] = std::string(compilation_mode_name(def.mode));
  j["inputs"] = def.input_names;
  Json ops = Json::array();
  for (const BodyOp& op : def.ops) ops.push_back(op_json(op));
  j["ops"] = std::move(ops);
  j["outputs"] = def.outputs;
  j["static_input_idxs"] = def.static_input_idxs;
  j["param_input_idxs"] = def.param_input_idxs;
  if (def.user_visible_outputs) j["user_visible_outputs"] = *def.user_visible_outputs;
  // Additive: only a function whose outputs' source lines are known.
  const auto traces_json = [](const std::vector<std::optional<std::string>>& traces) {
    Json out = Json::array();
    for (const std::optional<std::string>& t : traces) out.push_back(t ? Json(*t) : Json(nullptr));
    return out;
  };
  if (!def.stack_traces.empty()) j["stack_traces"] = traces_json(def.stack_traces);
  if (!def.mutating_use_stack_traces.empty()) {
    j["mutating_use_stack_traces"] = traces_json(def.mutating_use_stack_traces);
  }
  // Additive: only a function with cuts has the field.
  if (!def.partition_cuts.empty()) {
    Json cuts = Json::array();
    for (const PartitionCut& c : def.partition_cuts) {
      cuts.push_back(Json{{"begin", c.begin},
                          {"end", c.end},
                          {"reason", std::string(partition_cut_reason_name(c.reason))}});
    }
    j["partition_cuts"] = std::move(cuts);
  }
  // Additive too: the declarations of the compile-time skips S3, S4 and S7.
  if (!def.non_tensor_inputs.empty()) {
    Json kinds = Json::array();
    for (NonTensorInput k : def.non_tensor_inputs) {
      kinds.push_back(std::string(non_tensor_input_name(k)));
    }
    j["non_tensor_inputs"] = std::move(kinds);
  }
  if (!def.cuda_devices.empty()) j["cuda_devices"] = def.cuda_devices;
  if (!def.input_storage_mutations.empty()) {
    j["input_storage_mutations"] = def.input_storage_mutations;
  }
  if (def.warmups_marked_incomplete > 0) {
    j["warmups_marked_incomplete"] = def.warmups_marked_incomplete;
  }
  return j;
}

// The field a validate() refusal is about: it names it after "function
// 'NAME': " (cuda_devices[1]: ..., outputs: ...); a key the line has is that
// field, with its index; anything else ("op 3 (mul): ...", "40 inputs") is
// the body's, "ops".
std::string validated_field(const ObjectReader& r, const std::string& message) {
  const std::size_t quote = message.find("': ");
  if (!message.starts_with("function '") || quote == std::string::npos) return r.path_of("ops");
  const std::string rest = message.substr(quote + 3);
  const std::string key = rest.substr(0, rest.find_first_of(":[ "));
  if (key.empty() || !r.has(key)) return r.path_of("ops");
  const std::size_t close = rest.find(']');
  const bool indexed =
      rest.size() > key.size() && rest[key.size()] == '[' && close != std::string::npos;
  return r.path_of(key) + (indexed ? rest.substr(key.size(), close + 1 - key.size()) : "");
}

Result<FunctionDef> function_from_json(ObjectReader& r) {
  FunctionDef def;
  CAPSIM_TRY_ASSIGN(def.name, read_name(r, "function"));
  CAPSIM_TRY_ASSIGN(const std::string mode, r.string("mode"));
  CAPSIM_TRY_ASSIGN(def.mode, compilation_mode_from_name(mode, r.path_of("mode")));
  CAPSIM_TRY_ASSIGN(def.input_names, read_names(r, "inputs", kMaxBodyInputs));
  const std::size_t n = def.input_names.size();

  CAPSIM_TRY(check_length(r, "ops", kMaxBodyOps));
  CAPSIM_TRY_ASSIGN(const Json* ops, r.value("ops"));
  if (!ops->is_array()) return field_error(r.path_of("ops"), "expected an array of op objects");
  def.ops.reserve(ops->size());
  for (std::size_t k = 0; k < ops->size(); ++k) {
    CAPSIM_TRY_ASSIGN(BodyOp op,
                      read_op((*ops)[k], fmt::format("{}[{}]", r.path_of("ops"), k), k, n));
    def.ops.push_back(std::move(op));
  }

  CAPSIM_TRY_ASSIGN(def.outputs, read_indices(r, "outputs", kMaxCallOutputs));
  CAPSIM_TRY(check_below(r, "outputs", def.outputs, n + def.ops.size(), "value", "defined"));
  CAPSIM_TRY_ASSIGN(def.static_input_idxs, read_indices(r, "static_input_idxs", kMaxBodyInputs));
  CAPSIM_TRY(check_below(r, "static_input_idxs", def.static_input_idxs, n, "index", "an input"));
  CAPSIM_TRY_ASSIGN(def.param_input_idxs, read_indices(r, "param_input_idxs", kMaxBodyInputs));
  CAPSIM_TRY(check_below(r, "param_input_idxs", def.param_input_idxs, n, "index", "an input"));
  if (r.has("user_visible_outputs")) {
    CAPSIM_TRY_ASSIGN(auto visible, read_indices(r, "user_visible_outputs", kMaxCallOutputs));
    CAPSIM_TRY(check_below(r, "user_visible_outputs", visible, def.outputs.size(), "position",
                           "an output"));
    def.user_visible_outputs = std::move(visible);
  }
  if (r.has("partition_cuts")) {
    CAPSIM_TRY_ASSIGN(def.partition_cuts, read_cuts(r, def.ops.size()));
  }
  CAPSIM_TRY(read_compile_facts(r, def));
  if (r.has("stack_traces")) {
    CAPSIM_TRY_ASSIGN(def.stack_traces,
                      read_stack_traces(r, "stack_traces", def.outputs.size(), "output"));
  }
  if (r.has("mutating_use_stack_traces")) {
    CAPSIM_TRY_ASSIGN(
        def.mutating_use_stack_traces,
        read_stack_traces(r, "mutating_use_stack_traces", def.input_names.size(), "input"));
  }
  CAPSIM_TRY(r.finish());
  // The checks above give precise paths; validate() stays the one authority,
  // so a rule added there is enforced here too.
  if (const Status s = validate(def); !s.ok()) {
    return field_error(validated_field(r, s.error().message), s.error().message);
  }
  return def;
}

}  // namespace capsim
