#include "sim/core/eager_oracle.hpp"

#include <cstring>
#include <map>

#include "model/caching_allocator.hpp"
#include "model/cpu_backend.hpp"
#include "sim/core/body_interpreter.hpp"
#include "sim/core/tensor_refs.hpp"

namespace capsim {

Result<ElementBits> gather_bits(const DeviceMemory& memory, Address data, const TensorMeta& meta) {
  const std::int64_t n = numel(meta);
  ElementBits out;
  out.reserve(static_cast<std::size_t>(n));
  const std::size_t rank = meta.sizes.size();
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t e = 0; e < n; ++e) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += index[d] * meta.strides[d];
    std::uint32_t bits = 0;
    CAPSIM_TRY(memory.read(data + static_cast<std::uint64_t>(offset) * kElementBytes,
                           std::as_writable_bytes(std::span(&bits, 1))));
    out.push_back(bits);
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < meta.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Result<std::vector<ElementBits>> eager_reference_outputs(const FunctionDef& def,
                                                         const TensorStore& store,
                                                         const DeviceMemory& memory,
                                                         std::span<const TensorId> inputs) {
  DeviceMemory scratch_memory;
  CachingAllocator allocator(scratch_memory);
  TensorStore scratch_store(allocator);
  TensorRefs refs(scratch_store);
  CpuBackend backend(scratch_memory);
  // One scratch storage per distinct input storage, so inputs that alias one
  // another (the same tensor passed twice, or two views of one base) alias in
  // the scratch run too, and in-place ops see each other's writes.
  std::map<StorageId, TensorId> scratch_base;
  std::vector<TensorId> copies;
  for (TensorId id : inputs) {
    CAPSIM_TRY_ASSIGN(const Tensor t, store.tensor(id));
    CAPSIM_TRY_ASSIGN(const Storage storage, store.storage(t.storage));
    auto it = scratch_base.find(t.storage);
    if (it == scratch_base.end()) {
      const auto elements = static_cast<std::int64_t>(storage.nbytes / kElementBytes);
      CAPSIM_TRY_ASSIGN(const Tensor buffer, scratch_store.empty({elements}));
      refs.hold(buffer.id);
      if (elements > 0) {
        std::vector<std::byte> bytes(static_cast<std::size_t>(elements) * kElementBytes);
        CAPSIM_TRY(memory.read(storage.base, bytes));
        CAPSIM_TRY_ASSIGN(const Address to, scratch_store.data_address(buffer.id));
        CAPSIM_TRY(scratch_memory.write(to, bytes));
      }
      it = scratch_base.emplace(t.storage, buffer.id).first;
    }
    CAPSIM_TRY_ASSIGN(const Tensor view, scratch_store.view(it->second, t.meta));
    refs.hold(view.id);
    copies.push_back(view.id);
  }
  BodyEnv env{refs, backend, kDefaultPool, nullptr};
  CAPSIM_TRY_ASSIGN(const std::vector<TensorId> outputs, run_body(def, copies, env));
  std::vector<ElementBits> values;
  for (TensorId o : outputs) {
    CAPSIM_TRY_ASSIGN(const Tensor t, scratch_store.tensor(o));
    CAPSIM_TRY_ASSIGN(const Address data, scratch_store.data_address(o));
    CAPSIM_TRY_ASSIGN(ElementBits bits, gather_bits(scratch_memory, data, t.meta));
    values.push_back(std::move(bits));
  }
  return values;
}

}  // namespace capsim
