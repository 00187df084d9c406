// The property catalogue: every property `capsim check` runs, in a fixed
// order, each with its stable name, statement, spec section, generator and
// negative control (property.hpp). `capsim check --list` prints it.
//
// Names are `<area>.<what-holds>` and never change once published: CI
// filters, JUnit files and saved failures refer to them.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "properties/property.hpp"
#include "sim/core/torch_profile.hpp"

namespace capsim {

const std::vector<Property>& property_catalogue();
const Property* find_property(std::string_view name);

// Whether `capsim check --inject` takes `fault`: a fault of a site the
// catalogue's sound cases build (tree, run, capture).
bool injectable(Fault fault);
// What every generated case of a catalogue runs with: a fault injected into
// the sound cases (`--inject`, injectable: a model with a bug the catalogue
// never named, to show the properties catch it; docs/properties.md; controls
// still run their own faults) and, when pinned (`--torch`), one torch profile
// instead of the generators' draw. Saved regressions keep the sound model
// and their own header's profile.
struct CaseSetting {
  Fault injected = Fault::kNone;
  std::optional<TorchProfile> torch;
};
std::vector<Property> catalogue_with(const CaseSetting& setting);
std::vector<Property> catalogue_with_injected(Fault injected);

}  // namespace capsim
