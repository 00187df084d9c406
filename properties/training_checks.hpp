// The loop properties (`loop.*`) as plain checks over a training loop's
// World (training_programs.hpp). Each returns nullopt when the property
// holds, else one line naming the first event that breaks it.
//
// A loop may leave PyTorch's contract: a .grad kept across a generation is a
// freed cudagraph output, and the model predicts E1 where PyTorch raises.
// From the first error event on, PyTorch's program would have stopped, so the
// checks look only at the events before it.
#pragma once

#include <optional>
#include <string>

#include "properties/training_programs.hpp"
#include "sim/world/world.hpp"

namespace capsim {

using CheckResult = std::optional<std::string>;

// loop.replay-equals-eager: every value the program reads equals, bitwise,
// the same read of the same program run all eager (WorldOptions::all_eager).
CheckResult check_loop_equals_eager(const World& world, const World& eager);
// loop.grads-not-copied-when-backward-cudagraphed: each optimizer-step replay
// copies 0 bytes when the grads came from a backward recorded on its path,
// and exactly the grads' bytes when the backward ran eagerly.
CheckResult check_loop_grad_copies(const World& world, const TrainingProgram& t);
// loop.no-proxy-metadata-read: no compiled backward's capture read proxy
// metadata.
CheckResult check_loop_no_metadata_read(const World& world);

}  // namespace capsim
