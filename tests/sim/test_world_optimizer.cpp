// The compiled SGD step as real PyTorch traces it (data/corpus/torch/*/
// compiled_sgd_*.jsonl): without momentum no state at all; with momentum the
// first step makes the buffers inside its graph and the second is traced
// again, with them as static inputs.
#include <doctest/doctest.h>

#include "tree_test_support.hpp"

namespace capsim::testing {
namespace {

Program sgd_loop(float momentum, int steps) {
  Program p;
  p.actions.push_back(param("w", {4}, 1.0f));
  CreateOptimizer opt;
  opt.name = "opt";
  opt.kind = OptimizerKind::kSgd;
  opt.params = {"w"};
  opt.sgd.lr = 0.5f;
  opt.sgd.momentum = momentum;
  opt.sgd.dampening = 0.25f;  // ignored on a first step and without momentum
  p.actions.push_back(opt);
  for (int i = 0; i < steps; ++i) {
    p.actions.push_back(tensor("g", {4}, 1.0f));
    p.actions.push_back(AccumulateGrad{"w", "g"});
    p.actions.push_back(Del{"g"});
    p.actions.push_back(OptimizerStep{"opt"});
    p.actions.push_back(ZeroGrad{"opt", true});
  }
  return p;
}

std::vector<IntList> compiled_static_idxs(const World& w) {
  std::vector<IntList> out;
  for (const Event& e : w.events()) {
    if (e.kind == EventKind::kCompile && e.find(F::static_input_idxs) != nullptr) {
      out.push_back(e.get<IntList>(F::static_input_idxs));
    }
  }
  return out;
}

TEST_CASE("SGD without momentum: one graph over params and grads, no state") {
  auto w = run_program(sgd_loop(0.0f, 3));
  CHECK(compiled_static_idxs(*w) == std::vector<IntList>{{0}});
  CHECK(w->counters().recompiles == 0);
  CHECK(count_where(w->events(), EventKind::kOptimizer, F::static_state, FieldValue(0)) == 1);
  // w = 1 - 3 * 0.5 * 1, dampening ignored.
  CHECK(w->values("w").value()[0] == doctest::Approx(-0.5f));
}

TEST_CASE("SGD with momentum: the second step recompiles with the buffers static") {
  auto w = run_program(sgd_loop(0.9f, 3));
  // inputs of the second graph: param, grad, momentum buffer
  CHECK(compiled_static_idxs(*w) == std::vector<IntList>{{0}, {0, 2}});
  CHECK(w->counters().recompiles == 1);
  CHECK(count_where(w->events(), EventKind::kCompile, F::reason,
                    FieldValue(std::string("optimizer_state_guard"))) == 1);
  // capsim's prediction, not yet seen on a GPU (docs/cudagraph-trees.md §6):
  // the buffers are outputs of the first graph's warmup, in the tree's pool,
  // and the next step is a new generation, which frees them; reading them
  // raises E1 at every later step.
  CHECK(count_where(w->events(), EventKind::kError, F::id, FieldValue(std::string("E1"))) == 2);
}

TEST_CASE("SGD with momentum and cudagraphs off (a CPU run): the same compiles, no tree, no E1") {
  WorldOptions cpu;
  cpu.config.cudagraphs = false;
  auto w = run_program(sgd_loop(0.9f, 3), cpu);
  CHECK(compiled_static_idxs(*w) == std::vector<IntList>{{0}, {0, 2}});
  CHECK(w->counters().recompiles == 1);
  for (const Event& e : w->events()) {
    CHECK_MESSAGE(e.kind != EventKind::kError, format_event(e));
    CHECK_MESSAGE(e.kind != EventKind::kWarmup, format_event(e));
    CHECK_MESSAGE(e.kind != EventKind::kEager, format_event(e));  // Inductor's code, no fallback
    if (e.kind == EventKind::kCompile) CHECK_FALSE(e.has(F::fid));
  }
  CHECK(w->counters().graphs_recorded == 0);
  WorldOptions eager;
  eager.all_eager = true;
  auto reference = run_program(sgd_loop(0.9f, 3), eager);
  CHECK(w->values("w").value() == reference->values("w").value());
}

TEST_CASE("SGD with momentum, eagerly: a clone of the grad first, then momentum and dampening") {
  WorldOptions eager;
  eager.all_eager = true;
  auto w = run_program(sgd_loop(0.9f, 3), eager);
  // buf: 1 (a clone of the grad, no dampening), then 0.9 + 0.75, then
  // 0.9 * 1.65 + 0.75; w = 1 - 0.5 * (1 + 1.65 + 2.235).
  CHECK(w->values("w").value()[0] == doctest::Approx(1.0f - 0.5f * (1.0f + 1.65f + 2.235f)));
}

}  // namespace
}  // namespace capsim::testing
