// The run-time skip oracle: which run-time skip PyTorch takes at each call of
// `g` in a program of runtime_skip_programs.hpp, written from the conditions
// docs/cudagraph-trees.md states (§2.3 steps 3, 4 and 7, §2.5's
// `cudagraph_or_error`, the §4 table's re-record limit, §4.1, the §7 skip
// table, invariants 9 and 17 of §10 and the "Version profiles" rows of the
// limit), not from the tree manager's code (sim/trees/), so that
// `cudagraphs.skips-as-documented.s1-runtime`, `.e5` and `.e9` catch a model
// whose run-time skip no longer fires.
//
// It reads `g`'s FunctionDef, the config (its release by name, as the doc's
// table does: no profile switch of the model) and what the generator knows of
// each call (RuntimeCall). What needs the tree manager's own state it
// derives only where the programs make it follow from the doc:
//   - the mutation gate's "cudagraph-managed" input is a row of the output of
//     `src`, called earlier in the same invocation (so on the tree path);
//   - the re-record limits count per (node, function) edge: the oracle
//     follows the one edge (src's graph, g) of programs whose every step
//     calls src (src then records once as a root and replays, and g's
//     recordings are its children), with the children it records and what
//     each checks; other programs get limits past their calls (the lowering).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "properties/runtime_skip_programs.hpp"
#include "sim/core/cudagraph_config.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

// What one call of `g` does, as the doc states it.
struct RuntimeVerdict {
  enum class Kind : std::uint8_t {
    kCompileTime,  // skipped when g compiled (skip_oracle.hpp): no run-time decision
    kNone,         // no run-time skip: warmup, recording or replay
    kLogged,       // a `skip` event with `id` and `fid`, then `eager reason` (or E8)
    kSilent,       // no event, `eager reason` (the skip was logged before)
  };
  Kind kind = Kind::kNone;
  std::optional<Decision> id;      // the skip (S1, E5, E9) for kLogged
  std::optional<Decision> reason;  // the eager event's decision for kLogged and kSilent
  bool raises = false;             // cudagraph_or_error: kLogged raises E8 where=run instead
  bool demotes = false;            // 2.15, action "copy": the call demotes the managed input
  std::string why;                 // in the doc's words, for a failure line
};

// One verdict per call of `program.calls`, in order.
std::vector<RuntimeVerdict> documented_runtime_skips(const RuntimeProgram& program);

}  // namespace capsim
