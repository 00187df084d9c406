// Structure-aware mutations of trace files, for both fuzz drivers.
//
// The driver without libFuzzer (fuzz_driver_main.cpp) applies them to the
// corpus; under libFuzzer, custom_mutator.cpp applies them to half of the
// inputs and libFuzzer's own byte-level mutations to the rest. They mix
// byte-level damage (flipped bytes, cuts, runs of '[', odd UTF-8, control
// bytes, a list grown to thousands of elements) with line-level edits (a line
// duplicated, dropped or swapped, a number replaced by a boundary value: 0,
// -1, 2^31, 2^63-1, 2^64, 1e400, ...) that can keep the envelope valid,
// renumbering `seq`, action indices and events' actions afterwards, so that
// replay runs deep.
#pragma once

#include <string>

#include "tests/support/lcg.hpp"

namespace capsim::fuzz {

// One mutation of `s`, chosen by `rng`.
void mutate_once(std::string& s, capsim::testing::Lcg& rng);
// One to four mutations of `seed`.
std::string mutate(const std::string& seed, capsim::testing::Lcg& rng);

}  // namespace capsim::fuzz
