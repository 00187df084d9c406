// Call series (the charts of explain --html): each function's calls with
// what they copied, the pool's bytes after them and the decisions they met;
// partitions counted toward their function; a simulation's calls end where it
// ended; an error outside any call is kept apart.
#include <doctest/doctest.h>

#include <string>

#include "traces/analyses/call_series.hpp"

namespace capsim {
namespace {

const std::string kData = std::string(CAPSIM_SOURCE_DIR) + "/data";

CallSeries series_of(const ObservedRun& run) {
  const Result<std::vector<PoolBytes>> pool = modelled_pool_bytes(run);
  REQUIRE(pool.ok());
  return calls_by_function(run, *pool);
}

TEST_CASE("call series: a re-recording trace (events observed, the pool modelled)") {
  const Result<ObservedRun> run =
      observe_file(kData + "/corpus/rerecord_if_static_input_address_changed.jsonl");
  REQUIRE(run.ok());
  REQUIRE_FALSE(run->simulated);
  const Result<std::vector<PoolBytes>> pool = modelled_pool_bytes(*run);
  REQUIRE(pool.ok());
  CHECK(pool->size() == run->actions.size());
  const CallSeries series = calls_by_function(*run, *pool);
  REQUIRE(series.functions.size() == 1);
  const FunctionCalls& foo = series.functions[0];
  CHECK(foo.function == "foo");
  REQUIRE(foo.calls.size() == 6);
  // The actions of foo's calls, and what each met.
  const std::vector<std::size_t> actions{4, 6, 8, 12, 14, 16};
  for (std::size_t i = 0; i < actions.size(); ++i) CHECK(foo.calls[i].action == actions[i]);
  CHECK(foo.calls[1].recorded);
  CHECK_FALSE(foo.calls[1].rerecorded);
  CHECK(foo.calls[3].rerecorded);
  CHECK_FALSE(foo.calls[3].recorded);
  CHECK(foo.calls[0].copy_bytes == 0);
  CHECK(foo.calls[2].copy_bytes == 8);
  for (const CallPoint& p : foo.calls) {
    CHECK(p.pool.has_value());
    CHECK_FALSE(p.error);
    CHECK_FALSE(p.eager);
  }
  // The pool maps its segment at the first call (the warmup runs in it).
  CHECK(foo.calls[0].pool->reserved > 0);
  CHECK(series.errors_outside_calls.empty());
}

TEST_CASE("call series: a partitioned call is one point of its function, its copies added up") {
  const Result<ObservedRun> run = observe_file(kData + "/corpus/graph_partition_cpu_op.jsonl");
  REQUIRE(run.ok());
  const CallSeries series = series_of(*run);
  REQUIRE(series.functions.size() == 1);
  const FunctionCalls& f = series.functions[0];
  CHECK(f.function == "f");
  REQUIRE(f.calls.size() == 3);
  CHECK(f.calls[1].recorded);  // both partitions recorded at the second call
  CHECK(f.calls[2].copy_bytes == 16 + 32);
}

TEST_CASE("call series: a simulated program has its pool's bytes, and a copy at every replay") {
  const Result<ObservedRun> run = observe_file(kData + "/programs/persistent_buffer_copied.jsonl");
  REQUIRE(run.ok());
  REQUIRE(run->simulated);
  CHECK(run->pool_bytes.size() == run->actions.size());
  const CallSeries series = series_of(*run);
  REQUIRE(series.functions.size() == 1);
  const FunctionCalls& step = series.functions[0];
  REQUIRE(step.calls.size() == 4);
  CHECK(step.calls[1].recorded);
  CHECK(step.calls[2].copy_bytes == 64 * 4);
  CHECK(step.calls[3].copy_bytes == 64 * 4);
  // The recording allocates its output `y` in the pool. A replay allocates
  // nothing: as PyTorch's allocator, the pool counts the replayed output only
  // once a checkpoint is applied (apply_checkpoint_execution_state_in_allocator).
  CHECK(step.calls[1].pool->live > 0);
  CHECK(step.calls[3].pool->live == 0);
  CHECK(step.calls[3].pool->reserved == step.calls[1].pool->reserved);
}

TEST_CASE("call series: a simulation that ended at a read's raise has no calls past it") {
  const Result<ObservedRun> recorded =
      observe_file(kData + "/third_party/2.11.0/dcgan.compiled.jsonl");
  REQUIRE(recorded.ok());
  const Result<ObservedRun> run = as_on_a_gpu(*recorded);
  REQUIRE(run.ok());
  REQUIRE(run->stopped_at.has_value());
  const CallSeries series = series_of(*run);
  REQUIRE(series.errors_outside_calls.size() == 1);
  const std::size_t raised = series.errors_outside_calls[0];
  CHECK(run->error_at == raised);
  REQUIRE_FALSE(series.functions.empty());
  for (const FunctionCalls& f : series.functions) {
    INFO(f.function);
    CHECK(f.calls.back().action < raised);
  }
}

}  // namespace
}  // namespace capsim
