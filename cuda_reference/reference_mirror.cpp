// ReferenceMirror (see reference_mirror.hpp): the target's graphs beside the model's, the copy
// in and the bitwise compare around each replay, and the first disagreement kept.
#include "cuda_reference/reference_mirror.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace capsim::cuda {

namespace {

// "0x7f0000000040: the model has 1.5 (0x3fc00000), cuda has 1.5000001
// (0x3fc00001)": the float32 word that holds the first differing byte.
std::string describe_difference(Address segment, std::uint64_t offset, const std::byte* model,
                                const std::byte* target, std::uint64_t segment_bytes,
                                std::string_view target_name) {
  const std::uint64_t word = offset & ~std::uint64_t{3};
  if (word + 4 > segment_bytes) {
    return fmt::format("{}: the model has byte {:#04x}, {} has {:#04x}", hex(segment + offset),
                       static_cast<unsigned>(model[offset]), target_name,
                       static_cast<unsigned>(target[offset]));
  }
  std::uint32_t m = 0, t = 0;
  std::memcpy(&m, model + word, 4);
  std::memcpy(&t, target + word, 4);
  float mf = 0, tf = 0;
  std::memcpy(&mf, &m, 4);
  std::memcpy(&tf, &t, 4);
  return fmt::format("{}: the model has {} ({:#010x}), {} has {} ({:#010x})", hex(segment + word),
                     mf, m, target_name, tf, t);
}

// The ranges of `uses`, sorted by base, with overlapping ones merged. Ranges
// that only touch stay apart: each lies in one segment, and two segments may
// be neighbours in the address space.
std::vector<AddressRange> merged_ranges(std::vector<AddressRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const AddressRange& a, const AddressRange& b) { return a.base < b.base; });
  std::vector<AddressRange> merged;
  for (const AddressRange& r : ranges) {
    if (!merged.empty() && r.base < merged.back().end()) {
      const Address end = std::max(merged.back().end(), r.end());
      merged.back().bytes = end - merged.back().base;
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::vector<AddressRange> merged_ranges(const std::vector<PointerUse>& uses) {
  std::vector<AddressRange> ranges;
  ranges.reserve(uses.size());
  for (const PointerUse& u : uses) {
    if (u.range.bytes > 0) ranges.push_back(u.range);
  }
  return merged_ranges(std::move(ranges));
}

}  // namespace

void ReferenceMirror::disagree(std::string what) {
  if (!disagreement_) disagreement_ = std::move(what);
}

Status ReferenceMirror::materialize(const DeviceMemory& memory) {
  // Segments are only ever added (never unmapped), so the count says whether
  // the target has seen them all.
  const MemoryLayout layout = memory.layout();
  if (layout.segments.size() == mapped_segments_) return {};
  CAPSIM_TRY(target_.materialize(layout));
  mapped_segments_ = layout.segments.size();
  return {};
}

void ReferenceMirror::instantiated(GraphHandle handle, const StepProgram& program,
                                   const DeviceMemory& memory) {
  if (stopped()) return;
  if (Status s = materialize(memory); !s) return disagree(s.error().message);
  Result<GraphHandle> target = target_.instantiate(program);
  if (!target) {
    return disagree(fmt::format("graph '{}': {}", program.name, target.error().message));
  }
  ++stats_.graphs;
  Graph& graph = graphs_[handle.value];
  graph.target = *target;
  graph.name = program.name;
  // The baked pointers as the target holds them (the CUDA backend: read back
  // from the driver, translated to simulated addresses) against the
  // program's own.
  Result<std::vector<PointerUse>> baked = target_.baked_pointers(*target);
  if (!baked) return disagree(fmt::format("graph '{}': {}", program.name, baked.error().message));
  const std::vector<PointerUse> want = pointer_uses(program);
  graph.touched = merged_ranges(want);
  if (*baked == want) {
    Result<std::vector<std::uint64_t>> ids = target_.buffer_ids(*target);
    if (!ids) return disagree(fmt::format("graph '{}': {}", program.name, ids.error().message));
    graph.baked = std::move(*baked);
    graph.buffer_ids = std::move(*ids);
    return;
  }
  if (baked->size() != want.size()) {
    return disagree(fmt::format("graph '{}': {} bakes {} pointers, the model {}", program.name,
                                target_.name(), baked->size(), want.size()));
  }
  const auto [got, expected] = std::mismatch(baked->begin(), baked->end(), want.begin());
  disagree(fmt::format("graph '{}': step {} argument {}: {} bakes [{}, +{}), the model [{}, +{})",
                       program.name, expected->step, expected->arg, target_.name(),
                       hex(got->range.base), got->range.bytes, hex(expected->range.base),
                       expected->range.bytes));
}

std::vector<AddressRange> ReferenceMirror::checked_ranges(const Graph& graph,
                                                          const DeviceMemory& memory,
                                                          bool first_replay) const {
  if (target_.write_count()) {
    // Where either side wrote since they last agreed; everywhere else both
    // still hold the bytes they agreed on (before the first copy: the zeros
    // both mapped).
    const Synced synced = synced_.value_or(Synced{});
    std::vector<AddressRange> ranges = memory.written_since(synced.model);
    std::vector<AddressRange> theirs = target_.written_since(synced.target);
    ranges.insert(ranges.end(), theirs.begin(), theirs.end());
    return merged_ranges(std::move(ranges));
  }
  if (first_replay) return memory.layout().segments;
  return graph.touched;
}

void ReferenceMirror::mark_synced(const DeviceMemory& memory) {
  if (const std::optional<std::uint64_t> target = target_.write_count()) {
    synced_ = Synced{memory.write_count(), *target};
  }
}

void ReferenceMirror::before_replay(GraphHandle handle, const DeviceMemory& memory) {
  if (stopped()) return;
  auto it = graphs_.find(handle.value);
  if (it == graphs_.end()) {
    return disagree(fmt::format("graph {} replays but was never instantiated", handle.value));
  }
  if (Status s = materialize(memory); !s) return disagree(s.error().message);
  if (fault_ == Fault::kSkipUpload && uploaded_once_) return;
  uploaded_once_ = true;
  for (const AddressRange& range : checked_ranges(it->second, memory, it->second.replays == 0)) {
    Result<const std::byte*> bytes = memory.resolve(range.base, range.bytes);
    if (!bytes) return disagree(bytes.error().message);
    if (Status s = target_.write(range.base, {*bytes, range.bytes}); !s) {
      return disagree(fmt::format("copying {} in: {}", hex(range.base), s.error().message));
    }
    stats_.bytes_uploaded += range.bytes;
  }
  mark_synced(memory);  // after the copies, which the target counts as writes
}

Status ReferenceMirror::compare(const Graph& graph, const DeviceMemory& memory) {
  std::vector<std::byte> theirs;
  // after_replay counts the replay before it compares: 1 is the first.
  for (const AddressRange& range : checked_ranges(graph, memory, graph.replays == 1)) {
    CAPSIM_TRY_ASSIGN(const std::byte* ours, memory.resolve(range.base, range.bytes));
    theirs.resize(range.bytes);
    CAPSIM_TRY(target_.read(range.base, theirs));
    stats_.bytes_compared += range.bytes;
    if (std::memcmp(ours, theirs.data(), range.bytes) == 0) continue;
    const auto at = std::mismatch(theirs.begin(), theirs.end(), ours);
    const std::uint64_t offset = static_cast<std::uint64_t>(at.first - theirs.begin());
    return make_error(fmt::format(
        "graph '{}' replay {}: {}", graph.name, graph.replays,
        describe_difference(range.base, offset, ours, theirs.data(), range.bytes, target_.name())));
  }
  return {};
}

Status ReferenceMirror::record_evidence(Graph& graph) {
  CAPSIM_TRY_ASSIGN(GraphEvidence e,
                    graph_evidence(graph.baked, [this](Address address, std::span<std::byte> out) {
                      return target_.read(address, out);
                    }));
  e.buffer_ids = graph.buffer_ids;
  graph.evidence = std::move(e);
  return {};
}

void ReferenceMirror::after_replay(GraphHandle handle, const DeviceMemory& memory) {
  if (stopped()) return;
  Graph& graph = graphs_.at(handle.value);
  ++graph.replays;
  ++stats_.replays;
  graph.evidence.reset();
  if (Status s = target_.replay(graph.target); !s) {
    return disagree(
        fmt::format("graph '{}' replay {}: {}", graph.name, graph.replays, s.error().message));
  }
  if (Status s = compare(graph, memory); !s) return disagree(s.error().message);
  mark_synced(memory);
  if (Status s = record_evidence(graph); !s) {
    return disagree(
        fmt::format("graph '{}' replay {}: {}", graph.name, graph.replays, s.error().message));
  }
}

std::optional<GraphEvidence> ReferenceMirror::evidence(GraphHandle handle) const {
  if (stopped()) return std::nullopt;
  auto it = graphs_.find(handle.value);
  if (it == graphs_.end()) return std::nullopt;
  return it->second.evidence;
}

}  // namespace capsim::cuda
