// The failure corpus: shrunk counterexamples kept as traces and replayed
// before `capsim check` generates anything.
//
// RapidCheck's `reproduce` strings name a path through its generators, so
// they stop meaning anything once a generator changes; a trace names the
// program itself. A counterexample that `--save-failures` wrote (or any
// trace) becomes a regression when it is copied to properties/regressions/
// as <property>.<label>.jsonl: its functions, actions, seed and config are
// run again in the sound model under that property's check. Its events are
// ignored (they may come from the model that failed); a regression may hold
// none at all (a program-only trace whose header observes nothing).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/core/cudagraph_config.hpp"
#include "sim/program/program.hpp"

namespace capsim {

struct Property;

struct Regression {
  std::string file;      // the file name, without its folder (for reports)
  std::string property;  // the property its name starts with
  std::uint64_t seed = 0;
  CudagraphConfig config;
  Program program;
};

// The limit on regressions in one folder (each is a whole program).
inline constexpr std::size_t kMaxRegressions = 10000;

// Every *.jsonl in `dir`, by file name. A folder that does not exist holds
// none. A file whose name starts with no property of `catalogue` that can
// replay regressions, or that does not read, is an error naming it.
Result<std::vector<Regression>> load_regressions(const std::string& dir,
                                                 std::span<const Property> catalogue);

}  // namespace capsim
