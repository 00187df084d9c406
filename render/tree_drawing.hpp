// The cudagraph tree of a run, drawn from its events.
//
// The tree is rebuilt from the trace's observations alone (warmup, record,
// replay, copy_in, checkpoint, path_end, shutdown, error events), never from
// the tree manager, so that a trace from any producer draws the same way and
// a recorded run can be diffed against the model's prediction of it. One box
// per warmup node (`w1` for node -1) and per recorded graph (`g0`; `t1.g0`
// once the manager was shut down and a new tree began), coloured by state
// (warmup, recorded, replayed, re-recorded, raised an error) and saying it in
// a row as well; edges go parent to child, a re-recording's edge says so and
// its box gives the CheckInvariantStatus that caused it with the input whose
// pointer moved; a checkpoint is a marker joined by a dotted edge to the node
// whose state the allocator was restored to. Compiled autograd's backwards,
// when the run has them, form a second chain: one box per backward with its
// cache decision and captured graph.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "render/draw_graph.hpp"
#include "sim/core/events.hpp"

namespace capsim {

// Events of one run, in order (a trace's event lines or a World's events).
DrawGraph draw_tree(std::span<const Event> events, std::string name);

}  // namespace capsim
