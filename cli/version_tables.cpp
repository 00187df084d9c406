// The tables of `capsim version` (see version_tables.hpp).
#include "cli/version_tables.hpp"

#include <fmt/format.h>

#include <string>

#include "sim/core/decisions.hpp"
#include "sim/core/torch_profile.hpp"
#include "traces/format/program_json.hpp"

namespace capsim::cli {

int print_profiles() {
  for (int i = 0; i < static_cast<int>(capsim::TorchProfile::kCount); ++i) {
    const auto p = static_cast<capsim::TorchProfile>(i);
    const capsim::TorchProfileRules& r = capsim::profile_rules(p);
    fmt::print("{:<8} PyTorch {}{}\n", r.name, r.releases,
               p == capsim::kNewestTorchProfile ? " (the newest)" : "");
    for (const std::string& line : capsim::describe_profile(r)) fmt::print("  {}\n", line);
  }
  fmt::print("not modelled in any profile yet: {}\n", capsim::kNotModelledInAnyProfile);
  return 0;
}

int print_decisions(bool json) {
  if (!json) {
    for (const capsim::DecisionInfo& d : capsim::decisions()) {
      fmt::print("{:<52} {}\n", capsim::decision_rule_key(d), d.title);
    }
    return 0;
  }
  capsim::Json out = capsim::Json::array();
  for (const capsim::DecisionInfo& d : capsim::decisions()) {
    out.push_back({{"rule_key", capsim::decision_rule_key(d)},
                   {"kind", capsim::event_kind_name(d.kind)},
                   {"key", d.key},
                   {"title", d.title},
                   {"rule", d.rule},
                   {"fix", d.fix}});
  }
  fmt::print("{}\n", out.dump(2));
  return 0;
}

int print_action_schema() {
  fmt::print("{}\n", capsim::action_schema_json().dump(2));
  return 0;
}

}  // namespace capsim::cli
