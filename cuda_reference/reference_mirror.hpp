// ReferenceMirror: any Backend, run beside the model and compared with it.
//
// The ReplayMirror (model/replay_mirror.hpp) that `capsim check --backend
// cuda` and `capsim record --backend cuda` attach to a World: it instantiates
// every program the model instantiates on its target backend (the CUDA
// backend; a second CPU backend over its own memory in the host tests), and
// around every replay it
//   1. maps any new segment and copies the model's memory into the target, so
//      that the graph starts from the model's bytes;
//   2. replays its own graph;
//   3. compares the target's memory with the model's, bit for bit, and keeps
//      the evidence (baked pointers, written digest, buffer ids) as the
//      target reports it.
// A graph's first replay copies and compares every segment: that is where a
// kernel that writes outside its arguments shows. Its later replays run the
// same program at the same baked addresses, so they copy and compare only
// the ranges the graph's steps touch (its pointer uses, merged): a replay
// reads nothing else, and writes nothing else that its first replay did not
// already show. Whole segments per replay made reference.agrees 25 times the
// cost of the property it mirrors (docs/performance.md).
// Where the target tracks its own writes (Backend::write_count; the host
// backend, over a DeviceMemory, does), neither rule is needed: before each
// replay the mirror copies in the pages that the model or the target wrote
// since they last agreed, and after it compares the pages either wrote since.
// That is exact, not a sample: a page neither side wrote still holds the
// bytes both agreed on, so a stray write of the target shows wherever it
// lands, at any replay. The CUDA backend cannot say what its kernels wrote
// and keeps the rules above.
// At instantiation it also compares the target's baked pointers (read back
// from the driver, translated to simulated addresses) with the program's.
// The first disagreement is kept, with the graph, the replay, the address
// and both values, and the mirror stops checking.
//
// Plain C++ over the Backend interface, so that every rule is tested without
// a GPU (tests/cuda_host/test_reference_mirror.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/backend.hpp"
#include "model/fault.hpp"
#include "model/replay_mirror.hpp"

namespace capsim::cuda {

struct MirrorStats {
  std::uint64_t graphs = 0;
  std::uint64_t replays = 0;
  std::uint64_t bytes_uploaded = 0;
  std::uint64_t bytes_compared = 0;
};

class ReferenceMirror final : public ReplayMirror {
 public:
  // `fault`: a kMirror fault (model/fault.hpp), for negative controls only.
  explicit ReferenceMirror(Backend& target, Fault fault = Fault::kNone)
      : target_(target), fault_(fault) {
    CAPSIM_CHECK_FAULT_SITE(fault_, FaultSite::kMirror);
  }
  // The same, owning its target.
  explicit ReferenceMirror(std::unique_ptr<Backend> target, Fault fault = Fault::kNone)
      : owned_(std::move(target)), target_(*owned_), fault_(fault) {
    CAPSIM_CHECK_FAULT_SITE(fault_, FaultSite::kMirror);
  }

  std::string_view name() const override { return target_.name(); }
  std::string describe() const override { return target_.describe(); }
  void instantiated(GraphHandle handle, const StepProgram& program,
                    const DeviceMemory& memory) override;
  void before_replay(GraphHandle handle, const DeviceMemory& memory) override;
  void after_replay(GraphHandle handle, const DeviceMemory& memory) override;
  std::optional<GraphEvidence> evidence(GraphHandle handle) const override;
  const std::optional<std::string>& disagreement() const override { return disagreement_; }

  const MirrorStats& stats() const { return stats_; }

 private:
  struct Graph {
    GraphHandle target;
    std::string name;
    std::uint64_t replays = 0;
    // Read from the target once, at instantiation: a graph's baked pointers
    // and buffers never change (the CUDA backend re-checks that itself after
    // every replay), so each replay's evidence reuses them.
    std::vector<PointerUse> baked;
    std::vector<std::uint64_t> buffer_ids;
    std::optional<GraphEvidence> evidence;
    // The program's pointer ranges, sorted, overlapping ones merged: what a
    // replay after the first copies in and compares.
    std::vector<AddressRange> touched;
  };
  bool stopped() const { return disagreement_.has_value(); }
  void disagree(std::string what);
  Status materialize(const DeviceMemory& memory);
  // With write tracking, the pages either side wrote since they last
  // agreed; without, the segments for a graph's first replay, its touched
  // ranges after.
  std::vector<AddressRange> checked_ranges(const Graph& graph, const DeviceMemory& memory,
                                           bool first_replay) const;
  // Both sides agree now: their write counts, where the target tracks its own.
  void mark_synced(const DeviceMemory& memory);
  Status compare(const Graph& graph, const DeviceMemory& memory);
  Status record_evidence(Graph& graph);

  std::unique_ptr<Backend> owned_;  // declared first: target_ may refer to it
  Backend& target_;
  Fault fault_;
  std::map<std::uint32_t, Graph> graphs_;  // by the model's handle
  std::uint64_t mapped_segments_ = 0;
  bool uploaded_once_ = false;
  // Where the target tracks its writes (Backend::write_count): the write
  // counts of the model's memory and of the target when they last agreed.
  // Empty before the first copy (read as zeros: both then hold the zeros
  // they mapped, but for what the model wrote, all of which is copied in).
  struct Synced {
    std::uint64_t model = 0;
    std::uint64_t target = 0;
  };
  std::optional<Synced> synced_;
  std::optional<std::string> disagreement_;
  MirrorStats stats_;
};

}  // namespace capsim::cuda
