// reference.agrees: the model and a reference backend, side by side.
//
// `capsim check --backend cuda` (or `host`, the stand-in that runs without
// a GPU) appends this property to the catalogue. Every generated cudagraph
// program runs twice, with cudagraph trees and with the plain API (whose
// stale reads the reference must reproduce), each time in two Worlds: the
// model alone, and the model with a ReplayMirror (model/replay_mirror.hpp)
// over the reference backend. Both emit `device` events. It holds when the
// mirror never disagreed (same baked pointers, translated to simulated
// addresses, and bitwise equal memory after every replay) and both Worlds
// emitted the same events, the digests of the `device` events included.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "model/replay_mirror.hpp"
#include "properties/catalogue.hpp"
#include "properties/cudagraph_programs.hpp"
#include "properties/property.hpp"

namespace capsim {

// A fresh mirror for one World, with `fault` (kNone or a kMirror fault,
// model/fault.hpp): the sound one, or the broken one the control must catch.
using MirrorFactory = std::function<Result<std::unique_ptr<ReplayMirror>>(Fault fault)>;

// nullopt when the reference agrees with the model on `generated`, else one
// line naming the API, and the first disagreement or differing event.
// `fault`'s mirror part goes to the mirror, its tree part to both Worlds.
std::optional<std::string> check_reference_agrees(const GeneratedProgram& generated,
                                                  const MirrorFactory& factory, Fault fault);

// The property, over random cudagraph programs; its control is mirror fault
// skip_upload, which `control` describes (a string with static storage).
// Sound cases run with the setting's fault, and under its torch profile when
// it pins one (catalogue.hpp: CaseSetting).
Property reference_property(MirrorFactory factory, std::string_view control,
                            const CaseSetting& setting = {});

// `base` (a catalogue) with reference.agrees appended.
std::vector<Property> catalogue_with_reference(std::vector<Property> base, MirrorFactory factory,
                                               std::string_view control,
                                               const CaseSetting& setting = {});

}  // namespace capsim
