// FunctionDef (see function_def.hpp): what each body op is (arity, in place, view, the
// arguments it writes), the names of the enums, and the validation of a body, its compile-time
// skips and its partition cuts.
#include "sim/core/function_def.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "sim/core/generic_op.hpp"

namespace capsim {

std::string_view body_op_name(BodyOpKind kind) {
  switch (kind) {
#define CAPSIM_NAME_(e, name, arity, in_place) \
  case BodyOpKind::e: return name;
    CAPSIM_BODY_OPS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

int body_op_arity(BodyOpKind kind) {
  switch (kind) {
#define CAPSIM_ARITY_(e, name, arity, in_place) \
  case BodyOpKind::e: return arity;
    CAPSIM_BODY_OPS(CAPSIM_ARITY_)
#undef CAPSIM_ARITY_
  }
  return 0;
}

bool body_op_in_place(BodyOpKind kind) {
  switch (kind) {
#define CAPSIM_IN_PLACE_(e, name, arity, in_place) \
  case BodyOpKind::e: return in_place;
    CAPSIM_BODY_OPS(CAPSIM_IN_PLACE_)
#undef CAPSIM_IN_PLACE_
  }
  return false;
}

bool body_op_is_view(BodyOpKind kind) {
  switch (kind) {
    case BodyOpKind::kAlias:
    case BodyOpKind::kSlice:
    case BodyOpKind::kTranspose:
    case BodyOpKind::kView:
    case BodyOpKind::kExpand:
    case BodyOpKind::kAsStrided: return true;
    default: return false;
  }
}

std::vector<std::uint32_t> body_op_written_args(BodyOpKind kind) {
  switch (kind) {
    case BodyOpKind::kAddInplace:
    case BodyOpKind::kCopyInplace: return {0};
    case BodyOpKind::kSgd: return {0, 2};
    case BodyOpKind::kSgdPlain: return {0};
    case BodyOpKind::kAdam:
    case BodyOpKind::kAdamW: return {0, 2, 3, 4};
    default: return {};
  }
}

std::optional<std::uint32_t> value_views_arg(const BodyOp& op) {
  if (op.kind == BodyOpKind::kGeneric) {
    if (op.generic.results.size() != 1 || op.generic.views.empty()) return std::nullopt;
    return op.generic.views[0];
  }
  if (body_op_is_view(op.kind) || body_op_in_place(op.kind)) return 0;
  return std::nullopt;
}

std::vector<std::uint32_t> written_args(const BodyOp& op) {
  if (op.kind == BodyOpKind::kGeneric) return op.generic.writes;
  return body_op_written_args(op.kind);
}

std::string_view compilation_mode_name(CompilationMode mode) {
  switch (mode) {
#define CAPSIM_NAME_(e, name) \
  case CompilationMode::e: return name;
    CAPSIM_COMPILATION_MODES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

namespace {
// An error unless `sizes` (non-negative) span at most `limit` elements, a
// size of 0 counting as 1. Checked by division, so no product overflows.
Status check_span(const Dims& sizes, std::int64_t limit) {
  std::int64_t span = 1;
  for (const std::int64_t s : sizes) {
    if (s < 0) return make_error(fmt::format("negative size {} in {}", s, sizes));
    const std::int64_t m = std::max<std::int64_t>(s, 1);
    if (s > limit || span > limit / m) {
      return make_error(fmt::format(
          "sizes {} span more than {} elements, the limit for one tensor (a size of 0 counts as 1)",
          sizes, limit));
    }
    span *= m;
  }
  return {};
}
}  // namespace

Status check_value_sizes(const Dims& sizes) {
  return values_limit(check_span(sizes, kMaxValueElements));
}

Status check_shape_sizes(const Dims& sizes) {
  return check_span(sizes, kMaxTensorElements);
}

std::string_view partition_cut_reason_name(PartitionCutReason reason) {
  switch (reason) {
#define CAPSIM_NAME_(e, name, text) \
  case PartitionCutReason::e: return name;
    CAPSIM_PARTITION_CUT_REASONS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

std::optional<PartitionCutReason> partition_cut_reason_from_name(std::string_view name) {
#define CAPSIM_FROM_(e, n, text) \
  if (name == n) return PartitionCutReason::e;
  CAPSIM_PARTITION_CUT_REASONS(CAPSIM_FROM_)
#undef CAPSIM_FROM_
  return std::nullopt;
}

std::string_view non_tensor_input_name(NonTensorInput kind) {
  switch (kind) {
#define CAPSIM_NAME_(e, name, what) \
  case NonTensorInput::e: return name;
    CAPSIM_NON_TENSOR_INPUTS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

std::optional<NonTensorInput> non_tensor_input_from_name(std::string_view name) {
#define CAPSIM_FROM_(e, n, what) \
  if (name == n) return NonTensorInput::e;
  CAPSIM_NON_TENSOR_INPUTS(CAPSIM_FROM_)
#undef CAPSIM_FROM_
  return std::nullopt;
}

namespace {

// The declarations of the compile-time skips: bounded, and each naming what
// exists (a device once, an input that is one, in order).
Status validate_compile_facts(const FunctionDef& def) {
  if (def.non_tensor_inputs.size() > kMaxBodyInputs) {
    return make_error(
        fmt::format("function '{}': non_tensor_inputs: more than {}", def.name, kMaxBodyInputs));
  }
  if (def.cuda_devices.size() > kMaxCudaDevices) {
    return make_error(
        fmt::format("function '{}': cuda_devices: more than {}", def.name, kMaxCudaDevices));
  }
  for (std::size_t i = 0; i < def.cuda_devices.size(); ++i) {
    const std::uint32_t d = def.cuda_devices[i];
    if (d >= kMaxCudaDevices || std::find(def.cuda_devices.begin(), def.cuda_devices.begin() + i,
                                          d) != def.cuda_devices.begin() + i) {
      return make_error(
          fmt::format("function '{}': cuda_devices[{}]: device {} is over {} or named twice",
                      def.name, i, d, kMaxCudaDevices - 1));
    }
  }
  if (def.warmups_marked_incomplete > kMaxWarmupsMarkedIncomplete) {
    return make_error(fmt::format("function '{}': warmups_marked_incomplete: {} is over {}",
                                  def.name, def.warmups_marked_incomplete,
                                  kMaxWarmupsMarkedIncomplete));
  }
  for (std::size_t i = 0; i < def.input_storage_mutations.size(); ++i) {
    const std::uint32_t v = def.input_storage_mutations[i];
    if (v >= def.num_inputs() || (i > 0 && v <= def.input_storage_mutations[i - 1])) {
      return make_error(fmt::format(
          "function '{}': input_storage_mutations[{}]: index {} is not an input, or not in "
          "increasing order",
          def.name, i, v));
    }
  }
  return {};
}

Status validate_cuts(const FunctionDef& def) {
  std::uint32_t end_of_last = 0;
  for (std::size_t c = 0; c < def.partition_cuts.size(); ++c) {
    const PartitionCut& cut = def.partition_cuts[c];
    if (cut.begin >= cut.end || cut.end > def.ops.size()) {
      return make_error(fmt::format(
          "function '{}': partition_cuts[{}]: ops [{}, {}) is empty or not within the {} ops",
          def.name, c, cut.begin, cut.end, def.ops.size()));
    }
    if (c > 0 && cut.begin < end_of_last) {
      return make_error(fmt::format(
          "function '{}': partition_cuts[{}]: ops [{}, {}) overlap or precede the cut before",
          def.name, c, cut.begin, cut.end));
    }
    end_of_last = cut.end;
  }
  return {};
}

// A generic op's own fields, and the rule that a tuple (a generic op with
// other than one result) is used by getitem only, at an index that is a
// tensor.
Status validate_tuple_use(const FunctionDef& def, std::size_t k) {
  const std::size_t n = def.num_inputs();
  const BodyOp& op = def.ops[k];
  if (op.kind == BodyOpKind::kGeneric) CAPSIM_TRY(validate_generic(op));
  for (std::size_t i = 0; i < op.args.size(); ++i) {
    const ValueIndex v = op.args[i];
    if (v < n || v >= n + k) continue;  // an input, or refused below
    const BodyOp& from = def.ops[v - n];
    const bool tuple = from.kind == BodyOpKind::kGeneric && from.generic.results.size() != 1;
    if (op.kind == BodyOpKind::kGetItem) {
      if (!tuple || op.index >= from.generic.results.size() || !from.generic.results[op.index]) {
        return make_error(fmt::format(
            "getitem: value {} has no tensor at index {} (only a generic op with other than one "
            "result is a tuple)",
            v, op.index));
      }
    } else if (tuple) {
      return make_error(
          fmt::format("args[{}]: value {} is a tuple; take its items with getitem", i, v));
    }
  }
  if (op.kind == BodyOpKind::kGetItem && op.args[0] < n) {
    return make_error("getitem: an input is not a tuple");
  }
  return {};
}

// as_strided's geometry: as many strides as sizes, none negative, at most
// kMaxRank dims, a non-negative offset. Whether it fits its operand's
// storage is checked when it runs.
Status validate_as_strided(const FunctionDef& def, std::size_t k) {
  const BodyOp& op = def.ops[k];
  const auto fail = [&](std::string_view what) {
    return make_error(fmt::format("function '{}': op {} (as_strided): {}", def.name, k, what));
  };
  if (op.sizes.size() > kMaxRank || op.strides.size() != op.sizes.size()) {
    return fail(fmt::format("sizes and strides must have the same rank, at most {}", kMaxRank));
  }
  for (std::size_t d = 0; d < op.sizes.size(); ++d) {
    if (op.sizes[d] < 0 || op.strides[d] < 0) return fail("negative size or stride");
  }
  if (op.storage_offset < 0) return fail("negative storage_offset");
  return {};
}

}  // namespace

Status validate(const FunctionDef& def) {
  const std::size_t n = def.num_inputs();
  if (n > kMaxBodyInputs) {
    return make_error(
        fmt::format("function '{}': {} inputs, the limit is {}", def.name, n, kMaxBodyInputs));
  }
  if (def.ops.size() > kMaxBodyOps) {
    return make_error(fmt::format("function '{}': {} ops, the limit is {}", def.name,
                                  def.ops.size(), kMaxBodyOps));
  }
  for (std::size_t k = 0; k < def.ops.size(); ++k) {
    const BodyOp& op = def.ops[k];
    const int arity = body_op_arity(op.kind);
    if (arity >= 0 && op.args.size() != static_cast<std::size_t>(arity)) {
      return make_error(fmt::format("function '{}': op {} ({}): args: expected {}, got {}",
                                    def.name, k, body_op_name(op.kind), arity, op.args.size()));
    }
    if (Status s = validate_tuple_use(def, k); !s.ok()) {
      return with_context(
          fmt::format("function '{}': op {} ({})", def.name, k, body_op_name(op.kind)), s.error());
    }
    if (op.kind == BodyOpKind::kAsStrided) CAPSIM_TRY(validate_as_strided(def, k));
    const bool reduces = op.kind == BodyOpKind::kSum || op.kind == BodyOpKind::kAmax;
    if (op.dims && (!reduces || op.dims->empty())) {
      return make_error(
          fmt::format("function '{}': op {} ({}): dims: only a sum or an amax has dims, and "
                      "at least one",
                      def.name, k, body_op_name(op.kind)));
    }
    for (ValueIndex v : op.args) {
      if (v >= n + k) {
        return make_error(
            fmt::format("function '{}': op {} ({}): args: value {} is not defined before the op",
                        def.name, k, body_op_name(op.kind), v));
      }
    }
  }
  for (ValueIndex v : def.outputs) {
    if (v >= n + def.ops.size()) {
      return make_error(
          fmt::format("function '{}': outputs: value {} is not defined", def.name, v));
    }
    if (v >= n && def.ops[v - n].kind == BodyOpKind::kGeneric &&
        def.ops[v - n].generic.results.size() != 1) {
      return make_error(
          fmt::format("function '{}': outputs: value {} is a tuple; return its items with getitem",
                      def.name, v));
    }
  }
  const std::pair<const char*, const std::vector<std::uint32_t>*> sets[] = {
      {"static_input_idxs", &def.static_input_idxs}, {"param_input_idxs", &def.param_input_idxs}};
  for (const auto& [set_name, set] : sets) {
    for (std::uint32_t i : *set) {
      if (i >= n) {
        return make_error(
            fmt::format("function '{}': {}: index {} is not an input", def.name, set_name, i));
      }
    }
  }
  if (def.user_visible_outputs) {
    for (std::uint32_t i : *def.user_visible_outputs) {
      if (i >= def.outputs.size()) {
        return make_error(fmt::format(
            "function '{}': user_visible_outputs: position {} is not an output", def.name, i));
      }
    }
  }
  CAPSIM_TRY(validate_compile_facts(def));
  return validate_cuts(def);
}

std::string output_stack_trace(const FunctionDef& def, std::uint32_t i) {
  // format_dealloc_msg (cudagraph_trees.py): the stripped trace, or this.
  if (i < def.stack_traces.size() && def.stack_traces[i] && !def.stack_traces[i]->empty()) {
    return *def.stack_traces[i];
  }
  return "[Could not find stack trace]";
}

std::optional<std::string> mutation_stack_trace(const FunctionDef& def,
                                                const std::vector<std::uint32_t>& mutated) {
  for (std::uint32_t i : mutated) {
    if (i < def.mutating_use_stack_traces.size() && def.mutating_use_stack_traces[i] &&
        !def.mutating_use_stack_traces[i]->empty()) {
      return def.mutating_use_stack_traces[i];
    }
  }
  return std::nullopt;
}

bool user_visible_output(const FunctionDef& def, std::uint32_t i) {
  if (def.user_visible_outputs) {
    return std::find(def.user_visible_outputs->begin(), def.user_visible_outputs->end(), i) !=
           def.user_visible_outputs->end();
  }
  return def.mode != CompilationMode::kBackward;
}

std::vector<std::uint32_t> mutated_input_idxs(const FunctionDef& def) {
  const std::size_t n = def.num_inputs();
  // root[v]: the input value v is a view of, if any.
  std::vector<std::optional<std::uint32_t>> root(n + def.ops.size());
  for (std::uint32_t i = 0; i < n; ++i) root[i] = i;
  std::vector<std::uint32_t> mutated;
  for (std::size_t k = 0; k < def.ops.size(); ++k) {
    const BodyOp& op = def.ops[k];
    if (const auto a = value_views_arg(op)) root[n + k] = root[op.args[*a]];
    if (op.kind == BodyOpKind::kGetItem) {
      const BodyOp& tuple = def.ops[op.args[0] - n];
      const auto& views = tuple.generic.views;
      if (op.index < views.size() && views[op.index]) {
        root[n + k] = root[tuple.args[*views[op.index]]];
      }
    }
    for (std::uint32_t a : written_args(op)) {
      if (root[op.args[a]]) mutated.push_back(*root[op.args[a]]);
    }
  }
  std::sort(mutated.begin(), mutated.end());
  mutated.erase(std::unique(mutated.begin(), mutated.end()), mutated.end());
  return mutated;
}

std::vector<std::string> primal_names(std::size_t n) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) names.push_back(fmt::format("primals_{}", i + 1));
  return names;
}

}  // namespace capsim
