// Throughput of the simulated cudagraph tree manager: how fast a World runs
// programs whose calls go through TreeManager::run, what one steady-state
// replay costs, and how many bytes the compiled optimizer copies per step in
// the seed scenarios. Speed goals live here, never in timed tests; the figures
// are recorded in docs/performance.md ("Tree manager").
//
//  - BM_TreeDecisions/<chain>/<elements>: a 100,000-call program over 50 small
//    functions, in steps of mark_step_begin + 50 calls (2,000 steps). Chain 0:
//    every output is dropped at once, so each function is its own root and
//    the path ends after every call. Chain D > 0: the calls run in chains of
//    D, each call taking the previous call's output (a model split into D
//    graphs), so the tree holds 50 / D chains D deep and every input after a
//    chain's first is cudagraph-managed; D = 50 is one 50-deep chain. The
//    tensors hold `elements` floats: 64 for small fused kernels, 1 to leave
//    the tree manager's bookkeeping with almost no arithmetic beside it. One
//    item = one call (one tree-manager decision: warmup, record, replay or
//    eager). The World is built and destroyed inside the timed region: that
//    is part of running a program.
//  - BM_TreeSteadyReplay/<fresh_input>: one function replayed in steady state
//    (the warmup and the recording happen before timing). Arg 0: the same
//    eager input every step; Arg 1: a new eager input every step (one
//    allocation and one free in the default pool). One item = one replay;
//    counters report allocator operations (allocations + frees) per replay and
//    copy-in bytes per replay.
//  - BM_TreeSeedScenario/<i>: one run of each compiled_adam_* built-in scenario
//    (sim/scenarios/scenarios_optimizer.cpp) that exists; counters report the bytes the
//    optimizer step's replays copied in, per replay.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/function_builder.hpp"
#include "sim/scenarios/scenarios.hpp"
#include "sim/world/world.hpp"

namespace capsim {
namespace {

constexpr std::size_t kFunctions = 50;
constexpr std::size_t kCalls = 100'000;
constexpr std::size_t kSteps = kCalls / kFunctions;

// Function i: one to three elementwise ops over its input (and a constant),
// like the small fused kernels between graph breaks.
FunctionDef small_function(std::size_t i) {
  FunctionBuilder f(fmt::format("f{}", i), CompilationMode::kInference, {"arg0_1"});
  const ValueIndex x = f.input(0);
  ValueIndex y = f.mul(x, x);
  if (i % 3 >= 1) y = f.add(y, x);
  if (i % 3 >= 2) y = f.relu(y);
  return f.returns({y});
}

NewTensor new_tensor(const std::string& name, Dims sizes, std::optional<float> fill) {
  NewTensor t;
  t.name = name;
  t.sizes = std::move(sizes);
  t.fill = fill;
  return t;
}

Call call(const std::string& fn, std::vector<std::string> args, std::vector<std::string> outs) {
  Call c;
  c.function = fn;
  c.args = std::move(args);
  c.outputs = std::move(outs);
  return c;
}

Program decisions_program(std::size_t chain, std::int64_t elements) {
  Program p;
  for (std::size_t i = 0; i < kFunctions; ++i) p.functions.push_back(small_function(i));
  p.actions.reserve(1 + kSteps * (kFunctions + 2));
  p.actions.push_back(new_tensor("x", {elements}, 0.5f));
  for (std::size_t s = 0; s < kSteps; ++s) {
    p.actions.push_back(MarkStepBegin{});
    for (std::size_t i = 0; i < kFunctions; ++i) {
      const std::string fn = fmt::format("f{}", i);
      if (chain == 0) {
        p.actions.push_back(call(fn, {"x"}, {}));  // the output is dropped at once
      } else {
        // h = f_i(h): the previous h dies when the name is rebound.
        p.actions.push_back(call(fn, {i % chain == 0 ? "x" : "h"}, {"h"}));
      }
    }
    if (chain != 0) p.actions.push_back(Del{"h"});
  }
  return p;
}

bool ok_or_skip(benchmark::State& state, const Status& status) {
  if (status.ok()) return true;
  state.SkipWithError(status.error().message.c_str());
  return false;
}

void BM_TreeDecisions(benchmark::State& state) {
  const auto chain = static_cast<std::size_t>(state.range(0));
  const Program program = decisions_program(chain, state.range(1));
  Counters last;
  std::size_t events = 0, graphs = 0;
  for (auto _ : state) {
    World world(WorldOptions{});
    if (!ok_or_skip(state, world.run(program))) return;
    last = world.counters();
    events = world.events().size();
    graphs = world.manager() != nullptr ? world.manager()->graphs().size() : 0;
    benchmark::DoNotOptimize(events);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kCalls));
  state.counters["replays"] = static_cast<double>(last.replays);
  state.counters["warmups"] = static_cast<double>(last.warmups);
  state.counters["graphs"] = static_cast<double>(graphs);
  state.counters["eager"] = static_cast<double>(last.eager_fallbacks);
  state.counters["events/call"] = static_cast<double>(events) / static_cast<double>(kCalls);
}
BENCHMARK(BM_TreeDecisions)
    ->ArgNames({"chain", "elements"})
    ->Args({0, 64})
    ->Args({50, 64})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({10, 1})
    ->Args({50, 1})
    ->Unit(benchmark::kMillisecond);

// One step: mark_step_begin, (a fresh x,) out = g(x, w); the output is dropped.
// g(x, w) = x*w + x with w an nn.Parameter (static), x copied in.
Program steady_program(bool fresh_input, std::size_t steps) {
  Program p;
  {
    FunctionBuilder f("g", CompilationMode::kInference, {"arg0_1", "primals_1"});
    f.params({1});
    const ValueIndex x = f.input(0);
    p.functions.push_back(f.returns({f.add(f.mul(x, f.input(1)), x)}));
  }
  for (std::size_t s = 0; s < steps; ++s) {
    p.actions.push_back(MarkStepBegin{});
    if (fresh_input || s == 0) p.actions.push_back(new_tensor("x", {256}, 1.0f));
    p.actions.push_back(call("g", {"x", "w"}, {}));
  }
  return p;
}

void BM_TreeSteadyReplay(benchmark::State& state) {
  const bool fresh_input = state.range(0) != 0;
  constexpr std::size_t kBatch = 1000;  // replays per timed iteration
  World world(WorldOptions{});
  Program init;
  NewTensor w = new_tensor("w", {256}, 0.25f);
  w.parameter = true;
  init.actions.push_back(w);
  if (!ok_or_skip(state, world.run(init))) return;
  // World caches compiled functions by FunctionDef address, so the warmup run
  // and every timed run pass this one Program object.
  const Program program = steady_program(fresh_input, kBatch);
  if (!ok_or_skip(state, world.run(program))) return;  // warmup, record, replays
  const Counters before = world.counters();
  const AllocatorStats alloc_before = world.allocator().stats();
  for (auto _ : state) {
    if (!ok_or_skip(state, world.run(program))) return;
  }
  const Counters& after = world.counters();
  const AllocatorStats& alloc_after = world.allocator().stats();
  const std::uint64_t replays = after.replays - before.replays;
  const double per = replays > 0 ? 1.0 / static_cast<double>(replays) : 0.0;
  state.SetItemsProcessed(static_cast<std::int64_t>(replays));
  state.counters["alloc_ops/replay"] =
      static_cast<double>((alloc_after.allocations - alloc_before.allocations) +
                          (alloc_after.frees - alloc_before.frees)) *
      per;
  state.counters["copy_bytes/replay"] =
      static_cast<double>(after.copy_bytes.value - before.copy_bytes.value) * per;
  state.counters["non_replays"] = static_cast<double>(
      (after.warmups - before.warmups) + (after.graphs_recorded - before.graphs_recorded) +
      (after.eager_fallbacks - before.eager_fallbacks));
}
BENCHMARK(BM_TreeSteadyReplay)->Arg(0)->Arg(1);

// The seed scenarios, in the order the benchmark lists them.
const std::vector<std::string>& seed_scenario_names() {
  static const std::vector<std::string> names = {
      "compiled_adam_cudagraphed_backward", "compiled_adam_eager_backward",
      "compiled_adam_static_grads_zero_grad", "compiled_adam_static_grads_pr107853",
      "compiled_adam_optimizer_dropped"};
  return names;
}

// The optimizer step function's name in the seed scenarios' events.
constexpr const char* kStepFunction = "opt.step";

void BM_TreeSeedScenario(benchmark::State& state) {
  const std::string& name = seed_scenario_names()[static_cast<std::size_t>(state.range(0))];
  const ProgramScenario* scenario = find_program_scenario(name);
  if (scenario == nullptr) {
    state.SkipWithError(("no scenario " + name).c_str());
    return;
  }
  state.SetLabel(name);
  std::uint64_t bytes = 0, copies = 0, replays = 0;
  for (auto _ : state) {
    const ProgramScenarioRun run = run_program_scenario(*scenario);
    if (!ok_or_skip(state, run.status)) return;
    bytes = copies = replays = 0;
    for (const Event& e : run.events) {
      if (e.text(F::function) != kStepFunction) continue;
      if (e.kind == EventKind::kCopyIn) {
        bytes += e.count(F::bytes);
        copies += e.count(F::copies);
      } else if (e.kind == EventKind::kReplay) {
        ++replays;
      }
    }
  }
  state.counters["step_replays"] = static_cast<double>(replays);
  state.counters["bytes/step"] =
      replays > 0 ? static_cast<double>(bytes) / static_cast<double>(replays) : 0.0;
  state.counters["copies/step"] =
      replays > 0 ? static_cast<double>(copies) / static_cast<double>(replays) : 0.0;
}

void SeedScenarioArgs(benchmark::internal::Benchmark* b) {
  for (std::size_t i = 0; i < seed_scenario_names().size(); ++i) {
    b->Arg(static_cast<std::int64_t>(i));
  }
}
BENCHMARK(BM_TreeSeedScenario)->Apply(SeedScenarioArgs)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace capsim
