// The render and diff subcommands and `capsim replay --dot`'s divergence drawing (see
// render_commands.hpp): operands read, graphs picked and the DOT, SVG or PNG written.
#include "cli/render_commands.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <span>

#include "cli/input_guards.hpp"
#include "cli/trace_commands.hpp"
#include "model/output_file.hpp"
#include "render/dot_writer.hpp"
#include "render/fold.hpp"
#include "render/graph_diff.hpp"
#include "render/graphviz_output.hpp"
#include "render/trace_graphs.hpp"
#include "traces/format/trace_reader.hpp"

namespace capsim::cli {

namespace {

// "TRACE" or "TRACE#KIND[:ID]".
struct Operand {
  std::string file;
  std::optional<GraphSpec> spec;
  bool named = false;  // the operand itself named the graph (#KIND[:ID])
};

Result<Operand> parse_operand(const std::string& text, const std::string& flag_graph) {
  Operand op;
  const std::size_t hash = text.rfind('#');
  std::string graph = flag_graph;
  if (hash != std::string::npos) {
    op.file = text.substr(0, hash);
    graph = text.substr(hash + 1);
    // One of the two would be ignored: say so rather than pick.
    if (!flag_graph.empty()) {
      return make_error(
          fmt::format("--graph {} and the operand's '#{}' both name a graph: give one of them",
                      flag_graph, graph));
    }
    op.named = true;
  } else {
    op.file = text;
  }
  if (!graph.empty()) {
    CAPSIM_TRY_ASSIGN(op.spec, parse_graph_spec(graph));
  }
  return op;
}

std::optional<std::size_t> pool_line(const std::optional<GraphSpec>& spec) {
  if (!spec || spec->kind != "pool" || spec->id.empty()) return std::nullopt;
  return static_cast<std::size_t>(std::stoull(spec->id));
}

// Writes or prints the drawing; 0, 1 (Graphviz failed) or 2 (bad output).
int emit(const DrawGraph& drawing, const DrawOptions& options, const std::string& summary) {
  OutputFormat format_of_output = OutputFormat::kDot;
  if (!options.output.empty()) {
    // Checked before any work is written: an unknown extension is bad usage.
    Result<OutputFormat> format = output_format_of(options.output);
    if (!format) return fail(format.error().message);
    format_of_output = *format;
  }
  DrawGraph fitted = drawing;
  if (options.changes_only) fitted = changes_only(drawing);
  std::string folded;
  const bool laid_out = !options.output.empty() && format_of_output != OutputFormat::kDot;
  if (laid_out) fitted = fit_for_layout(fitted, options.max_nodes, &folded);
  const std::string dot = to_dot(fitted);
  if (options.output.empty() || options.output == kStdoutPath) {
    std::fwrite(dot.data(), 1, dot.size(), stdout);
    if (!summary.empty()) stderr_line(summary);
    return 0;
  }
  if (!folded.empty()) stderr_line("capsim: note: " + folded);
  Result<WrittenDrawing> written =
      write_drawing(dot, options.output, LayoutOptions{options.timeout_s});
  // A path we cannot write is the user's input (exit 2); a layout that
  // failed is not (exit 1), and its DOT is on disk.
  if (!written) return fail(written.error().message);
  if (written->layout_failure) {
    stderr_line("capsim: error: " + *written->layout_failure);
    return 1;
  }
  std::string files;
  for (const std::string& f : written->files) files += (files.empty() ? "" : " and ") + f;
  fmt::print("wrote {}: {} nodes, {} edges{}\n", printable_message(files), fitted.nodes.size(),
             fitted.edges.size(), summary.empty() ? "" : "; " + printable_message(summary));
  return 0;
}

// The graphs of a trace, its reader's warnings (a cut last line) printed as
// replay prints them.
Result<TraceGraphs> graphs_of(const std::string& file, std::optional<std::size_t> pool_at,
                              std::uint64_t memory_budget_bytes) {
  Result<TraceGraphs> graphs = collect_trace_graphs(file, pool_at, memory_budget_bytes);
  if (graphs) {
    for (const std::string& w : graphs->warnings) stderr_line(w);
  }
  return graphs;
}

}  // namespace

int render_command(const std::string& trace, bool list, const DrawOptions& options) {
  Result<Operand> op = parse_operand(trace, options.graph);
  if (!op) return fail(op.error().message);
  if (list && op->named) {
    return fail(
        fmt::format("--list lists every graph; the operand's '#{}' names one: give one "
                    "of them",
                    op->spec ? op->spec->text() : std::string()));
  }
  Result<TraceGraphs> graphs =
      graphs_of(op->file, pool_line(op->spec), options.memory_budget_bytes);
  if (!graphs) return fail(graphs.error().message);
  if (list) {
    for (const std::string& name : graphs->names()) fmt::print("{}\n", name);
    return 0;
  }
  const GraphSpec spec = op->spec ? *op->spec : default_graph(*graphs);
  Result<DrawGraph> drawing = pick_graph(*graphs, spec);
  if (!drawing) return fail(drawing.error().message);
  return emit(*drawing, options, "");
}

int diff_command(const std::string& a, const std::string& b, bool predicted,
                 const DrawOptions& options) {
  DrawGraph left, right;
  if (predicted) {
    if (!b.empty()) return fail("diff --predicted takes one trace");
    Result<Operand> op = parse_operand(a, options.graph);
    if (!op) return fail(op.error().message);
    if (op->spec && op->spec->kind != "tree") {
      return fail(fmt::format(
          "diff --predicted: --graph {}: a trace records only its events, so only the tree can "
          "be held against the prediction",
          op->spec->text()));
    }
    Result<TraceGraphs> graphs = graphs_of(op->file, std::nullopt, options.memory_budget_bytes);
    if (!graphs) return fail(graphs.error().message);
    Result<TreeAgainstPrediction> trees = tree_against_prediction(*graphs);
    if (!trees) return fail(trees.error().message);
    left = std::move(trees->recorded);
    right = std::move(trees->predicted);
  } else {
    if (b.empty()) return fail("diff: give two operands, A and B (or --predicted TRACE)");
    Result<Operand> oa = parse_operand(a, options.graph);
    if (!oa) return fail(oa.error().message);
    Result<Operand> ob = parse_operand(b, options.graph);
    if (!ob) return fail(ob.error().message);
    Result<TraceGraphs> ga = graphs_of(oa->file, pool_line(oa->spec), options.memory_budget_bytes);
    if (!ga) return fail(ga.error().message);
    const GraphSpec sa = oa->spec ? *oa->spec : default_graph(*ga);
    Result<DrawGraph> da = pick_graph(*ga, sa);
    if (!da) return fail(da.error().message);
    Result<TraceGraphs> gb =
        ob->file == oa->file && pool_line(ob->spec) == pool_line(oa->spec)
            ? std::move(ga)
            : graphs_of(ob->file, pool_line(ob->spec), options.memory_budget_bytes);
    if (!gb) return fail(gb.error().message);
    const GraphSpec sb = ob->spec ? *ob->spec : sa;
    Result<DrawGraph> db = pick_graph(*gb, sb);
    if (!db) return fail(db.error().message);
    left = std::move(*da);
    right = std::move(*db);
  }
  const GraphDiff diff = diff_graphs(left, right);
  const int drawn = emit(merge_diff(left, right, diff), options, diff_summary(diff.counts));
  if (drawn != 0) return drawn;
  return diff.counts.identical() ? 0 : 1;
}

int divergence_dot(const std::string& trace, const std::string& output,
                   std::uint64_t memory_budget_bytes) {
  Result<TraceGraphs> graphs = collect_trace_graphs(trace, std::nullopt, memory_budget_bytes);
  if (!graphs) return fail(graphs.error().message);
  Result<TreeAgainstPrediction> trees = tree_against_prediction(*graphs);
  if (!trees) return fail(trees.error().message);
  DrawOptions options;
  options.output = output;
  return emit(merge_diff(trees->recorded, trees->predicted, trees->diff), options,
              "recorded tree against capsim's prediction: " + diff_summary(trees->diff.counts));
}

}  // namespace capsim::cli
