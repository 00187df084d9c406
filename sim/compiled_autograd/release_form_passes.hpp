// The passes AutogradCompilerInstance.end_capture runs on a captured graph
// (torch/_dynamo/compiled_autograd.py, 2.8.0 to 2.15.0), in its order:
// delay_unpack_hook_nodes, reorder_tensor_pre_hook_nodes,
// reorder_pre_hook_nodes_to_schedule_asap, reorder_accumulate_grad_nodes,
// reorder_pre_hook_nodes_to_mimic_eager, reorder_post_acc_grad_hook_nodes,
// reorder_post_hook_nodes, dce and remove_unused_sizes.
//
// Each pass moves nodes the way torch.fx's Node.append and Node.prepend do,
// on the order the graph has when the pass starts, so that ties come out as
// PyTorch's do. The passes cost O(n) per move: a release-form graph is
// printed or compared, never built at the scale of capture benchmarks.
#pragma once

#include <vector>

#include "model/fx_graph.hpp"

namespace capsim {

// `placeholders` are inputs, sizes, scalars, hooks and packed_data, in order;
// `graph` ends with its output. The result has the passes' order, the dead
// nodes dropped, and the surviving `sizes[j]` renumbered from 0.
Result<FxGraph> run_end_capture_passes(const FxGraph& graph,
                                       const std::vector<FxNodeId>& placeholders);

}  // namespace capsim
