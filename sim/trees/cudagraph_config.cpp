// Which of CudagraphConfig's newer knobs a profile's release has.
#include "sim/trees/cudagraph_config.hpp"

#include <fmt/format.h>

namespace capsim {

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
