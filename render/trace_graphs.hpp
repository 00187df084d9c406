// Every graph of a trace, by name: what `capsim render` and `capsim diff`
// choose from.
//
// A trace is read and re-simulated (with its recorded config and seed) once;
// on the way the collector keeps
//   - `tree`: the cudagraph tree drawn from the trace's own events, and
//     `tree:predicted`, drawn from the events the model predicts (only the
//     kinds the producer observes), so the two diff;
//   - `program:G` (`program:T.G` in the T-th tree after a shutdown): each
//     recording's StepProgram, drawn right after the action that recorded it,
//     with its pointers resolved against that moment's inputs and pool;
//   - `autograd:B` and `fx:B`: the autograd graph of the B-th compiled-
//     autograd backward of the trace (counted across its capture actions) and
//     the graph it captured (a cache hit captures none);
//   - `pool` or `pool:LINE`: the cudagraph pool's layout after the last action
//     on or before trace line LINE (the end of the trace when LINE is left
//     out or past the end).
// The graphs that exist in a recording but not in the model (a PyTorch trace
// carries no StepProgram) come from the model's re-simulation: render and
// diff say what they drew from.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "render/draw_graph.hpp"
#include "render/graph_diff.hpp"
#include "sim/core/events.hpp"
#include "sim/world/world.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim {

// "KIND" or "KIND:ID", as --graph takes it.
struct GraphSpec {
  std::string kind;
  std::string id;
  std::string text() const { return id.empty() ? kind : kind + ":" + id; }
};
// The error names the flag's value and the kinds known.
Result<GraphSpec> parse_graph_spec(std::string_view text);

struct TraceGraphs {
  std::string file;
  std::vector<Event> recorded;
  std::vector<Event> predicted;
  std::map<std::string, DrawGraph> graphs;  // "program:0", "fx:1", "pool:40", ...
  // The reader's warnings (a cut last line: docs/reliability.md), which every
  // command prints on stderr as replay does.
  std::vector<std::string> warnings;
  // The names one can pass to --graph, sorted ("tree" and "tree:predicted" first).
  std::vector<std::string> names() const;
};

// Reads and re-simulates `path`. `pool_at` asks for the pool's layout at a
// line (see above; 0: the end). Bad input is an Error naming file:line.
Result<TraceGraphs> collect_trace_graphs(const std::string& path,
                                         std::optional<std::size_t> pool_at = std::nullopt,
                                         std::uint64_t memory_budget_bytes = 0);
// The same over a reader that has read the header (fuzzing reads from memory).
Result<TraceGraphs> collect_trace_graphs(TraceReader& reader, std::optional<std::size_t> pool_at,
                                         std::uint64_t memory_budget_bytes = 0);

// The drawing `spec` names; the error lists what the trace has.
Result<DrawGraph> pick_graph(const TraceGraphs& graphs, const GraphSpec& spec);

// The kind drawn when --graph is left out: the tree when the run has
// cudagraph events, else the first captured FX graph, else the tree.
GraphSpec default_graph(const TraceGraphs& graphs);

// The trace's tree, drawn from its own events, against the tree drawn from
// the model's prediction of them: what `capsim diff --predicted`, `capsim
// replay --dot` and the drawings of saved counterexamples show.
struct TreeAgainstPrediction {
  DrawGraph recorded;
  DrawGraph predicted;
  GraphDiff diff;
  // The recorded tree when the two are identical, else the merged diff.
  DrawGraph drawing() const;
};
Result<TreeAgainstPrediction> tree_against_prediction(const TraceGraphs& graphs);

}  // namespace capsim
