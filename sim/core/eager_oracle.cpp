#include "sim/core/eager_oracle.hpp"

#include <map>

#include "model/caching_allocator.hpp"
#include "model/cpu_backend.hpp"
#include "sim/core/body_interpreter.hpp"
#include "sim/core/tensor_refs.hpp"

namespace capsim {

namespace {

bool row_major_contiguous(const TensorMeta& meta) {
  std::int64_t expected = 1;
  for (std::size_t d = meta.sizes.size(); d-- > 0;) {
    if (meta.sizes[d] != 1 && meta.strides[d] != expected) return false;
    expected *= meta.sizes[d];
  }
  return true;
}

}  // namespace

Result<ElementBits> gather_bits(const DeviceMemory& memory, Address data, const TensorMeta& meta) {
  const std::int64_t n = numel(meta);
  ElementBits out;
  if (n > 0 && row_major_contiguous(meta)) {
    out.resize(static_cast<std::size_t>(n));
    CAPSIM_TRY(memory.read(data, std::as_writable_bytes(std::span(out))));
    return out;
  }
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

struct EagerOracle::Scratch {
  DeviceMemory memory;
  CachingAllocator allocator{memory};
  TensorStore store{allocator};
  CpuBackend backend{memory};
};

EagerOracle::EagerOracle() = default;
EagerOracle::~EagerOracle() = default;

Result<std::vector<ElementBits>> EagerOracle::outputs(const FunctionDef& def,
                                                      const TensorStore& store,
                                                      const DeviceMemory& memory,
                                                      std::span<const TensorId> inputs) {
  if (!scratch_) scratch_ = std::make_unique<Scratch>();
  CAPSIM_CHECK(scratch_->store.live_tensors() == 0, "the oracle starts from an empty store");
  Result<std::vector<ElementBits>> out = run(*scratch_, def, store, memory, inputs);
  // A call that failed midway may leave tensors behind: start the next one
  // from a fresh scratch rather than from what it left.
  if (!out || scratch_->store.live_tensors() != 0) scratch_.reset();
  return out;
}

Result<std::vector<ElementBits>> EagerOracle::run(Scratch& s, const FunctionDef& def,
                                                  const TensorStore& store,
                                                  const DeviceMemory& memory,
                                                  std::span<const TensorId> inputs) {
  TensorRefs refs(s.store);
  std::vector<TensorId> held;  // released before returning
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
      CAPSIM_TRY_ASSIGN(const Tensor buffer, s.store.empty({elements}));
      refs.hold(buffer.id);
      held.push_back(buffer.id);
      if (elements > 0) {
        CAPSIM_TRY_ASSIGN(const Address to, s.store.data_address(buffer.id));
        CAPSIM_TRY_ASSIGN(std::byte* const dst, s.memory.resolve(to, storage.nbytes));
        CAPSIM_TRY(memory.read(storage.base, std::span(dst, storage.nbytes)));
      }
      it = scratch_base.emplace(t.storage, buffer.id).first;
    }
    CAPSIM_TRY_ASSIGN(const Tensor view, s.store.view(it->second, t.meta));
    refs.hold(view.id);
    held.push_back(view.id);
    copies.push_back(view.id);
  }
  BodyEnv env{refs, s.backend, kDefaultPool, nullptr};
  CAPSIM_TRY_ASSIGN(const std::vector<TensorId> outputs, run_body(def, copies, env));
  held.insert(held.end(), outputs.begin(), outputs.end());
  std::vector<ElementBits> values;
  for (TensorId o : outputs) {
    CAPSIM_TRY_ASSIGN(const Tensor t, s.store.tensor(o));
    CAPSIM_TRY_ASSIGN(const Address data, s.store.data_address(o));
    CAPSIM_TRY_ASSIGN(ElementBits bits, gather_bits(s.memory, data, t.meta));
    values.push_back(std::move(bits));
  }
  for (TensorId id : held) CAPSIM_TRY(refs.drop(id));
  return values;
}

}  // namespace capsim
