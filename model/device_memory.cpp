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
    Error e = make_error(fmt::format(
        "out of simulated device memory: mapping a segment of {} bytes would exceed the "
        "capacity of {} bytes ({} already mapped)",
        bytes, options_.capacity_bytes, mapped_bytes_));
    // Backed, the capacity is also the host's share (kDefaultMemoryBudget).
    if (options_.backed) e.kind = ErrorKind::values_limit;
    return e;
  }
  const AddressRange range{next_base_, bytes};
  Segment segment{range, std::unique_ptr<std::byte, Unmapper>(nullptr, Unmapper{bytes}), {}, 0};
  if (options_.backed) {
    void* backing = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                           0);  // zero-filled, lazily
    if (backing == MAP_FAILED) {
      return make_error(fmt::format("the host could not back a segment of {} bytes", bytes));
    }
    segment.bytes =
        std::unique_ptr<std::byte, Unmapper>(static_cast<std::byte*>(backing), Unmapper{bytes});
    segment.page_writes.assign(bytes / kWritePageBytes, 0);
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

Result<const DeviceMemory::Segment*> DeviceMemory::segment_of(Address address,
                                                              std::uint64_t bytes) const {
  if (const Segment* segment = find(address, bytes)) return segment;
  return make_error(
      fmt::format("access of {} bytes at {} is outside every mapped segment", bytes, hex(address)));
}

Status DeviceMemory::check_mapped(Address address, std::uint64_t bytes) const {
  // An access of no bytes touches nothing, wherever it points (an empty
  // tensor's address is 0, as its data_ptr is in PyTorch).
  if (bytes == 0) return {};
  CAPSIM_TRY(segment_of(address, bytes));
  return {};
}

Result<const std::byte*> DeviceMemory::resolve(Address address, std::uint64_t bytes) const {
  if (bytes == 0) return static_cast<const std::byte*>(nullptr);
  CAPSIM_TRY_ASSIGN(const Segment* segment, segment_of(address, bytes));
  if (!options_.backed) {
    return make_error(fmt::format("values are off: no bytes behind {}", hex(address)));
  }
  return segment->bytes.get() + (address - segment->range.base);
}

Result<std::byte*> DeviceMemory::resolve(Address address, std::uint64_t bytes) {
  if (bytes == 0) return static_cast<std::byte*>(nullptr);
  CAPSIM_TRY_ASSIGN(const Segment* found, segment_of(address, bytes));
  if (!options_.backed) {
    return make_error(fmt::format("values are off: no bytes behind {}", hex(address)));
  }
  // The segment itself is ours and mutable.
  Segment& segment = const_cast<Segment&>(*found);
  const std::uint64_t offset = address - segment.range.base;
  const std::uint64_t first = offset / kWritePageBytes;
  const std::uint64_t last = (offset + bytes - 1) / kWritePageBytes;
  CAPSIM_CHECK(last < segment.page_writes.size(), "a resolved range lies inside its segment");
  segment.last_write = ++writes_;
  std::fill(segment.page_writes.begin() + static_cast<std::ptrdiff_t>(first),
            segment.page_writes.begin() + static_cast<std::ptrdiff_t>(last + 1), writes_);
  return segment.bytes.get() + offset;
}

std::vector<AddressRange> DeviceMemory::written_since(std::uint64_t count) const {
  CAPSIM_CHECK(count <= writes_, "a write count this memory has given");
  std::vector<AddressRange> out;
  for (const auto& [base, segment] : segments_) {
    if (segment.last_write <= count) continue;
    // Runs merge inside a segment only: a range must resolve, and two
    // segments may be neighbours in the address space.
    const std::size_t first_of_segment = out.size();
    for (std::size_t page = 0; page < segment.page_writes.size(); ++page) {
      if (segment.page_writes[page] <= count) continue;
      const Address at = base + page * kWritePageBytes;
      if (out.size() > first_of_segment && out.back().end() == at) {
        out.back().bytes += kWritePageBytes;
      } else {
        out.push_back(AddressRange{at, kWritePageBytes});
      }
    }
  }
  return out;
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
