// Generic ops in function lines (see generic_op_json.hpp).
#include "traces/format/generic_op_json.hpp"

#include "sim/core/generic_op.hpp"

namespace capsim {

namespace {
std::string element_path(std::string_view path, std::size_t i) {
  return fmt::format("{}[{}]", path, i);
}

Result<Dims> read_meta_dims(ObjectReader& r, std::string_view key) {
  CAPSIM_TRY_ASSIGN(const Json* v, r.value(key));
  if (v->is_array() && v->size() > kMaxRank) {
    return field_error(r.path_of(key), fmt::format("more than {} dims", kMaxRank));
  }
  CAPSIM_TRY_ASSIGN(Dims dims, r.integer_list(key));
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) return field_error(element_path(r.path_of(key), i), "negative");
  }
  return dims;
}

// Per result, an arg position or null.
Result<std::vector<std::optional<std::uint32_t>>> read_generic_views(ObjectReader& r) {
  CAPSIM_TRY_ASSIGN(const Json* v, r.value("views"));
  const std::string path = r.path_of("views");
  if (!v->is_array()) return field_error(path, "must be an array");
  if (v->size() > kMaxGenericResults) {
    return field_error(path, fmt::format("more than {} entries", kMaxGenericResults));
  }
  std::vector<std::optional<std::uint32_t>> views;
  for (std::size_t i = 0; i < v->size(); ++i) {
    if ((*v)[i].is_null()) {
      views.emplace_back();
      continue;
    }
    CAPSIM_TRY_ASSIGN(const std::int64_t a, json_integer((*v)[i], element_path(path, i)));
    if (a < 0 || static_cast<std::size_t>(a) >= kMaxGenericArgs) {
      return field_error(element_path(path, i), "not an arg position");
    }
    views.emplace_back(static_cast<std::uint32_t>(a));
  }
  return views;
}

Result<std::vector<std::optional<TensorMeta>>> read_generic_results(ObjectReader& r) {
  CAPSIM_TRY_ASSIGN(const Json* v, r.value("results"));
  const std::string path = r.path_of("results");
  if (!v->is_array()) return field_error(path, "must be an array");
  if (v->size() > kMaxGenericResults) {
    return field_error(path, fmt::format("more than {} entries", kMaxGenericResults));
  }
  std::vector<std::optional<TensorMeta>> results;
  for (std::size_t i = 0; i < v->size(); ++i) {
    if ((*v)[i].is_null()) {
      results.emplace_back();
      continue;
    }
    CAPSIM_TRY_ASSIGN(TensorMeta meta, read_tensor_meta((*v)[i], element_path(path, i)));
    results.emplace_back(std::move(meta));
  }
  return results;
}
}  // namespace

Json tensor_meta_json(const TensorMeta& meta) {
  return {{"sizes", meta.sizes},
          {"strides", meta.strides},
          {"storage_offset", meta.storage_offset},
          {"dtype", std::string(dtype_name(meta.dtype))}};
}

Result<TensorMeta> read_tensor_meta(const Json& j, const std::string& path) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, path));
  TensorMeta meta;
  CAPSIM_TRY(assign(meta.sizes, read_meta_dims(r, "sizes")));
  CAPSIM_TRY(assign(meta.strides, read_meta_dims(r, "strides")));
  if (meta.strides.size() != meta.sizes.size()) {
    return field_error(r.path_of("strides"), "not one per dim of sizes");
  }
  CAPSIM_TRY(assign(meta.storage_offset, r.integer("storage_offset")));
  if (meta.storage_offset < 0 || meta.storage_offset > kMaxTensorElements) {
    return field_error(r.path_of("storage_offset"), "out of range");
  }
  CAPSIM_TRY_ASSIGN(const std::string dtype, r.string("dtype"));
  using Enum = DType;
  CAPSIM_TRY(assign(meta.dtype, from_name<Enum>(dtype, r.path_of("dtype"), "dtype",
                                                {CAPSIM_DTYPES(CAPSIM_PAIR_)})));
  CAPSIM_TRY(r.finish());
  return meta;
}

void write_generic_fields(Json& j, const BodyOp& op) {
  const GenericOp& g = op.generic;
  j["target"] = g.target;
  if (!g.attrs.empty()) j["attrs"] = g.attrs;
  Json results = Json::array();
  for (const auto& meta : g.results) results.push_back(meta ? tensor_meta_json(*meta) : Json());
  j["results"] = std::move(results);
  if (!g.views.empty()) {
    Json views = Json::array();
    for (const auto& v : g.views) views.push_back(v ? Json(*v) : Json());
    j["views"] = std::move(views);
  }
  if (!g.writes.empty()) j["writes"] = g.writes;
}

Status read_generic_fields(ObjectReader& r, BodyOp& op) {
  GenericOp& g = op.generic;
  CAPSIM_TRY(assign(g.target, r.string("target")));
  if (r.has("attrs")) CAPSIM_TRY(assign(g.attrs, r.string("attrs")));
  CAPSIM_TRY(assign(g.results, read_generic_results(r)));
  if (r.has("views")) CAPSIM_TRY(assign(g.views, read_generic_views(r)));
  if (r.has("writes")) {
    CAPSIM_TRY_ASSIGN(const Json* w, r.value("writes"));
    if (w->is_array() && w->size() > kMaxGenericArgs) {
      return field_error(r.path_of("writes"), fmt::format("more than {}", kMaxGenericArgs));
    }
    CAPSIM_TRY(assign(g.writes, r.index_list("writes")));
  }
  if (Status s = validate_generic(op); !s.ok()) {
    std::string path = r.path_of("op");  // "ops[3].op": the error is the op's
    path.resize(path.size() - std::string_view(".op").size());
    return field_error(path, s.error().message);
  }
  return {};
}

}  // namespace capsim
