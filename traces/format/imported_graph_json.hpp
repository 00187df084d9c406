// The JSON form of the compiled-autograd actions a recorder of real PyTorch
// writes: `autograd_graph` (a walked autograd graph, sim/compiled_autograd/imported_graph.hpp)
// and `compiled_backward` (docs/trace-format.md §5.1).
//
// Same conventions as program_json: fields in struct order, defaults left
// out, unknown fields refused, errors `field '<path>': problem` with the path
// down to the element (`nodes[3].next[1][0]`). Structural checks that need
// the whole graph (an edge into a missing node, an unknown tensor, a cycle)
// are the World's, when the action runs.
#pragma once

#include "sim/compiled_autograd/imported_graph.hpp"
#include "traces/format/json_fields.hpp"

namespace capsim {

// The action's own fields (without "action").
void write_recorded_graph(Json& j, const DefineAutogradGraph& a);
Status read_imported_graph(ObjectReader& r, DefineAutogradGraph& a);
void write_compiled_backward(Json& j, const CompiledBackward& a);
Status read_compiled_backward(ObjectReader& r, CompiledBackward& a);

}  // namespace capsim
