// The cudagraph-tree properties as plain checks over one finished World.
//
// Each check returns nullopt when the property holds, else one line saying
// what broke (the first offending event where there is one). They read only
// the World's counters, its event log and the generator's bookkeeping; the
// `capsim check` catalogue binds them to generators (catalogue.cpp), and
// tests/properties/test_catalogue.cpp runs that catalogue. The rules are those
// of docs/cudagraph-trees.md §3 to §6 and the invariants of its §10; the
// section numbers below are that page's.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "properties/cudagraph_programs.hpp"
#include "sim/world/world.hpp"

namespace capsim {

// Runs `generated` in a fresh World with `options` (its seed replaced by the
// program's). `status` gets World::run's result: any error is bad input.
std::unique_ptr<World> run_generated(const GeneratedProgram& generated, WorldOptions options,
                                     Status& status);
// The same, with the number of actions that ran without an error.
std::unique_ptr<World> run_generated(const GeneratedProgram& generated, WorldOptions options,
                                     Status& status, std::size_t& completed);

using CheckResult = std::optional<std::string>;

// Two runs of one program (the second maybe with another seed), for the
// determinism properties. Past the end of PyTorch's contract a call may
// raise where PyTorch raises (an E1: it takes an output a later generation
// overwrote), and its outputs are never bound, so a later action of the
// program may name nothing and fail. Such a failure, after a modelled error
// (an `error` event), must be the same in both runs: the same action, the
// same message. A failure with no error before it is the generator's bug
// ("bad input"). `ending` holds what was wrong, if anything; `completed`
// the actions the first run completed.
struct TwoRuns {
  std::unique_ptr<World> first, second;
  CheckResult ending;
  std::size_t completed = 0;
};
TwoRuns run_twice(const GeneratedProgram& generated, const GeneratedProgram& again,
                  const WorldOptions& options);

// P-replay: every replay's outputs equal eager execution on the same inputs.
CheckResult check_replays_match_eager(const World& world);
// P-static: no replay read a static or managed input that was freed or moved
// since the recording baked it in.
CheckResult check_static_inputs_stable(const World& world);
// P-copies: each tree replay copies exactly its node's non-static inputs (one
// copy_in per replay, `copies` = |non_static_input_idxs|, numel floats each),
// and each recording classifies the inputs the program made static as static
// and plain eager tensors as non-static (docs/cudagraph-trees.md §3, invariant 6 of §10).
CheckResult check_copies(const World& world, const GeneratedProgram& generated);
// P-pool: every pool check (warmup, recording, checkpoint) found the pool's
// live blocks equal to the live tracked outputs: no E6/E7, and each
// checkpoint left exactly its live set allocated (docs/cudagraph-trees.md §5,
// invariant 5 of §10).
CheckResult check_pool(const World& world);
// optimizer.finalizer-releases: every dropped optimizer left none of its
// state alive (compiled-optimizer finalizer, pytorch/pytorch#107504;
// docs/cudagraph-trees.md §6).
CheckResult check_finalizer_releases(const World& world);
// cudagraphs.static-never-reallocated: between an optimizer's creation and
// its drop, every recording of its step bakes in the same address for each
// state buffer: the state is updated in place, never reallocated (docs/cudagraph-trees.md §6).
CheckResult check_optimizer_state_static(const World& world);
// Determinism: the same event log, event for event.
CheckResult check_same_events(const World& a, const World& b);

}  // namespace capsim
