// Drawings of compiled autograd's two graphs: the AutogradGraph that a
// forward built, and the FxGraph that compiled autograd captured from it.
//
// The autograd graph is drawn in torchviz's style (make_dot): one grey box per
// Node with its kind and saved SymInts, an orange box per saved tensor with
// its shape, a light blue box for the leaf an AccumulateGrad writes, and
// edges from each next function to the node that feeds it, labelled with the
// `input_nr` they arrive at. Ids are the graph's dense node ids (`n3`), never
// addresses, so two runs diff. The captured graph is drawn in the style of
// FX's FxGraphDrawer: placeholders and the output in fixed colours, every call
// coloured by a hash of its target (so an op keeps its colour in every graph),
// the node's name, target and arguments in the label, and one edge per node
// argument, labelled with its position. Ids are the FX node names, which
// torch.fx derives from the targets.
#pragma once

#include "model/autograd_graph.hpp"
#include "model/fx_graph.hpp"
#include "model/tensor_store.hpp"
#include "render/draw_graph.hpp"

namespace capsim {

// `store` resolves saved tensors' shapes; null draws them without.
DrawGraph draw_autograd_graph(const AutogradGraph& graph, const TensorStore* store,
                              std::string name);
DrawGraph draw_fx_graph(const FxGraph& graph, std::string name);

}  // namespace capsim
