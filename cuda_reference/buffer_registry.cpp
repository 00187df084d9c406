// The registry of a reference graph's allocations (see buffer_registry.hpp): adding a buffer,
// locating a baked range, translating addresses both ways and checking that no buffer changed.
#include "cuda_reference/buffer_registry.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace capsim::cuda {

namespace {

std::string describe(const StaticBuffer& b) {
  return fmt::format("{} ({} [{:#x}, {:#x}), id {})", b.name, buffer_kind_name(b.kind), b.base,
                     b.base + b.bytes, b.buffer_id);
}

}  // namespace

std::string_view buffer_kind_name(BufferKind kind) {
  switch (kind) {
#define CAPSIM_CASE_(e, name) \
  case BufferKind::e: return name;
    CAPSIM_BUFFER_KINDS(CAPSIM_CASE_)
#undef CAPSIM_CASE_
  }
  return "?";
}

Status BufferRegistry::add(StaticBuffer buffer) {
  if (buffers_.size() >= kMaxBuffers) {
    return make_error(
        fmt::format("buffer registry: the limit of {} buffers is reached", kMaxBuffers));
  }
  if (buffer.bytes == 0) return make_error(fmt::format("buffer {}: it is empty", buffer.name));
  if (buffer.base + buffer.bytes < buffer.base) {
    return make_error(fmt::format("buffer {}: its range wraps around", buffer.name));
  }
  for (const StaticBuffer& b : buffers_) {
    if (buffer.base < b.base + b.bytes && b.base < buffer.base + buffer.bytes) {
      return make_error(fmt::format("buffer {} overlaps buffer {}", describe(buffer), describe(b)));
    }
    if (buffer.buffer_id == b.buffer_id) {
      return make_error(
          fmt::format("buffer {} has the id of buffer {}: the driver never reuses one",
                      describe(buffer), describe(b)));
    }
    if (buffer.name == b.name) {
      return make_error(fmt::format("buffer name '{}' is registered twice", buffer.name));
    }
    if (buffer.simulated_base && b.simulated_base && *buffer.simulated_base == *b.simulated_base) {
      return make_error(fmt::format("buffers {} and {} map the same simulated segment {:#x}",
                                    buffer.name, b.name, *buffer.simulated_base));
    }
  }
  if (buffer.simulated_base && buffer.kind != BufferKind::kDevice) {
    return make_error(
        fmt::format("buffer {}: only device buffers map simulated segments", buffer.name));
  }
  buffers_.push_back(std::move(buffer));
  by_base_.push_back(buffers_.size() - 1);
  std::sort(by_base_.begin(), by_base_.end(),
            [this](std::size_t a, std::size_t b) { return buffers_[a].base < buffers_[b].base; });
  return {};
}

Result<std::size_t> BufferRegistry::locate(std::uint64_t address, std::uint64_t bytes) const {
  // The last buffer whose base is at or below the address.
  auto it =
      std::upper_bound(by_base_.begin(), by_base_.end(), address,
                       [this](std::uint64_t a, std::size_t i) { return a < buffers_[i].base; });
  if (it == by_base_.begin()) {
    return make_error(
        fmt::format("[{:#x}, +{}) lies outside every registered buffer", address, bytes));
  }
  const std::size_t index = *std::prev(it);
  const StaticBuffer& b = buffers_[index];
  const std::uint64_t end = b.base + b.bytes;
  const bool starts_inside = bytes == 0 ? address <= end : address < end;
  if (!starts_inside) {
    return make_error(
        fmt::format("[{:#x}, +{}) lies outside every registered buffer", address, bytes));
  }
  if (bytes > end - address) {
    return make_error(fmt::format("[{:#x}, +{}) starts in buffer {} and runs {} bytes past its end",
                                  address, bytes, describe(b), bytes - (end - address)));
  }
  return index;
}

Result<Address> BufferRegistry::to_simulated(std::uint64_t device_address) const {
  CAPSIM_TRY_ASSIGN(const std::size_t index, locate(device_address, 0));
  const StaticBuffer& b = buffers_[index];
  if (!b.simulated_base) {
    return make_error(fmt::format("{:#x} lies in buffer {}, which maps no simulated segment",
                                  device_address, describe(b)));
  }
  return *b.simulated_base + (device_address - b.base);
}

Result<std::uint64_t> BufferRegistry::to_device(Address simulated) const {
  for (const StaticBuffer& b : buffers_) {
    if (b.simulated_base && simulated >= *b.simulated_base &&
        simulated - *b.simulated_base <= b.bytes) {
      return b.base + (simulated - *b.simulated_base);
    }
  }
  return make_error(fmt::format("simulated address {:#x} is in no mapped segment", simulated));
}

Status BufferRegistry::check_unchanged(std::span<const BufferObservation> now) const {
  if (now.size() != buffers_.size()) {
    return make_error(
        fmt::format("{} observations for {} registered buffers", now.size(), buffers_.size()));
  }
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const StaticBuffer& b = buffers_[i];
    const BufferObservation& o = now[i];
    if (!o.found) {
      return make_error(
          fmt::format("buffer {}: the driver knows no allocation there any more", describe(b)));
    }
    if (o.buffer_id != b.buffer_id) {
      return make_error(fmt::format(
          "buffer {}: its id is now {}: it was freed and another allocation took its place",
          describe(b), o.buffer_id));
    }
    if (b.kind == BufferKind::kDevice && (o.range_base != b.base || o.range_bytes < b.bytes)) {
      return make_error(fmt::format("buffer {}: the driver's range is now [{:#x}, +{})",
                                    describe(b), o.range_base, o.range_bytes));
    }
  }
  return {};
}

}  // namespace capsim::cuda
