// A trace of a real run (producer "pytorch") may leave out fields its kind
// requires (docs/trace-format.md, `partial`): every drawing of its events
// draws what is there and never takes a missing field for a broken contract.
#include <doctest/doctest.h>

#include "render/tree_drawing.hpp"

namespace capsim {
namespace {

TEST_CASE("render: events without their required fields are drawn, not a broken contract") {
  const std::vector<Event> events = {
      {EventKind::kWarmup, 0, {{F::function, "f"}}},
      {EventKind::kRecord, 1, {{F::function, "f"}}},
      {EventKind::kReplay, 2, {}},
      {EventKind::kCopyIn, 2, {{F::graph, 0}}},
      {EventKind::kCaGraph, 3, {}},
      {EventKind::kCaGraph, 4, {{F::backward, 1}, {F::targets, TextList{"aten.mm"}}}},
      {EventKind::kCheckpoint, 5, {}},
      {EventKind::kError, 6, {{F::graph, 0}}},
      {EventKind::kShutdown, 7, {}}};
  const DrawGraph tree = draw_tree(events, "partial");
  CHECK_FALSE(tree.nodes.empty());
  CHECK(tree.find("ca.a3.b?").has_value());
}

}  // namespace
}  // namespace capsim
