// The compiled-autograd runner: one backward at a time through Phase A, the
// cache, the initial capture on a miss and (functional mode) a run of the
// captured graph, logged as lines and events.
//
// The scenarios behind `capsim capture` (sim/scenarios/autograd_scenarios.hpp)
// run through it standalone; the graphs a recorder of real PyTorch walked
// (sim/compiled_autograd/imported_autograd.hpp) and a World's compiled backwards share
// its capture_one_backward. A World runs a scenario's forward by name through
// a CaptureScenarioLookup it is given (WorldOptions::autograd_scenarios), so
// that the world wing needs the scenario type but never the content.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/autograd/autograd_engine.hpp"
#include "sim/compiled_autograd/capture.hpp"
#include "sim/compiled_autograd/release_form.hpp"
#include "sim/core/events.hpp"

namespace capsim {

// What a run shows an observer of each backward (render/ draws these): the
// autograd graph the forward built, the store its saved tensors live in and,
// on a cache miss, the graph just captured (null on a hit).
struct BackwardView {
  std::uint64_t backward = 0;  // index in the run, from 0
  CaptureMode mode = CaptureMode::kFunctional;
  const AutogradGraph* graph = nullptr;
  const TensorStore* store = nullptr;
  const FxGraph* captured = nullptr;
};

struct CaptureRunLog {
  // Called once per backward, after its cache decision and capture; optional.
  std::function<void(const BackwardView&)> observer;
  std::vector<std::string> lines;  // printed in order
  // The same run as events, for traces (their `action` is left 0: a World
  // that runs the scenario as one action sets it): per backward a
  // ca_cache_hit, or a ca_cache_miss, its metadata_reads and a ca_capture;
  // then, in functional mode, a ca_run.
  std::vector<Event> events;
  std::uint64_t backwards = 0;
  // When set, each capture is also printed in this release's own form
  // (`capsim capture --torch`), after capsim's.
  std::optional<CaGraphForm> release_form;
  // Appends an event, held to its kind's row as SimContext::emit holds the
  // World's: `capsim capture` prints these without a World.
  void emit(EventKind kind, std::vector<EventField> fields) {
    check_event_shape(kind, fields);
    events.push_back(Event{kind, 0, std::move(fields)});
  }
  std::uint64_t captures = 0;
  std::uint64_t hits = 0;
  std::uint64_t metadata_reads = 0;
  // Functional mode only: backwards run through their captured graph, and
  // those whose grads differ from an eager backward of the same forward.
  std::uint64_t executed = 0;
  std::uint64_t mismatches = 0;
};

// Phase A, the cache and, on a miss, the initial capture in `mode` of one
// backward over `graph` from `root`: its lines and events go to `log` (a hit,
// or a miss with its metadata reads and its ca_capture). Shared by the
// scenarios' runner and by recorded graphs (sim/compiled_autograd/imported_autograd.hpp).
struct BackwardCapture {
  std::uint64_t backward = 0;  // index in the log's run
  CacheDecision decision;
  CollectedBackward collected;
  std::optional<FxGraph> captured;  // on a miss
};
Result<BackwardCapture> capture_one_backward(const AutogradGraph& graph, AutogradNodeId root,
                                             const TensorStore& store, CompiledAutogradCache& cache,
                                             CaptureMode mode, bool dynamic, CaptureRunLog& log);

// One backward through compiled autograd: Phase A, the cache, a capture on a
// miss, and (functional mode) a run of the entry's graph on the engine's
// tensors, as compiled_fn(inputs, sizes, scalars, hooks). Shared by the
// scenarios; errors are the capture's or the run's own.
class CompiledAutogradRunner {
 public:
  CompiledAutogradRunner(CaptureMode mode, bool dynamic) : mode_(mode), dynamic_(dynamic) {}
  Status backward(AutogradEngine& engine, const Variable& root, const TensorStore& store,
                  CaptureRunLog& log);

 private:
  CaptureMode mode_;
  bool dynamic_;
  CompiledAutogradCache cache_;
  std::map<std::uint64_t, FxGraph> graphs_;  // per cache entry: its latest capture
};

// The grads a backward left in its leaves' .grad, leaves in creation order,
// as float32 values (a leaf whose .grad is None: an empty list).
using LeafGrads = std::vector<std::vector<float>>;
// FNV-1a 64 over the float32 bytes of every grad in order: ca_run's digest.
Digest digest_of(const LeafGrads& grads);
bool bitwise_equal(const LeafGrads& a, const LeafGrads& b);

// A built-in compiled-autograd scenario (sim/scenarios/autograd_scenarios.hpp):
// `backwards` times, a fresh forward builds a fresh graph and one backward
// runs through compiled autograd. The content is the forward alone, so that
// the same scenario runs standalone (`run`, behind `capsim capture`) and as a
// World's run_capture_scenario action, on the World's engine, memory and tree
// (sim/world/world_capture.cpp).
struct AutogradScenario {
  std::string name;
  std::string mirrors;
  std::string description;
  std::uint64_t expected_captures = 0;  // what the PyTorch test asserts (functional mode)
  int backwards = 1;
  bool dynamic = false;  // torch._dynamo.compiled_autograd._enable(..., dynamic=)
  // Backward `i`'s forward on `engine`: its leaves, its graph, its loss.
  std::function<Result<Variable>(AutogradEngine& engine, int i)> forward;

  // Standalone: a fresh engine per backward on a device of its own, the
  // runner's cache across them and, in functional mode, each compiled
  // backward's grads checked against `eager_grads`.
  Status run(CaptureMode mode, CaptureRunLog& log) const;
  // The eager engine's loss.backward() of backward `i`, on a device of its
  // own: its leaves' grads, the reference for a compiled backward's.
  Result<LeafGrads> eager_grads(int i) const;
};

// Finds a capture scenario by name: null for none.
using CaptureScenarioLookup = std::function<const AutogradScenario*(const std::string& name)>;

}  // namespace capsim
