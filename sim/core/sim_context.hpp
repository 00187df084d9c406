// SimContext: the shared state a simulator component works on.
//
// The World owns every object referred to here; components (the tree manager,
// the plain-API graphs, the optimizers) get this one struct, so the state they
// may touch is explicit and there is no global state anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/caching_allocator.hpp"
#include "model/cpu_backend.hpp"
#include "model/device_memory.hpp"
#include "model/digest.hpp"
#include "model/fault.hpp"
#include "model/graph_evidence.hpp"
#include "model/saturating_sum.hpp"
#include "sim/core/cudagraph_config.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/events.hpp"
#include "sim/core/messages.hpp"
#include "sim/core/tensor_refs.hpp"

namespace capsim {

class EagerOracle;  // sim/core/eager_oracle.hpp

// PyTorch's counters that tests assert on, plus capsim's own tallies.
struct Counters {
  std::uint64_t graphs_recorded = 0;  // graph_counter
  std::uint64_t warmups = 0;
  std::uint64_t replays = 0;
  std::uint64_t eager_fallbacks = 0;
  std::uint64_t checkpoints = 0;                           // debug_checkpointing_counter
  std::uint64_t cudagraph_skips = 0;                       // counters["inductor"]
  std::uint64_t cudagraph_recorded_non_static_inputs = 0;  // counters["inductor"]
  std::uint64_t copies = 0;             // tensors copied into placeholders at replay
  SaturatingSum copy_bytes;             // bytes those copies moved
  std::uint64_t generation_clones = 0;  // storages cloned out of the pool (2.14's opt-in)
  std::uint64_t rerecords = 0;          // recordings made because a static pointer changed
  std::uint64_t recompiles = 0;         // new FunctionIds from a guard failure
  std::uint64_t errors = 0;             // modelled PyTorch errors raised
  std::uint64_t replay_checks = 0;      // replays compared with eager (verify_replays)
  std::uint64_t replay_mismatches = 0;
  // The index in the event log of the first replay event whose outputs
  // differed, so that a failing check can show it (the verdict is not a
  // field: it is capsim's diagnostic, not an observation of PyTorch). An
  // index into World::events() as it grows; stale once a caller has taken
  // the events (World::take_events, as trace re-simulation does).
  std::optional<std::size_t> first_replay_mismatch;
  // Replays that read a static input whose storage was freed or moved since
  // the recording baked it in (checked with verify_replays).
  std::uint64_t static_violations = 0;
  // Compiled autograd (compiled backwards): captures on a cache miss, proxy
  // metadata reads during them, and backwards of run_capture_scenario
  // actions whose grads differ from an eager backward of the same forward.
  std::uint64_t ca_captures = 0;
  std::uint64_t ca_metadata_reads = 0;
  std::uint64_t ca_mismatches = 0;

  // A replay differed from eager; its event is about to be emitted at `event`.
  void note_replay_mismatch(std::size_t event) {
    ++replay_mismatches;
    if (!first_replay_mismatch) first_replay_mismatch = event;
  }
};

// GenerationTracker.generation and MarkStepBox.mark_step_counter.
struct GenerationState {
  std::int64_t generation = 0;
  std::int64_t mark_step_counter = 0;
  std::int64_t current() const { return mark_step_counter != 0 ? mark_step_counter : generation; }
  bool user_invoked_mark_step() const { return mark_step_counter != 0; }
};

struct SimContext {
  DeviceMemory& memory;
  CachingAllocator& allocator;
  TensorRefs& refs;
  CpuBackend& backend;
  const CudagraphConfig& config;
  std::vector<Event>& events;
  Counters& counters;
  GenerationState& generations;
  // Compare every replay's outputs with an eager run on the same inputs, run
  // by `oracle` (the World's; set whenever verify_replays is).
  bool verify_replays = false;
  EagerOracle* oracle = nullptr;
  Fault fault = Fault::kNone;  // a kTree fault (model/fault.hpp), checked by World
  std::uint32_t action = 0;    // the program action being run
  // Emit a `device` event after each record and replay (WorldOptions).
  bool device_evidence = false;

  void emit(EventKind kind, std::vector<EventField> fields) {
    CAPSIM_CHECK(events.size() < 2 * kMaxEvents, "World::run_action refuses past kMaxEvents");
    check_event_shape(kind, fields);
    // Every error the model raises is an `error` event, so this is the one
    // place that counts them.
    if (kind == EventKind::kError) ++counters.errors;
    events.push_back(Event{kind, action, std::move(fields)});
  }
  TensorStore& store() { return refs.store(); }

  // The evidence of the replay of `graph` that just ran, taken before
  // anything else touches memory; nullopt unless device_evidence is on.
  Result<std::optional<GraphEvidence>> replay_evidence(GraphHandle graph) const {
    if (!device_evidence) return std::optional<GraphEvidence>();
    CAPSIM_TRY_ASSIGN(GraphEvidence e, backend.evidence(graph));
    return std::optional<GraphEvidence>(std::move(e));
  }
  // The `device` event of that evidence, after the record or replay event
  // it belongs to.
  void emit_device(const std::optional<GraphEvidence>& evidence) {
    if (!evidence) return;
    std::vector<EventField> fields{{F::baked, evidence->baked},
                                   {F::baked_digest, Digest{evidence->baked_digest}},
                                   {F::digest, Digest{evidence->written_digest}}};
    // The driver's ids cannot be predicted by a model: an extension field,
    // which readers skip and replays do not compare.
    if (!evidence->buffer_ids.empty()) {
      fields.push_back({F::x_buffer_ids, int_list(evidence->buffer_ids)});
    }
    emit(EventKind::kDevice, std::move(fields));
  }

  // E1: true, after emitting the error, when one of `tensors` (null ids are
  // skipped) is over a storage that dealloc_current_path_weakrefs marked.
  // `where` (the tree path that touched it) is left out when empty.
  bool raise_if_overwritten(const std::vector<TensorId>& tensors, std::string where = {}) {
    for (TensorId t : tensors) {
      if (t == TensorId{0}) continue;
      const Tensor* tensor = store().find(t);
      const TensorRefs::AccessError* marked =
          tensor == nullptr ? nullptr : refs.find_access_error(tensor->storage);
      if (marked == nullptr) continue;
      std::vector<EventField> fields{{F::id, decision_key(Decision::kErrorOverwrittenOutput)},
                                     {F::exception, "RuntimeError"}};
      if (!where.empty()) fields.push_back({F::where, std::move(where)});
      fields.push_back(
          {F::message, messages::overwritten_output(profile_rules(config.torch_profile),
                                                    marked->grad_output, marked->stack_trace)});
      emit(EventKind::kError, std::move(fields));
      return true;
    }
    return false;
  }
};

}  // namespace capsim
