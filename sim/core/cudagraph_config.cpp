// Which of CudagraphConfig's newer knobs a profile's release has.
#include "sim/core/cudagraph_config.hpp"

#include <fmt/format.h>

namespace capsim {

std::string_view managed_input_action_name(ManagedInputAction action) {
  switch (action) {
#define CAPSIM_NAME_(e, name) \
  case ManagedInputAction::e: return name;
    CAPSIM_MANAGED_INPUT_ACTIONS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

std::optional<ManagedInputAction> managed_input_action_from_name(std::string_view name) {
#define CAPSIM_FIND_(e, n) \
  if (name == n) return ManagedInputAction::e;
  CAPSIM_MANAGED_INPUT_ACTIONS(CAPSIM_FIND_)
#undef CAPSIM_FIND_
  return std::nullopt;
}

std::optional<ConfigProblem> config_problem(const CudagraphConfig& c) {
  const TorchProfileRules& rules = profile_rules(c.torch_profile);
  const auto missing = [&](std::string_view key, std::string_view since) {
    return ConfigProblem{
        key, fmt::format("{} is not a knob of the '{}' profile's releases ({}); it exists from {}",
                         key, rules.name, rules.releases, since)};
  };
  if (c.cudagraph_or_error && !rules.has_cudagraph_or_error) {
    return missing("cudagraph_or_error", "2.9");
  }
  if (c.cudagraph_min_partition_size != 0 && !rules.has_min_partition_size) {
    return missing("cudagraph_min_partition_size", "2.12");
  }
  if (c.cudagraph_trees_generation_cloning && !rules.has_generation_cloning) {
    return missing("cudagraph_trees_generation_cloning", "2.14");
  }
  if (c.cudagraph_dynamic_shape_rerecord_limit && !rules.has_dynamic_shape_rerecord_limit) {
    return missing("cudagraph_dynamic_shape_rerecord_limit", "2.15");
  }
  const CudagraphConfig defaults;
  if (!rules.has_managed_input_demotion) {
    if (c.cudagraph_managed_input_rerecord_limit !=
        defaults.cudagraph_managed_input_rerecord_limit) {
      return missing("cudagraph_managed_input_rerecord_limit", "2.15");
    }
    if (c.cudagraph_managed_input_rerecord_action !=
        defaults.cudagraph_managed_input_rerecord_action) {
      return missing("cudagraph_managed_input_rerecord_action", "2.15");
    }
  }
  if (!c.caching_allocator_enabled && !rules.caching_allocator_skip) {
    // Older releases capture anyway and fail the pool check later; capsim
    // does not model an uncached allocator.
    return ConfigProblem{"caching_allocator_enabled",
                         fmt::format("an uncached allocator is modelled from 2.13 only (the "
                                     "'{}' profile's releases capture anyway)",
                                     rules.name)};
  }
  return std::nullopt;
}

}  // namespace capsim
