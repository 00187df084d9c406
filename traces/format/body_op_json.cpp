// Body ops in function lines (see body_op_json.hpp).
#include "traces/format/body_op_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "traces/format/generic_op_json.hpp"

namespace capsim {

Status check_length(ObjectReader& r, std::string_view key, std::size_t limit) {
  CAPSIM_TRY_ASSIGN(const Json* v, r.value(key));
  if (v->is_array() && v->size() > limit) {
    return field_error(r.path_of(key),
                       fmt::format("{} entries, the limit is {}", v->size(), limit));
  }
  return {};
}

// Each stride at most kMaxTensorElements, so that the span they reach cannot
// overflow; the World checks the span.
Result<Dims> read_strides(ObjectReader& r, std::string_view key) {
  CAPSIM_TRY(check_length(r, key, kMaxRank));
  CAPSIM_TRY_ASSIGN(Dims strides, r.integer_list(key));
  for (std::size_t i = 0; i < strides.size(); ++i) {
    if (strides[i] < 0 || strides[i] > kMaxTensorElements) {
      return field_error(
          fmt::format("{}[{}]", r.path_of(key), i),
          fmt::format("stride {} is outside [0, {}]", strides[i], kMaxTensorElements));
    }
  }
  return strides;
}

Result<Dims> read_sizes(ObjectReader& r, std::string_view key) {
  CAPSIM_TRY(check_length(r, key, kMaxRank));
  CAPSIM_TRY_ASSIGN(Dims sizes, r.integer_list(key));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0) {
      return field_error(fmt::format("{}[{}]", r.path_of(key), i),
                         fmt::format("negative size {}", sizes[i]));
    }
  }
  // A shape costs nothing until values are computed: with values on, the
  // World holds each tensor it fills to kMaxValueElements (a line of 30 bytes
  // must not ask for gigabytes); with values off, only its address is made.
  if (const Status s = check_shape_sizes(sizes); !s.ok()) {
    return field_error(r.path_of(key), s.error().message);
  }
  return sizes;
}

Result<ObjectReader> nested(ObjectReader& parent, std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, parent.value(key));
  return ObjectReader::of(*v, parent.path_of(key));
}

Json sgd_json(const SgdHyper& h) {
  return {{"lr", float_json(h.lr)},
          {"momentum", float_json(h.momentum)},
          {"dampening", float_json(h.dampening)},
          {"weight_decay", float_json(h.weight_decay)},
          {"nesterov", h.nesterov}};
}
Result<SgdHyper> read_sgd(ObjectReader& parent) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, nested(parent, "sgd"));
  SgdHyper h;
  CAPSIM_TRY(assign(h.lr, r.float32("lr")));
  CAPSIM_TRY(assign(h.momentum, r.float32("momentum")));
  CAPSIM_TRY(assign(h.dampening, r.float32("dampening")));
  CAPSIM_TRY(assign(h.weight_decay, r.float32("weight_decay")));
  CAPSIM_TRY(assign(h.nesterov, r.boolean("nesterov")));
  CAPSIM_TRY(r.finish());
  return h;
}

Json adam_json(const AdamHyper& h) {
  return {{"lr", float_json(h.lr)},
          {"beta1", float_json(h.beta1)},
          {"beta2", float_json(h.beta2)},
          {"eps", float_json(h.eps)},
          {"weight_decay", float_json(h.weight_decay)}};
}
Result<AdamHyper> read_adam(ObjectReader& parent) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, nested(parent, "adam"));
  AdamHyper h;
  CAPSIM_TRY(assign(h.lr, r.float32("lr")));
  CAPSIM_TRY(assign(h.beta1, r.float32("beta1")));
  CAPSIM_TRY(assign(h.beta2, r.float32("beta2")));
  CAPSIM_TRY(assign(h.eps, r.float32("eps")));
  CAPSIM_TRY(assign(h.weight_decay, r.float32("weight_decay")));
  CAPSIM_TRY(r.finish());
  return h;
}

// --- Functions -------------------------------------------------------------

Json op_json(const BodyOp& op) {
  Json j = Json::object();
  j["op"] = std::string(body_op_name(op.kind));
  j["args"] = op.args;
  switch (op.kind) {
    case BodyOpKind::kFull:
      j["sizes"] = op.sizes;
      j["scalar"] = float_json(op.scalar);
      break;
    case BodyOpKind::kSlice:
      j["start"] = op.start;
      j["end"] = op.end;
      break;
    case BodyOpKind::kView:
    case BodyOpKind::kExpand: j["sizes"] = op.sizes; break;
    case BodyOpKind::kAsStrided:
      j["sizes"] = op.sizes;
      j["strides"] = op.strides;
      j["storage_offset"] = op.storage_offset;
      break;
    case BodyOpKind::kSum:
    case BodyOpKind::kAmax:
      if (op.dims) j["dims"] = *op.dims;
      if (op.keepdim) j["keepdim"] = true;
      break;
    case BodyOpKind::kSgd:
    case BodyOpKind::kSgdPlain: j["sgd"] = sgd_json(op.sgd); break;
    case BodyOpKind::kAdam:
    case BodyOpKind::kAdamW: j["adam"] = adam_json(op.adam); break;
    case BodyOpKind::kGeneric: write_generic_fields(j, op); break;
    case BodyOpKind::kGetItem: j["index"] = op.index; break;
    default: break;  // the other kinds read no field but their args
  }
  return j;
}

namespace {

// A sum's optional `dims` (at least one, at most kMaxRank; left out, the
// sum is over every dim, so an empty list, which aten reads the same way, is
// refused as ambiguous) and `keepdim` (default false).
Status read_sum_fields(ObjectReader& r, BodyOp& op) {
  if (r.has("dims")) {
    CAPSIM_TRY(check_length(r, "dims", kMaxRank));
    CAPSIM_TRY_ASSIGN(std::vector<std::int64_t> dims, r.integer_list("dims"));
    if (dims.empty()) {
      return field_error(r.path_of("dims"), "empty; leave dims out to sum over every dim");
    }
    op.dims = std::move(dims);
  }
  if (r.has("keepdim")) CAPSIM_TRY(assign(op.keepdim, r.boolean("keepdim")));
  return {};
}

// as_strided's `sizes`, `strides` (as many) and `storage_offset`, all
// non-negative; whether they fit the operand's storage is checked when the
// op runs.
Status read_as_strided_fields(ObjectReader& r, BodyOp& op) {
  CAPSIM_TRY(assign(op.sizes, read_sizes(r, "sizes")));
  CAPSIM_TRY(assign(op.strides, read_strides(r, "strides")));
  if (op.strides.size() != op.sizes.size()) {
    return field_error(r.path_of("strides"),
                       fmt::format("{} entries for {} sizes", op.strides.size(), op.sizes.size()));
  }
  CAPSIM_TRY(assign(op.storage_offset, r.integer("storage_offset")));
  if (op.storage_offset < 0 || op.storage_offset > kMaxTensorElements) {
    return field_error(r.path_of("storage_offset"),
                       fmt::format("{} is outside [0, {}]", op.storage_offset, kMaxTensorElements));
  }
  return {};
}

// getitem's `index`: a result position of a generic op.
Status read_getitem_index(ObjectReader& r, BodyOp& op) {
  CAPSIM_TRY_ASSIGN(const std::int64_t index, r.integer("index"));
  if (index < 0 || static_cast<std::size_t>(index) >= kMaxGenericResults) {
    return field_error(r.path_of("index"), fmt::format("{} is not a result position (0 to {})",
                                                       index, kMaxGenericResults - 1));
  }
  op.index = static_cast<std::uint32_t>(index);
  return {};
}

// Op k of a body with n inputs. Arity and references are checked here, with
// the precise path, rather than left to validate().
}  // namespace

Result<BodyOp> read_op(const Json& j, const std::string& path, std::size_t k, std::size_t n) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, path));
  BodyOp op;
  CAPSIM_TRY_ASSIGN(const std::string name, r.string("op"));
  CAPSIM_TRY_ASSIGN(op.kind, body_op_from_name(name, r.path_of("op")));
  const int arity = body_op_arity(op.kind);
  CAPSIM_TRY_ASSIGN(const Json* args, r.value("args"));
  if (args->is_array() && arity >= 0 && args->size() != static_cast<std::size_t>(arity)) {
    return field_error(r.path_of("args"),
                       fmt::format("'{}' takes {} args, got {}", name, arity, args->size()));
  }
  if (args->is_array() && args->size() > kMaxGenericArgs) {
    return field_error(r.path_of("args"),
                       fmt::format("{} args, the limit is {}", args->size(), kMaxGenericArgs));
  }
  CAPSIM_TRY_ASSIGN(op.args, r.index_list("args"));
  for (std::size_t i = 0; i < op.args.size(); ++i) {
    if (op.args[i] >= n + k) {
      return field_error(fmt::format("{}[{}]", r.path_of("args"), i),
                         fmt::format("value {} is not defined before op {}", op.args[i], k));
    }
  }
  switch (op.kind) {
    case BodyOpKind::kFull:
      CAPSIM_TRY(assign(op.sizes, read_sizes(r, "sizes")));
      CAPSIM_TRY(assign(op.scalar, r.float32("scalar")));
      break;
    case BodyOpKind::kSlice:
      CAPSIM_TRY(assign(op.start, r.integer("start")));
      CAPSIM_TRY(assign(op.end, r.integer("end")));
      break;
    case BodyOpKind::kView:
    case BodyOpKind::kExpand: CAPSIM_TRY(assign(op.sizes, read_sizes(r, "sizes"))); break;
    case BodyOpKind::kAsStrided: CAPSIM_TRY(read_as_strided_fields(r, op)); break;
    case BodyOpKind::kSum:
    case BodyOpKind::kAmax: CAPSIM_TRY(read_sum_fields(r, op)); break;
    case BodyOpKind::kSgd:
    case BodyOpKind::kSgdPlain: CAPSIM_TRY(assign(op.sgd, read_sgd(r))); break;
    case BodyOpKind::kAdam:
    case BodyOpKind::kAdamW: CAPSIM_TRY(assign(op.adam, read_adam(r))); break;
    case BodyOpKind::kGeneric: CAPSIM_TRY(read_generic_fields(r, op)); break;
    case BodyOpKind::kGetItem: CAPSIM_TRY(read_getitem_index(r, op)); break;
    default: break;  // refused by finish() below if present
  }
  CAPSIM_TRY(r.finish());
  return op;
}

// Its own pair macro: program_json.cpp undefines json_fields.hpp's
// CAPSIM_PAIR_ at its end, and a unity build reads this file after it.
Result<BodyOpKind> body_op_from_name(std::string_view name, std::string_view path) {
#define CAPSIM_BODY_OP_PAIR_(e, n, ...) {n, BodyOpKind::e},
  return from_name<BodyOpKind>(name, path, "op", {CAPSIM_BODY_OPS(CAPSIM_BODY_OP_PAIR_)});
#undef CAPSIM_BODY_OP_PAIR_
}

}  // namespace capsim
