// The rules `capsim explain` cites: per event kind and id or reason, a title,
// the rule in words with the PyTorch function that applies it, and the usual
// fix. They are the decisions table (sim/core/decisions.def), which the
// emitters name too, so every id and reason the model emits has a rule.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace capsim {

struct ExplainRule {
  std::string key;         // "record:static_input_idx_mismatch", "error:E1", "copy_in"
  std::string_view title;  // what kind of decision it is, a few words
  std::string_view rule;   // the rule, naming PyTorch's function
  std::string_view fix;    // the usual fix; empty when nothing needs fixing
};

// The rule for `key`, or null.
const ExplainRule* find_explain_rule(std::string_view key);
const std::vector<ExplainRule>& explain_rules();

}  // namespace capsim
