// TensorStore (see tensor_store.hpp): tensors and views made, storages rebased or adopted, and
// each storage's block returned to the allocator when its last tensor goes.
#include "model/tensor_store.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace capsim {

Tensor TensorStore::add_tensor(const TensorMeta& meta, StorageId storage) {
  Tensor t{TensorId{next_tensor_++}, meta, storage};
  tensors_.emplace(t.id, t);
  ++storages_.at(storage).storage.use_count;
  return t;
}

Result<Tensor> TensorStore::empty(const Dims& sizes, DType dtype, PoolId pool) {
  auto meta = contiguous_meta(sizes, dtype);
  if (!meta) return meta.error();
  // As in PyTorch, an empty tensor allocates nothing: its data_ptr is 0.
  const std::int64_t bytes = numel(*meta) * static_cast<std::int64_t>(element_bytes(*meta));
  Address base = 0;
  if (bytes > 0) {
    auto block = allocator_.allocate(bytes, pool);
    if (!block) return block.error();
    base = block->address;
  }
  const StorageId id{next_storage_++};
  storages_.emplace(
      id,
      StorageEntry{Storage{id, base, static_cast<std::uint64_t>(bytes), pool, true, 0}, bytes > 0});
  return add_tensor(*meta, id);
}

Result<Tensor> TensorStore::empty_strided(const TensorMeta& meta, PoolId pool) {
  // as_strided checks ranks, signs and spans (so the sizes below cannot
  // overflow) before anything is allocated.
  CAPSIM_TRY_ASSIGN(const TensorMeta checked,
                    as_strided(meta, meta.sizes, meta.strides, meta.storage_offset,
                               std::numeric_limits<std::uint64_t>::max()));
  const std::int64_t needed = needed_size(meta.sizes, meta.strides);
  const std::int64_t elements = needed == 0 ? 0 : meta.storage_offset + needed;
  const std::int64_t bytes = elements * static_cast<std::int64_t>(element_bytes(meta));
  Address base = 0;
  if (bytes > 0) {
    CAPSIM_TRY_ASSIGN(const Block block, allocator_.allocate(bytes, pool));
    base = block.address;
  }
  const StorageId id{next_storage_++};
  storages_.emplace(
      id,
      StorageEntry{Storage{id, base, static_cast<std::uint64_t>(bytes), pool, true, 0}, bytes > 0});
  return add_tensor(checked, id);
}

Result<Tensor> TensorStore::from_address(Address base, const TensorMeta& meta, PoolId pool,
                                         std::uint64_t storage_nbytes) {
  const std::uint64_t reach = (static_cast<std::uint64_t>(meta.storage_offset) +
                               static_cast<std::uint64_t>(needed_size(meta.sizes, meta.strides))) *
                              element_bytes(meta);
  if (storage_nbytes != 0 && storage_nbytes < reach) {
    return make_error(fmt::format("a tensor reaching {} bytes over a storage of {} bytes", reach,
                                  storage_nbytes));
  }
  const std::uint64_t nbytes = storage_nbytes != 0 ? storage_nbytes : reach;
  const StorageId id{next_storage_++};
  storages_.emplace(id, StorageEntry{Storage{id, base, nbytes, pool, true, 0}, false});
  return add_tensor(meta, id);
}

Result<Tensor> TensorStore::view(TensorId base, const TensorMeta& meta) {
  auto t = tensor(base);
  if (!t) return t.error();
  const Storage& s = storages_.at(t->storage).storage;
  auto checked = as_strided(meta, meta.sizes, meta.strides, meta.storage_offset, s.nbytes);
  if (!checked) return checked.error();
  return add_tensor(*checked, t->storage);
}

Result<Tensor> TensorStore::view_of_storage(StorageId storage, const TensorMeta& meta) {
  auto it = storages_.find(storage);
  if (it == storages_.end()) return make_error(fmt::format("unknown storage {}", storage.value));
  auto checked =
      as_strided(meta, meta.sizes, meta.strides, meta.storage_offset, it->second.storage.nbytes);
  if (!checked) return checked.error();
  return add_tensor(*checked, storage);
}

Status TensorStore::force_free(StorageId storage) {
  auto it = storages_.find(storage);
  if (it == storages_.end()) return make_error(fmt::format("unknown storage {}", storage.value));
  if (!it->second.owns_block) return {};
  it->second.owns_block = false;
  return allocator_.free(it->second.storage.base);
}

Status TensorStore::rebase(StorageId storage, const Block& block, bool free_old) {
  auto it = storages_.find(storage);
  if (it == storages_.end()) return make_error(fmt::format("unknown storage {}", storage.value));
  CAPSIM_CHECK(block.size >= it->second.storage.nbytes, "the new block holds the storage");
  const Address old = it->second.storage.base;
  const bool owned = it->second.owns_block;
  it->second.storage.base = block.address;
  it->second.storage.pool = block.pool;
  it->second.owns_block = true;
  if (owned && free_old) return allocator_.free(old);
  return {};
}

Status TensorStore::adopt(StorageId storage) {
  auto it = storages_.find(storage);
  if (it == storages_.end()) return make_error(fmt::format("unknown storage {}", storage.value));
  it->second.owns_block = it->second.storage.nbytes > 0;
  return {};
}

bool TensorStore::owns_block(StorageId storage) const {
  auto it = storages_.find(storage);
  return it != storages_.end() && it->second.owns_block;
}

Status TensorStore::release(TensorId id) {
  auto it = tensors_.find(id);
  if (it == tensors_.end()) {
    return make_error(fmt::format("release of unknown tensor {}", id.value));
  }
  const StorageId sid = it->second.storage;
  tensors_.erase(it);
  StorageEntry& entry = storages_.at(sid);
  CAPSIM_CHECK(entry.storage.use_count > 0);
  if (--entry.storage.use_count > 0) return {};
  Status freed = entry.owns_block ? allocator_.free(entry.storage.base) : Status{};
  // Dead storages are forgotten, so the table stays bounded by what is live.
  // (Weak references, when they come, must keep their own record.)
  storages_.erase(sid);
  return freed;
}

Result<Tensor> TensorStore::tensor(TensorId id) const {
  const Tensor* t = find(id);
  if (t == nullptr) return make_error(fmt::format("unknown tensor {}", id.value));
  return *t;
}

const Tensor& TensorStore::at(TensorId id) const {
  auto it = tensors_.find(id);
  CAPSIM_CHECK(it != tensors_.end(), "a tensor capsim holds is not in the store");
  return it->second;
}

Result<Storage> TensorStore::storage(StorageId id) const {
  auto it = storages_.find(id);
  if (it == storages_.end()) return make_error(fmt::format("unknown storage {}", id.value));
  return it->second.storage;
}

const Tensor* TensorStore::find(TensorId id) const {
  auto it = tensors_.find(id);
  return it == tensors_.end() ? nullptr : &it->second;
}

Result<Address> TensorStore::data_address(TensorId id) const {
  const Tensor* t = find(id);
  if (t == nullptr) return make_error(fmt::format("unknown tensor {}", id.value));
  return capsim::data_address(storages_.at(t->storage).storage, t->meta);
}

std::vector<Storage> TensorStore::storages() const {
  std::vector<Storage> out;
  out.reserve(storages_.size());
  for (const auto& [id, entry] : storages_) out.push_back(entry.storage);
  std::sort(out.begin(), out.end(), [](const Storage& a, const Storage& b) { return a.id < b.id; });
  return out;
}

}  // namespace capsim
