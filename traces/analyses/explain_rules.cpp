// The rules `capsim explain` cites (see explain_rules.hpp): the decisions
// table of sim/core/decisions.def, keyed as explain names its events.
#include "traces/analyses/explain_rules.hpp"

#include "sim/core/decisions.hpp"

namespace capsim {

const std::vector<ExplainRule>& explain_rules() {
  static const std::vector<ExplainRule> rules = [] {
    std::vector<ExplainRule> out;
    for (const DecisionInfo& d : decisions()) {
      out.push_back({decision_rule_key(d), d.title, d.rule, d.fix});
    }
    return out;
  }();
  return rules;
}

const ExplainRule* find_explain_rule(std::string_view key) {
  for (const ExplainRule& r : explain_rules()) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

}  // namespace capsim
