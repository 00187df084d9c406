// Throughput of compiled autograd's capture: how many autograd nodes per second
// Phase A (collect_backward) and the functional capture (capture_backward)
// process, against the floor of a plain topological traversal of the same
// graph (AutogradGraph::topological_order: the acyclicity DFS plus Kahn's
// algorithm). Speed goals live here, never in timed tests; the figures are
// recorded in docs/performance.md ("Compiled autograd capture").
//
// Three graph shapes, each with exactly N autograd nodes (N = the Arg):
//  - chain: GraphRoot -> N-2 functional nodes in a line -> one AccumulateGrad;
//  - tree:  a complete binary fan-out in heap order (node i feeds 2i+1 and
//           2i+2); node 0 is the GraphRoot, inner nodes are functional, the
//           ~N/2 leaves are AccumulateGrads, each with its own leaf tensor;
//  - wide:  a GraphRoot with N-2 outputs, each through one functional node
//           into input 0 of ONE AccumulateGrad (an (N-2)-way fan-in).
// Functional nodes are "MulBackward0" with one input of shape {4} per grad
// received and no saved tensors; only AccumulateGrads lift a tensor.
//
// Benchmarks are named BM_CompiledAutograd_<shape>/<phase>/<N>, phase one of
//  - floor:   topological_order() of the graph;
//  - collect: collect_backward() (Phase A), including its check_acyclic;
//  - capture: capture_backward() in the functional mode, on the Phase A
//             result computed once before timing.
// One item = one autograd node; the result's destruction is timed (it is part
// of a backward). Counters:
//  - x_floor: CPU time per iteration / the floor's CPU time per iteration on
//    the same graph (the floor is timed four times when the graph is built;
//    the median of the last three is taken);
//  - collect_B/node (collect): bytes of the CollectedBackward (ordered_calls,
//    keys with their heap buffers, size slots, lifted inputs), from container
//    sizes and capacities, per autograd node; malloc overhead not included;
//  - fx_B/node, fx_nodes/node (capture): the same for the captured FxGraph
//    (nodes, names, targets, arguments deep), and FX nodes per autograd node;
//  - graph_rss_B/node (floor): the growth of the resident set
//    (/proc/self/statm) while the AutogradGraph and its leaf tensors were
//    built, per node. Freed memory that malloc reuses is not counted, so it is
//    a lower bound.
// Sizes 1e3 to 1e6 are registered, as the target table of docs/performance.md
// asks; a capture of 1e6 nodes takes 10 to 20 s and a few GB.
// CAPSIM_CA_BENCH_MAX_NODES sets another largest power of ten (100000 for a
// quick run).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/caching_allocator.hpp"
#include "model/device_memory.hpp"
#include "sim/compiled_autograd/capture.hpp"

namespace capsim {
namespace {

enum class Shape : std::uint8_t { kChain, kTree, kWide };
enum class Phase : std::uint8_t { kFloor, kCollect, kCapture };

const char* shape_name(Shape s) {
  switch (s) {
    case Shape::kChain: return "chain";
    case Shape::kTree: return "tree";
    case Shape::kWide: return "wide";
  }
  return "?";
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kFloor: return "floor";
    case Phase::kCollect: return "collect";
    case Phase::kCapture: return "capture";
  }
  return "?";
}

// The calling thread's CPU time, as Google Benchmark measures by default.
double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Resident set size in bytes, from /proc/self/statm (its second field, pages).
double rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// --- Deep sizes (container sizes and capacities, no malloc overhead) ---------

std::size_t heap_bytes(const std::string& s) {
  constexpr std::size_t kSso = 15;  // libstdc++'s in-object capacity
  return s.capacity() > kSso ? s.capacity() + 1 : 0;
}

std::size_t deep_bytes(const FxGraph& g) {
  return g.heap_bytes();
}

std::size_t deep_bytes(const CollectedBackward& c) {
  std::size_t bytes =
      c.ordered_calls.capacity() * sizeof(NodeCall) + c.keys.capacity() * sizeof(std::string) +
      c.sizes.capacity() * sizeof(SizeInput) + c.inputs.capacity() * sizeof(TensorId);
  for (const std::string& k : c.keys) bytes += heap_bytes(k);
  return bytes;
}

// --- The graphs ---------------------------------------------------------------

DeviceMemoryOptions bench_memory_options() {
  DeviceMemoryOptions options;
  options.capacity_bytes = 8 * kGiB;  // a ceiling; pages appear only when touched
  return options;
}

struct Fixture {
  Shape shape = Shape::kChain;
  std::size_t nodes = 0;
  DeviceMemory memory{bench_memory_options()};
  CachingAllocator allocator{memory};
  TensorStore store{allocator};
  AutogradGraph graph;
  AutogradNodeId root = 0;
  double graph_rss_bytes = 0;
  double floor_ns = 0;
  std::optional<CollectedBackward> collected;  // for the capture benchmarks
};

class Builder {
 public:
  explicit Builder(Fixture& f) : f_(f), meta_{contiguous_meta({4}).value()} {}

  Status node(AutogradNodeKind kind, std::size_t inputs, std::uint32_t outputs) {
    AutogradNode n;
    n.kind = kind;
    n.name = kind == AutogradNodeKind::kFunctional ? "MulBackward0"
                                                   : std::string(autograd_node_kind_name(kind));
    n.inputs.assign(inputs, meta_);
    n.num_outputs = outputs;
    if (kind == AutogradNodeKind::kAccumulateGrad) {
      CAPSIM_TRY_ASSIGN(const Tensor leaf, f_.store.empty({4}));
      n.variable = leaf.id;
    }
    CAPSIM_TRY_ASSIGN(const AutogradNodeId id, f_.graph.add_node(std::move(n)));
    (void)id;
    return {};
  }
  Status edge(std::size_t from, std::uint32_t out, std::size_t to, std::uint32_t in) {
    return f_.graph.add_edge(static_cast<AutogradNodeId>(from), out,
                             static_cast<AutogradNodeId>(to), in);
  }

 private:
  Fixture& f_;
  InputMetadata meta_;
};

Status build_chain(Fixture& f, std::size_t n) {
  Builder b(f);
  CAPSIM_TRY(b.node(AutogradNodeKind::kGraphRoot, 0, 1));
  for (std::size_t i = 1; i + 1 < n; ++i) {
    CAPSIM_TRY(b.node(AutogradNodeKind::kFunctional, 1, 1));
    CAPSIM_TRY(b.edge(i - 1, 0, i, 0));
  }
  CAPSIM_TRY(b.node(AutogradNodeKind::kAccumulateGrad, 1, 0));
  return b.edge(n - 2, 0, n - 1, 0);
}

Status build_tree(Fixture& f, std::size_t n) {
  Builder b(f);
  for (std::size_t i = 0; i < n; ++i) {
    const auto children = static_cast<std::uint32_t>((2 * i + 1 < n) + (2 * i + 2 < n));
    const AutogradNodeKind kind = i == 0          ? AutogradNodeKind::kGraphRoot
                                  : children == 0 ? AutogradNodeKind::kAccumulateGrad
                                                  : AutogradNodeKind::kFunctional;
    CAPSIM_TRY(b.node(kind, i == 0 ? 0 : 1, children));
  }
  for (std::size_t i = 0; 2 * i + 1 < n; ++i) {
    CAPSIM_TRY(b.edge(i, 0, 2 * i + 1, 0));
    if (2 * i + 2 < n) CAPSIM_TRY(b.edge(i, 1, 2 * i + 2, 0));
  }
  return {};
}

Status build_wide(Fixture& f, std::size_t n) {
  Builder b(f);
  const std::size_t m = n - 2;  // functional nodes, ids 1..m; the sink is n-1
  CAPSIM_TRY(b.node(AutogradNodeKind::kGraphRoot, 0, static_cast<std::uint32_t>(m)));
  for (std::size_t i = 1; i <= m; ++i) CAPSIM_TRY(b.node(AutogradNodeKind::kFunctional, 1, 1));
  CAPSIM_TRY(b.node(AutogradNodeKind::kAccumulateGrad, 1, 0));
  for (std::size_t i = 1; i <= m; ++i) {
    CAPSIM_TRY(b.edge(0, static_cast<std::uint32_t>(i - 1), i, 0));
    CAPSIM_TRY(b.edge(i, 0, n - 1, 0));
  }
  return {};
}

// One graph is kept between benchmarks: the floor, collect and capture
// benchmarks of one (shape, N), and their repetitions, run consecutively.
std::unique_ptr<Fixture>& cached() {
  static std::unique_ptr<Fixture> fixture;
  return fixture;
}

Fixture* fixture(benchmark::State& state, Shape shape, std::size_t n) {
  auto& f = cached();
  if (f && f->shape == shape && f->nodes == n) return f.get();
  f.reset();  // free the previous graph before building the next
  const double rss_before = rss_bytes();
  auto fresh = std::make_unique<Fixture>();
  fresh->shape = shape;
  fresh->nodes = n;
  Status built = shape == Shape::kChain  ? build_chain(*fresh, n)
                 : shape == Shape::kTree ? build_tree(*fresh, n)
                                         : build_wide(*fresh, n);
  if (!built.ok()) {
    state.SkipWithError(built.error().message.c_str());
    return nullptr;
  }
  fresh->graph_rss_bytes = rss_bytes() - rss_before;
  std::array<double, 4> floor{};  // the first run warms the caches and is dropped
  for (double& t : floor) {
    const double t0 = thread_cpu_ns();
    auto order = fresh->graph.topological_order();
    t = thread_cpu_ns() - t0;
    if (!order.ok()) {
      state.SkipWithError(order.error().message.c_str());
      return nullptr;
    }
  }
  std::sort(floor.begin() + 1, floor.end());
  fresh->floor_ns = floor[2];
  f = std::move(fresh);
  return f.get();
}

template <typename T>
bool ok_or_skip(benchmark::State& state, const Result<T>& result) {
  if (result.ok()) return true;
  state.SkipWithError(result.error().message.c_str());
  return false;
}

void BM_CompiledAutograd(benchmark::State& state, Shape shape, Phase phase) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Fixture* f = fixture(state, shape, n);
  if (f == nullptr) return;
  if (phase == Phase::kCapture && !f->collected) {
    auto c = collect_backward(f->graph, f->root, f->store);
    if (!ok_or_skip(state, c)) return;
    f->collected = std::move(c).value();
  }
  double timed_ns = 0;
  double bytes = 0, fx_nodes = 0;
  bool measured = false;
  for (auto _ : state) {
    const double t0 = thread_cpu_ns();
    double excluded = 0;
    // Measures the result's footprint once, outside both clocks.
    auto measure_once = [&](auto&& fn) {
      if (measured) return;
      state.PauseTiming();
      const double m0 = thread_cpu_ns();
      fn();
      measured = true;
      excluded = thread_cpu_ns() - m0;
      state.ResumeTiming();
    };
    switch (phase) {
      case Phase::kFloor: {
        auto order = f->graph.topological_order();
        if (!ok_or_skip(state, order)) return;
        benchmark::DoNotOptimize(order->data());
        break;
      }
      case Phase::kCollect: {
        auto c = collect_backward(f->graph, f->root, f->store);
        if (!ok_or_skip(state, c)) return;
        measure_once([&] { bytes = static_cast<double>(deep_bytes(*c)); });
        break;
      }
      case Phase::kCapture: {
        auto r = capture_backward(f->graph, *f->collected);
        if (!ok_or_skip(state, r)) return;
        measure_once([&] {
          bytes = static_cast<double>(deep_bytes(r->graph));
          fx_nodes = static_cast<double>(r->graph.nodes().size());
        });
        break;
      }
    }
    timed_ns += thread_cpu_ns() - t0 - excluded;
  }
  const auto iterations = static_cast<double>(state.iterations());
  const double nodes = static_cast<double>(n);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.counters["x_floor"] = timed_ns / iterations / f->floor_ns;
  switch (phase) {
    case Phase::kFloor: state.counters["graph_rss_B/node"] = f->graph_rss_bytes / nodes; break;
    case Phase::kCollect: state.counters["collect_B/node"] = bytes / nodes; break;
    case Phase::kCapture:
      state.counters["fx_B/node"] = bytes / nodes;
      state.counters["fx_nodes/node"] = fx_nodes / nodes;
      break;
  }
}

[[maybe_unused]] const int kRegistered = [] {
  std::int64_t max_nodes = 1'000'000;
  if (const char* env = std::getenv("CAPSIM_CA_BENCH_MAX_NODES")) {
    max_nodes = std::max<std::int64_t>(1000, std::atoll(env));
  }
  for (Shape shape : {Shape::kChain, Shape::kTree, Shape::kWide}) {
    for (std::int64_t n = 1000; n <= max_nodes; n *= 10) {
      for (Phase phase : {Phase::kFloor, Phase::kCollect, Phase::kCapture}) {
        const std::string name =
            fmt::format("BM_CompiledAutograd_{}/{}", shape_name(shape), phase_name(phase));
        benchmark::RegisterBenchmark(
            name.c_str(),
            [shape, phase](benchmark::State& state) { BM_CompiledAutograd(state, shape, phase); })
            ->Arg(n)
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  return 0;
}();

}  // namespace
}  // namespace capsim
