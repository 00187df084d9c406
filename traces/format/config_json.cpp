// The config object of a trace header (docs/trace-format.md §3): the
// settings that steer the tree manager, the torch profile, and the knobs of
// newer releases, each written only when it differs from its default.
#include <fmt/format.h>

#include "sim/core/function_def.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/format/program_json.hpp"

namespace capsim {

// --- Config ----------------------------------------------------------------

namespace {

// The knobs of newer releases are additive too: each is written only when it
// differs from its default, and a trace without it reads the default.
}  // namespace

Json newer_config_to_json(const CudagraphConfig& c) {
  Json j = Json::object();
  const CudagraphConfig d;
  if (!c.cudagraphs) j["cudagraphs"] = false;
  if (c.graph_partition) j["graph_partition"] = *c.graph_partition;
  if (c.cudagraph_min_partition_size != d.cudagraph_min_partition_size) {
    j["cudagraph_min_partition_size"] = c.cudagraph_min_partition_size;
  }
  if (c.cudagraph_capture_sizes) j["cudagraph_capture_sizes"] = *c.cudagraph_capture_sizes;
  if (c.cudagraph_skip_dynamic_graphs) j["cudagraph_skip_dynamic_graphs"] = true;
  if (c.cudagraph_dynamic_shape_warn_limit) {
    j["cudagraph_dynamic_shape_warn_limit"] = *c.cudagraph_dynamic_shape_warn_limit;
  }
  if (c.cudagraph_dynamic_shape_rerecord_limit) {
    j["cudagraph_dynamic_shape_rerecord_limit"] = *c.cudagraph_dynamic_shape_rerecord_limit;
  }
  if (c.cudagraph_or_error) j["cudagraph_or_error"] = true;
  if (c.cudagraph_trees_generation_cloning) {
    j["cudagraph_trees_generation_cloning"] = "user_visible";
  }
  if (!c.caching_allocator_enabled) j["caching_allocator_enabled"] = false;
  if (c.cudagraph_managed_input_rerecord_limit != d.cudagraph_managed_input_rerecord_limit) {
    j["cudagraph_managed_input_rerecord_limit"] = c.cudagraph_managed_input_rerecord_limit;
  }
  if (c.cudagraph_managed_input_rerecord_action != d.cudagraph_managed_input_rerecord_action) {
    j["cudagraph_managed_input_rerecord_action"] =
        std::string(managed_input_action_name(c.cudagraph_managed_input_rerecord_action));
  }
  return j;
}

namespace {

// A count that must lie in [0, limit].
Result<std::int64_t> read_count(ObjectReader& r, std::string_view key, std::int64_t limit) {
  CAPSIM_TRY_ASSIGN(const std::int64_t v, r.integer(key));
  if (v < 0 || v > limit) {
    return field_error(r.path_of(key), fmt::format("must be 0 to {}, got {}", limit, v));
  }
  return v;
}

Result<std::vector<std::vector<std::int64_t>>> read_capture_sizes(ObjectReader& r) {
  CAPSIM_TRY_ASSIGN(const Json* v, r.value("cudagraph_capture_sizes"));
  const std::string path = r.path_of("cudagraph_capture_sizes");
  if (!v->is_array() || v->size() > kMaxCaptureSizes) {
    return field_error(
        path, fmt::format("expected an array of at most {} int keys (arrays)", kMaxCaptureSizes));
  }
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t k = 0; k < v->size(); ++k) {
    const Json& key = (*v)[k];
    if (!key.is_array() || key.size() > kMaxBodyInputs) {
      return field_error(fmt::format("{}[{}]", path, k), "expected an array of integers");
    }
    std::vector<std::int64_t> ints;
    for (const Json& i : key) {
      if (!i.is_number_integer()) {
        return field_error(fmt::format("{}[{}]", path, k), "expected an array of integers");
      }
      ints.push_back(i.get<std::int64_t>());
    }
    out.push_back(std::move(ints));
  }
  return out;
}

Status newer_config_from_json(ObjectReader& r, CudagraphConfig& c) {
  if (r.has("cudagraphs")) CAPSIM_TRY(assign(c.cudagraphs, r.boolean("cudagraphs")));
  if (r.has("graph_partition")) {
    CAPSIM_TRY_ASSIGN(const bool v, r.boolean("graph_partition"));
    c.graph_partition = v;
  }
  if (r.has("cudagraph_min_partition_size")) {
    CAPSIM_TRY(assign(c.cudagraph_min_partition_size,
                      read_count(r, "cudagraph_min_partition_size", kMaxBodyOps)));
  }
  if (r.has("cudagraph_capture_sizes")) {
    CAPSIM_TRY_ASSIGN(auto sizes, read_capture_sizes(r));
    c.cudagraph_capture_sizes = std::move(sizes);
  }
  if (r.has("cudagraph_skip_dynamic_graphs")) {
    CAPSIM_TRY(assign(c.cudagraph_skip_dynamic_graphs, r.boolean("cudagraph_skip_dynamic_graphs")));
  }
  constexpr std::int64_t kMaxKeys = std::int64_t{1} << 20;
  if (r.has("cudagraph_dynamic_shape_warn_limit")) {
    CAPSIM_TRY_ASSIGN(const std::int64_t v,
                      read_count(r, "cudagraph_dynamic_shape_warn_limit", kMaxKeys));
    c.cudagraph_dynamic_shape_warn_limit = v;
  }
  if (r.has("cudagraph_dynamic_shape_rerecord_limit")) {
    CAPSIM_TRY_ASSIGN(const std::int64_t v,
                      read_count(r, "cudagraph_dynamic_shape_rerecord_limit", kMaxKeys));
    c.cudagraph_dynamic_shape_rerecord_limit = v;
  }
  if (r.has("cudagraph_or_error")) {
    CAPSIM_TRY(assign(c.cudagraph_or_error, r.boolean("cudagraph_or_error")));
  }
  if (r.has("cudagraph_trees_generation_cloning")) {
    CAPSIM_TRY_ASSIGN(const std::string mode, r.string("cudagraph_trees_generation_cloning"));
    if (mode != "user_visible") {
      return field_error(r.path_of("cudagraph_trees_generation_cloning"),
                         fmt::format("expected \"user_visible\" (absent: None), got '{}'", mode));
    }
    c.cudagraph_trees_generation_cloning = true;
  }
  if (r.has("caching_allocator_enabled")) {
    CAPSIM_TRY(assign(c.caching_allocator_enabled, r.boolean("caching_allocator_enabled")));
  }
  if (r.has("cudagraph_managed_input_rerecord_limit")) {
    CAPSIM_TRY(assign(c.cudagraph_managed_input_rerecord_limit,
                      read_count(r, "cudagraph_managed_input_rerecord_limit", kMaxKeys)));
  }
  if (r.has("cudagraph_managed_input_rerecord_action")) {
    CAPSIM_TRY_ASSIGN(const std::string name, r.string("cudagraph_managed_input_rerecord_action"));
    const std::optional<ManagedInputAction> action = managed_input_action_from_name(name);
    if (!action) {
      return field_error(r.path_of("cudagraph_managed_input_rerecord_action"),
                         fmt::format("expected \"copy\" or \"skip\", got '{}'", name));
    }
    c.cudagraph_managed_input_rerecord_action = *action;
  }
  return {};
}

}  // namespace
// A field added to CudagraphConfig must be added to both functions; the test
// flips every written field, and the reader requires them all.

Json config_to_json(const CudagraphConfig& c) {
  Json j = {{"inline_inbuilt_nn_modules", c.inline_inbuilt_nn_modules},
            {"cudagraph_support_input_mutation", c.cudagraph_support_input_mutation},
            {"cudagraph_unexpected_rerecord_limit", c.cudagraph_unexpected_rerecord_limit},
            {"skip_cudagraph_warmup", c.skip_cudagraph_warmup},
            {"force_cudagraphs_warmup", c.force_cudagraphs_warmup},
            {"slow_path_cudagraph_asserts", c.slow_path_cudagraph_asserts},
            {"zero_grad_static_error", c.zero_grad_static_error},
            {"plain_api", c.plain_api},
            {"poison_freed", c.poison_freed}};
  // Additive: written only when it is not classic, which a trace without it
  // means, so that traces of the classic model keep their bytes.
  if (c.torch_profile != TorchProfile::kClassic) {
    j["torch_profile"] = std::string(torch_profile_name(c.torch_profile));
  }
  j.update(newer_config_to_json(c));
  return j;
}

Result<CudagraphConfig> config_from_json(const Json& j, std::string path) {
  CAPSIM_TRY_ASSIGN(ObjectReader r, ObjectReader::of(j, std::move(path)));
  CudagraphConfig c;
  CAPSIM_TRY(assign(c.inline_inbuilt_nn_modules, r.boolean("inline_inbuilt_nn_modules")));
  CAPSIM_TRY(
      assign(c.cudagraph_support_input_mutation, r.boolean("cudagraph_support_input_mutation")));
  CAPSIM_TRY(assign(c.cudagraph_unexpected_rerecord_limit,
                    r.integer("cudagraph_unexpected_rerecord_limit")));
  CAPSIM_TRY(assign(c.skip_cudagraph_warmup, r.boolean("skip_cudagraph_warmup")));
  CAPSIM_TRY(assign(c.force_cudagraphs_warmup, r.boolean("force_cudagraphs_warmup")));
  CAPSIM_TRY(assign(c.slow_path_cudagraph_asserts, r.boolean("slow_path_cudagraph_asserts")));
  CAPSIM_TRY(assign(c.zero_grad_static_error, r.boolean("zero_grad_static_error")));
  CAPSIM_TRY(assign(c.plain_api, r.boolean("plain_api")));
  CAPSIM_TRY(assign(c.poison_freed, r.boolean("poison_freed")));
  if (r.has("torch_profile")) {
    CAPSIM_TRY_ASSIGN(const std::string name, r.string("torch_profile"));
    const std::optional<TorchProfile> p = torch_profile_from_name(name);
    if (!p) {
      return field_error(r.path_of("torch_profile"),
                         fmt::format("unknown torch profile '{}' (this build knows {})", name,
                                     known_torch_profiles()));
    }
    c.torch_profile = *p;
  }
  CAPSIM_TRY(newer_config_from_json(r, c));
  if (const std::optional<ConfigProblem> p = config_problem(c)) {
    return field_error(r.path_of(p->key), p->message);
  }
  CAPSIM_TRY(r.finish());
  return c;
}

}  // namespace capsim
