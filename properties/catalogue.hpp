// The property catalogue: every property `capsim check` runs, in a fixed
// order, each with its stable name, statement, spec section, generator and
// negative control (property.hpp). `capsim check --list` prints it.
//
// Names are `<area>.<what-holds>` and never change once published: CI
// filters, JUnit files and saved failures refer to them.
#pragma once

#include <string_view>
#include <vector>

#include "properties/property.hpp"

namespace capsim {

const std::vector<Property>& property_catalogue();
const Property* find_property(std::string_view name);

}  // namespace capsim
