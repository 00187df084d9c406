// ReplayMirror: a second backend that runs every graph the model runs.
//
// The CPU backend is the model; a mirror (the CUDA reference backend, or a
// second CPU backend in the host tests) is told of every program the model
// instantiates and of every replay, before and after it, with the simulated
// memory as it stands. Before a replay the mirror makes its memory equal to
// the model's (the eager work between replays is the model's business, not
// the graph's); after it, it replays its own copy of the graph and compares:
// the baked pointers it read back against the program's, and its memory
// against the model's, bit for bit. What is compared is therefore exactly
// the graph: the same addresses and the same float32 sequence. A replay that
// reads stale memory must read the same stale bytes on both sides.
//
// The mirror only observes: a disagreement never changes the model's run, it
// is kept (the first one) for the property that asks. The evidence of each
// replay (GraphEvidence) is what `device` events report.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/backend.hpp"
#include "model/device_memory.hpp"
#include "model/graph_evidence.hpp"
#include "model/step_program.hpp"

namespace capsim {

class ReplayMirror {
 public:
  virtual ~ReplayMirror() = default;

  virtual std::string_view name() const = 0;
  // The backend and machine behind it (Backend::describe).
  virtual std::string describe() const { return std::string(name()); }
  // The model froze `program` as `handle`; every segment it bakes is mapped
  // in `memory`.
  virtual void instantiated(GraphHandle handle, const StepProgram& program,
                            const DeviceMemory& memory) = 0;
  // The model is about to replay `handle` over `memory` / has just done so.
  virtual void before_replay(GraphHandle handle, const DeviceMemory& memory) = 0;
  virtual void after_replay(GraphHandle handle, const DeviceMemory& memory) = 0;
  // What the mirror observed at `handle`'s last replay; nullopt before its
  // first replay or after a disagreement.
  virtual std::optional<GraphEvidence> evidence(GraphHandle handle) const = 0;
  // The first disagreement with the model (or failure of the mirror's own
  // backend), one line; nullopt while they agree.
  virtual const std::optional<std::string>& disagreement() const = 0;
};

}  // namespace capsim
