// Drawing and diffing: DOT writing, the three-pass diff and Graphviz's layout
// at 1e2, 1e3 and 1e4 nodes (figures in docs/performance.md, "Drawings and
// diffs"). The graphs are what a recorded StepProgram looks
// like: a chain of steps with a few kernel kinds, each depending on the step
// before and, every fourth, on one a few steps back. The diffed graph has
// 1 % of its nodes changed, as a re-recording's moved pointers do.
#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "render/dot_writer.hpp"
#include "render/fold.hpp"
#include "render/graph_diff.hpp"
#include "render/graphviz_output.hpp"

namespace {

capsim::DrawGraph step_chain(std::size_t n, std::size_t changed_every) {
  static constexpr const char* kKernels[] = {"mm", "add", "relu", "sum", "copy"};
  capsim::DrawGraph g;
  g.name = fmt::format("chain of {}", n);
  g.kind = "program";
  for (std::size_t i = 0; i < n; ++i) {
    capsim::DrawNode node;
    node.id = fmt::format("s{}", i);
    node.kind = "kernel";
    node.target = kKernels[i % 5];
    node.title = fmt::format("s{}: {}", i, node.target);
    const bool moved = changed_every != 0 && i % changed_every == 0;
    node.attrs.push_back(
        {"a (read)", fmt::format("intermediate+{} (pool)", (i % 7) * 512), std::nullopt, false});
    node.attrs.push_back(
        {"b (read)",
         moved ? "primals_2 (static) 0x7f0000000800" : "primals_2 (static) 0x7f0000000400",
         std::nullopt, false});
    g.add_node(std::move(node));
    if (i > 0) g.add_edge(static_cast<std::uint32_t>(i - 1), static_cast<std::uint32_t>(i));
    if (i >= 4 && i % 4 == 0) {
      g.add_edge(static_cast<std::uint32_t>(i - 3), static_cast<std::uint32_t>(i));
    }
  }
  return g;
}

void BM_RenderToDot(benchmark::State& state) {
  const capsim::DrawGraph g = step_chain(static_cast<std::size_t>(state.range(0)), 0);
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string dot = capsim::to_dot(g);
    bytes = dot.size();
    benchmark::DoNotOptimize(dot.data());
  }
  state.counters["dot_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderToDot)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_Diff(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const capsim::DrawGraph a = step_chain(n, 0);
  const capsim::DrawGraph b = step_chain(n, 100);
  for (auto _ : state) {
    const capsim::GraphDiff d = capsim::diff_graphs(a, b);
    benchmark::DoNotOptimize(d.counts.changed);
  }
}
BENCHMARK(BM_Diff)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// Layout and SVG through libgvc in a child process, after the node limit's
// folding (so 1e4 measures what `capsim render` does with it: the changes of
// a diff, laid out).
void BM_DiffLayoutSvg(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const capsim::DrawGraph a = step_chain(n, 0);
  const capsim::DrawGraph b = step_chain(n, 100);
  const capsim::DrawGraph merged = capsim::merge_diff(a, b, capsim::diff_graphs(a, b));
  const std::string dot = capsim::to_dot(capsim::fit_for_layout(merged, capsim::kLayoutNodeLimit));
  for (auto _ : state) {
    auto svg = capsim::render_in_memory(dot, capsim::OutputFormat::kSvg, {});
    if (!svg) state.SkipWithError(svg.error().message.c_str());
    benchmark::DoNotOptimize(svg);
  }
}
BENCHMARK(BM_DiffLayoutSvg)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The layout of a plain render of 1e2 and 1e3 nodes (1e4 is folded first).
void BM_RenderLayoutSvg(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::string dot =
      capsim::to_dot(capsim::fit_for_layout(step_chain(n, 0), capsim::kLayoutNodeLimit));
  for (auto _ : state) {
    auto svg = capsim::render_in_memory(dot, capsim::OutputFormat::kSvg, {});
    if (!svg) state.SkipWithError(svg.error().message.c_str());
    benchmark::DoNotOptimize(svg);
  }
}
BENCHMARK(BM_RenderLayoutSvg)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(2000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
