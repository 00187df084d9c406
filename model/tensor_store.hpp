// TensorStore: the tensors and storages that exist, with their lifetimes.
//
// It hands out StorageIds and TensorIds from counters (never from host
// addresses), counts the tensors that use each storage, and returns a storage's
// block to the CachingAllocator when its last tensor is released, as PyTorch's
// deleter does. A storage may also wrap memory it does not own (a replayed
// cudagraph output is such a non-owning tensor): releasing it frees nothing.
#pragma once

#include <unordered_map>

#include "model/caching_allocator.hpp"
#include "model/hashing.hpp"
#include "model/tensor.hpp"

namespace capsim {

class TensorStore {
 public:
  explicit TensorStore(CachingAllocator& allocator) : allocator_(allocator) {}
  TensorStore(const TensorStore&) = delete;
  TensorStore& operator=(const TensorStore&) = delete;

  // A fresh contiguous tensor whose storage is allocated from `pool`.
  Result<Tensor> empty(const Dims& sizes, DType dtype = DType::kFloat32,
                       PoolId pool = kDefaultPool);
  // A fresh tensor with `meta`'s sizes, strides, offset and dtype
  // (torch.empty_strided, plus the offset): its storage holds the offset and
  // every element the strides reach.
  Result<Tensor> empty_strided(const TensorMeta& meta, PoolId pool = kDefaultPool);
  // A tensor over memory someone else owns (nothing is freed on release). The
  // storage spans `storage_nbytes`, or just what `meta` reaches when that is 0.
  Result<Tensor> from_address(Address base, const TensorMeta& meta, PoolId pool,
                              std::uint64_t storage_nbytes = 0);
  // A view of `base` with metadata `meta`, checked against the storage's size.
  Result<Tensor> view(TensorId base, const TensorMeta& meta);
  // A new tensor over an existing storage (a replayed output rebuilt over the
  // storage of an output it aliases).
  Result<Tensor> view_of_storage(StorageId storage, const TensorMeta& meta);

  // Frees a live storage's block now while its tensors remain (PyTorch's
  // `_free_And_Remove_DeleterFn`): releasing them later frees nothing.
  Status force_free(StorageId storage);
  // Points `storage` at `block` (owned from now on), freeing the block it
  // owned before: torch's UntypedStorage._swap_data_ptr_ followed by freeing
  // the swapped-out block, as generation cloning does. Every tensor over it
  // follows, since addresses derive from the storage.
  // `free_old` false leaks the old block (a fault, for negative controls).
  Status rebase(StorageId storage, const Block& block, bool free_old = true);
  // Gives a non-owning storage a deleter (`_cuda_setCheckpointPoolState`'s
  // `storages_to_add_deleters_to`): its last release now frees its block.
  Status adopt(StorageId storage);
  bool owns_block(StorageId storage) const;

  // Drops a tensor; frees the storage's block when no tensor uses it any more.
  Status release(TensorId id);

  Result<Tensor> tensor(TensorId id) const;
  // The live tensor `id`, or nullptr: a lookup without tensor()'s copy (a
  // Tensor holds two Dims, so a copy is two allocations). The pointer is
  // invalidated by the next change to the store.
  const Tensor* find(TensorId id) const;
  // A tensor capsim itself holds (a World object, a node's placeholder, a
  // graph's pinned output). Where tensor() answers an id from input with an
  // Error, a held tensor that is gone is a bug: this aborts (CAPSIM_CHECK).
  const Tensor& at(TensorId id) const;
  Result<Storage> storage(StorageId id) const;
  // The address of element 0 of a live tensor.
  Result<Address> data_address(TensorId id) const;
  std::size_t live_tensors() const { return tensors_.size(); }
  // The storages the store holds, in id order.
  std::vector<Storage> storages() const;

 private:
  struct StorageEntry {
    Storage storage;
    bool owns_block = true;
  };
  Tensor add_tensor(const TensorMeta& meta, StorageId storage);

  CachingAllocator& allocator_;
  // Looked up on every call and never iterated in an order that shows
  // (storages() sorts what it lists): hashed (model/hashing.hpp).
  std::unordered_map<StorageId, StorageEntry, IdHash> storages_;
  std::unordered_map<TensorId, Tensor, IdHash> tensors_;
  std::uint64_t next_storage_ = 1;
  std::uint64_t next_tensor_ = 1;
};

}  // namespace capsim
