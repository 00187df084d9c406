// Built-in scenarios, part 2 (see scenarios_trees.cpp).
#include "sim/scenario_support.hpp"

namespace capsim {

void add_more_tree_scenarios(std::vector<Scenario>& /*out*/) {}

}  // namespace capsim
