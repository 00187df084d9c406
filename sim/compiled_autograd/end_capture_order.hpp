// The two passes of AutogradCompilerInstance.end_capture that capsim's
// capture runs (torch/_dynamo/compiled_autograd.py: reorder_accumulate_grad_nodes
// and the graph's dce), as one order of the nodes to keep, so that the
// Capturer rebuilds its graph once. Linear in the graph's nodes and uses: the
// capture benchmarks build graphs of 10^6 nodes.
//
// release_form_passes.hpp has every pass of end_capture, node for node, in a
// given release's order; these two are the ones whose effect on the captured
// graph's text capsim models at any scale.
#pragma once

#include <string_view>
#include <vector>

#include "model/fx_graph.hpp"

namespace capsim {

// A placeholder, or a getitem of one: what PyTorch lifts to the top of the
// graph (capsim lifts an input where it is first used).
bool is_input_like(const FxGraph& graph, FxNodeId n);

// Calls that dce keeps whether or not anything uses them.
bool impure_target(std::string_view target);

// PyTorch's reorder_accumulate_grad_nodes, as an order of all of `graph`'s
// nodes: each accumulate_grad_ moves to right after the later of its param
// and its grad's producer, unless that is an input.
std::vector<FxNodeId> accumulate_grad_order(const FxGraph& graph);

// PyTorch's dce, as a mask over `graph`'s nodes: those impure and those
// something kept uses.
std::vector<bool> live_nodes(const FxGraph& graph);

// accumulate_grad_order filtered by live_nodes. dce's liveness holds in
// either order (a node's uses precede it in both), so one filtered order
// does for both passes.
std::vector<FxNodeId> end_capture_order(const FxGraph& graph);

}  // namespace capsim
