// FxGraph: node names as torch.fx derives them, the stable text form, the
// storage's contracts (rebuilds keep names and counts, equality by text), and
// errors for references to nodes that do not exist or nodes after the output.
#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "model/fx_graph.hpp"

namespace capsim {
namespace {

TEST_CASE("fx graph: snake-case names with numeric suffixes, as torch.fx") {
  CHECK(fx_snake_case("torch._dynamo.compiled_autograd.ops.MulBackward0") == "mul_backward0");
  CHECK(fx_snake_case("torch.add") == "add");
  CHECK(fx_snake_case("CopySlices") == "copy_slices");
  CHECK(fx_snake_case("torch.ops.aten.add_.Tensor") == "add_");
  CHECK(fx_snake_case("torch.ops.inductor.accumulate_grad_.default") == "accumulate_grad_");
  FxGraph g;
  const FxNodeId inputs = g.placeholder("inputs");
  const FxNodeId a = g.call_function("torch.add", {FxArg::ref(inputs), FxArg::ref(inputs)}).value();
  const FxNodeId b = g.call_function("torch.add", {FxArg::ref(a), FxArg::ref(a)}).value();
  CHECK(g.nodes()[a].name() == "add");
  CHECK(g.nodes()[b].name() == "add_1");
}

TEST_CASE("fx graph: the text form is stable and Python-like") {
  FxGraph g("CompiledAutograd0");
  const FxNodeId inputs = g.placeholder("inputs");
  const FxNodeId mul =
      g.call_function("ops.MulBackward0",
                      {FxArg::of({FxArg::ref(inputs)}),
                       FxArg::of({FxArg::boolean(true), FxArg::boolean(false)}), FxArg::integer(6),
                       FxArg::real(0.5), FxArg::string("x"), FxArg::none()})
          .value();
  REQUIRE(g.output({FxArg::ref(mul)}).ok());
  CHECK(g.to_text() ==
        "graph CompiledAutograd0:\n"
        "    %inputs = placeholder[target=inputs]()\n"
        "    %mul_backward0 = call_function[target=ops.MulBackward0]([%inputs], [True, False], 6, "
        "0.5, 'x', None)\n"
        "    return (%mul_backward0)\n");
}

TEST_CASE("fx graph: uses one at a time, the first use, equality without the text") {
  auto build = [](std::int64_t constant) {
    FxGraph g;
    const FxNodeId inputs = g.placeholder("inputs");
    const FxNodeId x =
        g.call_function("operator.getitem", {FxArg::ref(inputs), FxArg::integer(0)}).value();
    // Nested references come in argument order, depth first, repeats kept.
    (void)g
        .call_function("torch.add",
                       {FxArg::integer(constant),
                        FxArg::of({FxArg::ref(x), FxArg::of({FxArg::ref(inputs)})}), FxArg::ref(x)})
        .value();
    return g;
  };
  const FxGraph g = build(1);
  for (FxNodeId id = 0; id < g.nodes().size(); ++id) {
    std::vector<FxNodeId> seen;
    g.for_each_use(id, [&](FxNodeId u) { seen.push_back(u); });
    CHECK(seen == g.uses(id));
    const std::optional<FxNodeId> first = g.first_use(id);
    CHECK(first.has_value() == !seen.empty());
    if (first) CHECK(*first == seen.front());
  }
  CHECK(g.uses(2) == std::vector<FxNodeId>{1, 0, 1});
  CHECK(g.first_use(0) == std::nullopt);
  CHECK(g.first_use(1) == FxNodeId{0});  // the placeholder: 0 is a node, not "none"
  // Equal graphs print equal text; one constant apart, they differ.
  CHECK(build(1) == g);
  CHECK_FALSE(build(2) == g);
  CHECK(build(2).to_text() != g.to_text());
}

TEST_CASE("fx graph: rebuilt keeps names, remaps references and continues the counts") {
  // The storage (model/fx_node.hpp): names are a base and a count, targets
  // interned, arguments in one vector. A rebuild must keep every name, move
  // each node's arguments with it, and leave the counts where they were so
  // that a node added later does not take a name already given.
  FxGraph g("G");
  const FxNodeId inputs = g.placeholder("inputs");
  const FxNodeId a = g.call_function("torch.add", {FxArg::ref(inputs), FxArg::integer(1)}).value();
  const FxNodeId b = g.call_function("torch.add", {FxArg::ref(inputs), FxArg::integer(2)}).value();
  const FxNodeId c =
      g.call_function("torch.mul", {FxArg::of({FxArg::ref(b), FxArg::ref(a)})}).value();
  // b before a, and the mul last: references follow the nodes.
  FxGraph copied = g.rebuilt({inputs, b, a, c}).value();
  FxGraph moved = FxGraph(g).rebuilt({inputs, b, a, c}).value();
  CHECK(copied == moved);
  REQUIRE(moved.size() == 4);
  CHECK(moved.node(1).name() == "add_1");
  CHECK(moved.node(1).args[1].i == 2);
  CHECK(moved.node(2).name() == "add");
  CHECK(moved.node(3).args[0].items()[0].node == 1);
  CHECK(moved.node(3).args[0].items()[1].node == 2);
  CHECK(moved.node(3).target == "torch.mul");
  const FxNodeId d = moved.call_function("torch.add", {FxArg::ref(1)}).value();
  CHECK(moved.node(d).name() == "add_2");
  // Dropping a node that something kept uses is an error, not a dangling id.
  CHECK_FALSE(g.rebuilt({inputs, a, c}).ok());
  // replace_arg writes the one argument, in place.
  REQUIRE(g.replace_arg(a, 1, FxArg::integer(7)).ok());
  CHECK(g.node(a).args[1].i == 7);
  CHECK(g.node(b).args[1].i == 2);
  CHECK_FALSE(g.replace_arg(a, 2, FxArg::none()).ok());
  CHECK(g.heap_bytes() >= 4 * sizeof(FxArg));
}

TEST_CASE("fx graph: equality by text, not by how names were counted") {
  // Graphs built apart intern their texts apart; equal nodes still compare
  // equal, and a node named `add_1` literally equals one counted to it.
  FxGraph x("G"), y("G");
  (void)x.placeholder("add");
  (void)x.placeholder("add");  // add_1, counted
  (void)y.placeholder("add");
  (void)y.placeholder("add_1");  // add_1, literal
  CHECK(x.node(1).name() == "add_1");
  CHECK(y.node(1).name() == "add_1");
  CHECK_FALSE(x == y);  // the targets differ: `add` and `add_1`
  FxGraph u("G"), v("G");
  (void)u.call_function("torch.add", {}).value();
  (void)v.placeholder("unused");
  FxGraph w = v.rebuilt({}).value();
  (void)w.call_function("torch.add", {}).value();
  CHECK(u == w);
  CHECK(u.to_text() == w.to_text());
}

TEST_CASE("fx graph: dangling references and nodes after the output are errors") {
  FxGraph g;
  auto bad = g.call_function("torch.add", {FxArg::of({FxArg::ref(5)})});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message ==
        "fx graph 'CompiledAutograd0': argument refers to node 5, which does not exist");
  REQUIRE(g.output({}).ok());
  CHECK_FALSE(g.output({}).ok());
  CHECK_FALSE(g.call_function("torch.add", {}).ok());
}

TEST_CASE("fx arg: scalars inline, text and items deep-copied, equality by meaning") {
  // The layout's contract (model/fx_arg.hpp): references and numbers own no
  // heap; text and items do, and a copy never shares them.
  CHECK(sizeof(FxArg) <= 32);
  CHECK(FxArg::ref(7).heap_bytes() == 0);
  CHECK(FxArg::integer(-3).heap_bytes() == 0);
  CHECK(FxArg::none().text().empty());
  CHECK(FxArg::real(1.5).items().empty());

  FxArg list = FxArg::of({FxArg::ref(1), FxArg::string("a string longer than fifteen")});
  CHECK(list.heap_bytes() > 2 * sizeof(FxArg));
  FxArg copy = list;
  CHECK(copy == list);
  copy.mutable_items()[0] = FxArg::ref(2);
  CHECK(list.items()[0].node == 1);  // the copy's items are its own
  CHECK_FALSE(copy == list);

  const FxArg kw = FxArg::keyword("alpha", FxArg::real(0.5));
  CHECK(kw.text() == "alpha");
  REQUIRE(kw.items().size() == 1);
  CHECK(kw.items()[0].f == 0.5);
  CHECK(FxArg::verbatim("device(type='cuda')").text() == "device(type='cuda')");
  CHECK_FALSE(FxArg::string("x") == FxArg::verbatim("x"));  // kinds differ
  CHECK(FxArg::tuple({}) == FxArg::tuple({}));
  CHECK_FALSE(FxArg::tuple({}) == FxArg::of({}));

  FxArg moved = std::move(copy);
  CHECK(moved.items()[0].node == 2);
}

}  // namespace
}  // namespace capsim
