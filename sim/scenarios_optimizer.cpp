// Built-in scenarios, part 3: the compiled optimizer (the seed PR).
#include "sim/scenario_support.hpp"

namespace capsim {

void add_optimizer_scenarios(std::vector<Scenario>& /*out*/) {}

}  // namespace capsim
