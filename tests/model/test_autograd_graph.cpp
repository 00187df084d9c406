// AutogradGraph: building, next edges in output order, in edges, the DAG
// check and the deterministic topological order; bad graphs are precise
// errors (an edge to a missing node or input_nr, a cyclic graph).
#include <doctest/doctest.h>

#include "model/autograd_graph.hpp"

namespace capsim {
namespace {

InputMetadata grad_meta(Dims sizes) {
  return InputMetadata{contiguous_meta(sizes).value()};
}

AutogradNode functional(std::string name, std::uint32_t inputs, std::uint32_t outputs) {
  AutogradNode n;
  n.kind = AutogradNodeKind::kFunctional;
  n.name = std::move(name);
  n.inputs.assign(inputs, grad_meta({4}));
  n.num_outputs = outputs;
  return n;
}

AutogradNode accumulate(TensorId variable) {
  AutogradNode n;
  n.kind = AutogradNodeKind::kAccumulateGrad;
  n.inputs.assign(1, grad_meta({4}));
  n.variable = variable;
  return n;
}

// loss = (x * w).sum(): GraphRoot -> SumBackward0 -> MulBackward0 -> AccumulateGrad(w)
struct MulSum {
  AutogradGraph g;
  AutogradNodeId root, sum, mul, acc;
  MulSum() {
    AutogradNode r;
    r.kind = AutogradNodeKind::kGraphRoot;
    r.num_outputs = 1;
    root = g.add_node(r).value();
    sum = g.add_node(functional("SumBackward0", 1, 1)).value();
    mul = g.add_node(functional("MulBackward0", 1, 2)).value();
    acc = g.add_node(accumulate(TensorId{7})).value();
    REQUIRE(g.add_edge(root, 0, sum, 0).ok());
    REQUIRE(g.add_edge(sum, 0, mul, 0).ok());
    REQUIRE(g.add_edge(mul, 1, acc, 0).ok());  // output 0 (grad of x) stays invalid
  }
};

TEST_CASE("autograd graph: next edges are per output, in output order, invalid ones empty") {
  MulSum m;
  const auto next = m.g.next_edges(m.mul);
  REQUIRE(next.size() == 2);
  CHECK_FALSE(next[0].has_value());
  CHECK(next[1] == std::optional<NextEdge>(NextEdge{m.acc, 0}));
  CHECK(m.g.in_edges(m.acc) == std::vector<InEdge>{{m.mul, 1, 0}});
  CHECK(m.g.node(m.root).name == "GraphRoot");
  CHECK(describe_node(m.g, m.mul) == "node 2 (MulBackward0)");
}

TEST_CASE("autograd graph: topological order is deterministic and respects every edge") {
  MulSum m;
  CHECK(m.g.topological_order().value() ==
        std::vector<AutogradNodeId>{m.root, m.sum, m.mul, m.acc});
  // Fan-in: two edges into one input of one node (an InputBuffer sum).
  AutogradGraph g;
  AutogradNode r;
  r.kind = AutogradNodeKind::kGraphRoot;
  r.num_outputs = 2;
  const auto root = g.add_node(r).value();
  const auto a = g.add_node(functional("AddBackward0", 1, 1)).value();
  const auto b = g.add_node(functional("MulBackward0", 1, 1)).value();
  const auto acc = g.add_node(accumulate(TensorId{1})).value();
  REQUIRE(g.add_edge(root, 0, b, 0).ok());
  REQUIRE(g.add_edge(root, 1, a, 0).ok());
  REQUIRE(g.add_edge(a, 0, acc, 0).ok());
  REQUIRE(g.add_edge(b, 0, acc, 0).ok());
  CHECK(g.in_edges(acc).size() == 2);
  CHECK(g.topological_order().value() == std::vector<AutogradNodeId>{root, a, b, acc});
}

TEST_CASE("autograd graph: bad edges and cycles are errors that name the nodes") {
  MulSum m;
  auto missing = m.g.add_edge(m.mul, 0, 99, 0);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message ==
        "autograd graph: edge from node 2 (MulBackward0) output 0 to node 99 (missing): no such "
        "node");
  auto bad_input = m.g.add_edge(m.mul, 0, m.acc, 3);
  REQUIRE_FALSE(bad_input.ok());
  CHECK(bad_input.error().message.find("input_nr 3 out of range (1 inputs)") != std::string::npos);
  auto bad_output = m.g.add_edge(m.mul, 2, m.acc, 0);
  REQUIRE_FALSE(bad_output.ok());
  CHECK(bad_output.error().message.find("output 2 out of range") != std::string::npos);
  auto twice = m.g.add_edge(m.mul, 1, m.acc, 0);
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().message.find("already has an edge") != std::string::npos);

  AutogradGraph c;
  const auto x = c.add_node(functional("MulBackward0", 1, 1)).value();
  const auto y = c.add_node(functional("AddBackward0", 1, 1)).value();
  REQUIRE(c.add_edge(x, 0, y, 0).ok());
  REQUIRE(c.add_edge(y, 0, x, 0).ok());
  const Status acyclic = c.check_acyclic();
  REQUIRE_FALSE(acyclic.ok());
  CHECK(acyclic.error().message ==
        "autograd graph: cycle: the edge from node 1 (AddBackward0) to node 0 (MulBackward0) "
        "closes it (a backward graph is a DAG)");
  CHECK_FALSE(c.topological_order().ok());
}

TEST_CASE("autograd graph: kind and hook names come from their X-macro tables") {
  CHECK(autograd_node_kind_name(AutogradNodeKind::kAotBackward) == "CompiledFunctionBackward");
  CHECK(autograd_node_kind_name(AutogradNodeKind::kCopySlices) == "CopySlices");
  CHECK(autograd_hook_kind_name(AutogradHookKind::kPostAccGrad) == "post_acc_grad_hook");
}

}  // namespace
}  // namespace capsim
