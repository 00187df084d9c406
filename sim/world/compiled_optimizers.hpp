// CompiledOptimizers: the compiled optimizer (PR 107504; docs/cudagraph-trees.md
// §6), the World's part that owns every optimizer a program creates.
//
// A traced `opt.step()` whose params and state are marked static and whose
// grads are not, called through the tree manager (or the plain API) as a
// Dynamo entry point of the World's own (WorldCalls::call_unbound); the
// finalizer that releases the marks when the optimizer is dropped; and
// zero_grad with the shipped behaviour plus PR 107853's rule behind a flag.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/program/program.hpp"
#include "sim/world/world_context.hpp"

namespace capsim {

struct OptimizerStepKey;  // compiled_optimizers.cpp

class CompiledOptimizers {
 public:
  explicit CompiledOptimizers(WorldContext& world);
  ~CompiledOptimizers();
  CompiledOptimizers(const CompiledOptimizers&) = delete;
  CompiledOptimizers& operator=(const CompiledOptimizers&) = delete;

  Status create(const CreateOptimizer& a);
  // `opt.step()`: traced on the first call with a grad, then the step
  // function for this set of grads and state, compiled and called.
  Status step(const OptimizerStep& a);
  Status zero_grad(const ZeroGrad& a);
  // nn.Module.zero_grad or `p.grad = None`: the same clearing over named
  // params, with no optimizer.
  Status clear_grads(const ClearGrads& a);
  // The optimizer dies: the finalizer lets go of the graph module's static
  // attributes, and its step functions' compiled entries are forgotten
  // (WorldCalls::forget_compiled). The World shuts the tree manager down
  // after it when no cudagraphified function is left.
  Status drop(const DropOptimizer& a);

 private:
  // Each param's grad dropped (set_to_none) or zeroed; how many had one.
  Result<std::size_t> clear_grads_of(const std::vector<std::uint64_t>& params, bool set_to_none);
  struct Optimizer;

  Status trace(Optimizer& opt, const std::vector<std::uint64_t>& grads);
  std::uint64_t adopt_state(TensorId held);
  Status keep_momentum_buffers(Optimizer& opt, const std::vector<std::size_t>& stateless,
                               const std::vector<TensorId>& outs);
  Result<const FunctionDef*> step_for(Optimizer& opt, const OptimizerStepKey& key);

  // What of the context this part touches.
  WorldContext& world_;
  SimContext& ctx_;
  ObjectTable& objects_;
  TensorStore& store_;
  WorldCalls& calls_;
  const WorldOptions& options_;

  std::map<std::string, std::unique_ptr<Optimizer>> optimizers_;
  // Step functions of dropped optimizers: a live manager may still name them.
  std::vector<std::unique_ptr<FunctionDef>> retired_defs_;
};

}  // namespace capsim
