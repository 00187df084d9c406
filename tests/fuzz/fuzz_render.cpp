// Fuzz target for `capsim render` (libFuzzer's entry point): the bytes are a
// trace, read and re-simulated once, and every graph it has is drawn to DOT
// as `render --graph NAME` would, folded to the layout limit as `-o X.svg`
// would, and parsed back by cgraph (no layout: a layout is Graphviz's time,
// not capsim's). Cross-checks: the DOT capsim writes parses, with as many
// nodes as the drawing has.
#include <cstddef>
#include <cstdint>

#include "render/dot_writer.hpp"
#include "render/fold.hpp"
#include "render/graphviz_output.hpp"
#include "render/trace_graphs.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

constexpr const char* kTarget = "fuzz_render";
// As the CLI's default --max-nodes.
constexpr std::size_t kLayoutNodes = 2000;

void draw(const capsim::DrawGraph& g) {
  const std::string dot = capsim::to_dot(capsim::fit_for_layout(g, kLayoutNodes));
  const capsim::Result<capsim::DotCounts> counts = capsim::parse_dot(dot);
  if (!counts) capsim::fuzz::fail(kTarget, "cgraph cannot parse the DOT capsim wrote");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::unique_ptr<capsim::TraceReader> reader =
      capsim::fuzz::open_checked(kTarget, data, size);
  if (!reader) return 0;
  // A pool drawing at a line inside the trace, as `--graph pool:LINE` asks.
  const capsim::Result<capsim::TraceGraphs> graphs = capsim::collect_trace_graphs(
      *reader, size % 7 == 0 ? std::nullopt : std::optional<std::size_t>(size % 40 + 1),
      capsim::fuzz::kFuzzMemoryBudget);
  if (!graphs) {
    capsim::fuzz::check_message(kTarget, graphs.error());
    return 0;
  }
  for (const std::string& name : graphs->names()) {
    const capsim::Result<capsim::GraphSpec> spec = capsim::parse_graph_spec(name);
    if (!spec) capsim::fuzz::fail(kTarget, "a listed graph name does not parse");
    const capsim::Result<capsim::DrawGraph> g = capsim::pick_graph(*graphs, *spec);
    if (!g) capsim::fuzz::fail(kTarget, "a listed graph cannot be picked");
    draw(*g);
  }
  draw(capsim::pick_graph(*graphs, capsim::default_graph(*graphs)).value());
  return 0;
}
