// The eager oracle: what a function computes when nothing is captured.
//
// P-replay says a replay's outputs equal running the same function eagerly on
// the same inputs. The oracle copies the inputs' storages into a scratch memory
// of its own (so it never perturbs the simulated allocator), runs the body there
// eagerly and returns each output's elements in row-major order as raw float
// bits, so that the comparison is bitwise and NaN payloads count.
//
// The scratch memory outlives one call: a replay is checked against the oracle
// at every call of a steady loop, and mapping and unmapping a fresh scratch
// segment per call was a fifth of a trace replay (docs/performance.md). Every
// tensor a call makes is released before it returns, so each call starts from
// an empty scratch store whose allocator has its segments cached; the values a
// call computes never depend on what an earlier call left in the memory,
// because every op writes its whole output before anything reads it.
//
// A plan per body and shape of inputs. A body's launches depend on its
// inputs' metadata, storage sizes and aliasing, never on their values, and
// the scratch allocator, starting empty each call, hands out the same
// addresses for the same requests. So the first call with a shape captures
// the body in the scratch tensor store and keeps what it did (the input
// copies' addresses, the launches, the outputs' addresses and metadata);
// that call and every later one with the same body and shape copy their
// inputs to those addresses, run those launches and read those outputs,
// which is what running the body eagerly does, at a fraction of the cost
// (the oracle was a third of a steady replay). A plan that fails is dropped
// and made again.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/device_memory.hpp"
#include "model/tensor_store.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

using ElementBits = std::vector<std::uint32_t>;

// The elements of a tensor at `data` with `meta`, row-major. A contiguous
// tensor is read in one piece.
Result<ElementBits> gather_bits(const DeviceMemory& memory, Address data, const TensorMeta& meta);

class EagerOracle {
 public:
  EagerOracle();
  ~EagerOracle();
  EagerOracle(const EagerOracle&) = delete;
  EagerOracle& operator=(const EagerOracle&) = delete;

  // `def` run eagerly on copies of `inputs` (tensors of `store` over
  // `memory`). Inputs that share a storage share one scratch storage, so
  // aliasing (and in-place writes through it) is reproduced.
  Result<std::vector<ElementBits>> outputs(const FunctionDef& def, const TensorStore& store,
                                           const DeviceMemory& memory,
                                           std::span<const TensorId> inputs);

  // The calls answered from a plan, and the plans kept: for tests and
  // benchmarks, which must see plans used.
  std::uint64_t planned_calls() const { return planned_calls_; }
  std::size_t plans() const;

 private:
  struct Scratch;
  struct Plan;
  struct InputSeen;
  // The plan of `def` over inputs shaped as `seen`: the body captured in
  // the scratch store (nothing runs), every tensor released again.
  static Result<Plan> make_plan(Scratch& s, const FunctionDef& def,
                                const std::vector<InputSeen>& seen);
  // A plan run: the inputs copied in, its launches, its outputs read.
  static Result<std::vector<ElementBits>> replay(Scratch& s, const Plan& plan,
                                                 const DeviceMemory& memory,
                                                 const std::vector<InputSeen>& seen);
  // Made on first use; dropped (and made again) when a call failed midway,
  // so that nothing a failed call held lingers.
  std::unique_ptr<Scratch> scratch_;
  std::uint64_t planned_calls_ = 0;
};

}  // namespace capsim
