// DeviceMemory (see device_memory.hpp): segments mapped at their fixed bases, address
// resolution, reads and writes, and the poison fill on free.
#include "model/device_memory.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace capsim {

void DeviceMemory::Unmapper::operator()(std::byte* p) const {
  if (p != nullptr) ::munmap(p, bytes);
}

std::string hex(Address address) {
  return fmt::format("{:#x}", address);
}

DeviceMemory::DeviceMemory(DeviceMemoryOptions options)
    : options_(options), next_base_(options.first_base) {
  CAPSIM_CHECK(options_.segment_granularity > 0 &&
                   (options_.segment_granularity & (options_.segment_granularity - 1)) == 0,
               "segment granularity must be a power of two");
  CAPSIM_CHECK(options_.first_base % options_.segment_granularity == 0,
               "first base must be aligned to the segment granularity");
}

Result<AddressRange> DeviceMemory::map_segment(std::uint64_t bytes) {
  if (bytes == 0 || bytes % options_.segment_granularity != 0) {
    return make_error(fmt::format("segment size {} is not a positive multiple of {}", bytes,
                                  options_.segment_granularity));
  }
  if (bytes > options_.capacity_bytes - mapped_bytes_) {
    return make_error(fmt::format(
        "out of simulated device memory: mapping a segment of {} bytes would exceed the "
        "capacity of {} bytes ({} already mapped)",
        bytes, options_.capacity_bytes, mapped_bytes_));
  }
  const AddressRange range{next_base_, bytes};
  Segment segment{range, std::unique_ptr<std::byte, Unmapper>(nullptr, Unmapper{bytes})};
  if (options_.backed) {
    void* backing = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                           0);  // zero-filled, lazily
    if (backing == MAP_FAILED) {
      return make_error(fmt::format("the host could not back a segment of {} bytes", bytes));
    }
    segment.bytes =
        std::unique_ptr<std::byte, Unmapper>(static_cast<std::byte*>(backing), Unmapper{bytes});
  }
  segments_.emplace(range.base, std::move(segment));
  next_base_ += bytes;
  mapped_bytes_ += bytes;
  CAPSIM_CHECK(next_base_ > range.base, "address space wrapped");
  return range;
}

const DeviceMemory::Segment* DeviceMemory::find(Address address, std::uint64_t bytes) const {
  auto it = segments_.upper_bound(address);
  if (it == segments_.begin()) return nullptr;
  --it;
  if (!it->second.range.contains(AddressRange{address, bytes})) return nullptr;
  return &it->second;
}

Status DeviceMemory::check_mapped(Address address, std::uint64_t bytes) const {
  // An access of no bytes touches nothing, wherever it points (an empty
  // tensor's address is 0, as its data_ptr is in PyTorch).
  if (bytes == 0 || find(address, bytes) != nullptr) return {};
  return make_error(
      fmt::format("access of {} bytes at {} is outside every mapped segment", bytes, hex(address)));
}

Result<const std::byte*> DeviceMemory::resolve(Address address, std::uint64_t bytes) const {
  if (bytes == 0) return static_cast<const std::byte*>(nullptr);
  CAPSIM_TRY(check_mapped(address, bytes));
  if (!options_.backed) {
    return make_error(fmt::format("values are off: no bytes behind {}", hex(address)));
  }
  const Segment* segment = find(address, bytes);
  return segment->bytes.get() + (address - segment->range.base);
}

Result<std::byte*> DeviceMemory::resolve(Address address, std::uint64_t bytes) {
  auto r = std::as_const(*this).resolve(address, bytes);
  if (!r) return r.error();
  return const_cast<std::byte*>(*r);  // the segment itself is ours and mutable
}

Status DeviceMemory::read(Address address, std::span<std::byte> out) const {
  if (!options_.backed) {
    CAPSIM_TRY(check_mapped(address, out.size()));
    std::fill(out.begin(), out.end(), std::byte{0});
    return {};
  }
  auto src = resolve(address, out.size());
  if (!src) return src.error();
  if (!out.empty()) std::memcpy(out.data(), *src, out.size());
  return {};
}

Status DeviceMemory::write(Address address, std::span<const std::byte> in) {
  if (!options_.backed) return check_mapped(address, in.size());
  auto dst = resolve(address, in.size());
  if (!dst) return dst.error();
  if (!in.empty()) std::memcpy(*dst, in.data(), in.size());
  return {};
}

void DeviceMemory::on_free(AddressRange range) {
  if (!options_.poison_freed || !options_.backed || range.bytes == 0) return;
  auto dst = resolve(range.base, range.bytes);
  CAPSIM_CHECK(dst.ok(), "the allocator freed a range outside every segment");
  // The pattern is aligned to the address, not to the range, so a poisoned
  // float reads as kPoisonWord whatever block it was in.
  std::byte pattern[4];
  std::memcpy(pattern, &kPoisonWord, 4);
  for (std::uint64_t i = 0; i < range.bytes; ++i) {
    (*dst)[i] = pattern[(range.base + i) % 4];
  }
}

MemoryLayout DeviceMemory::layout() const {
  MemoryLayout layout;
  for (const auto& [base, segment] : segments_) layout.segments.push_back(segment.range);
  return layout;
}

}  // namespace capsim
