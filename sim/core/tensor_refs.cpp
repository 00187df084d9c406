// TensorRefs (see tensor_refs.hpp): holders and pins counted per tensor, and a tensor with
// neither released from the TensorStore.
#include "sim/core/tensor_refs.hpp"

#include "model/check.hpp"

namespace capsim {

void TensorRefs::hold(TensorId id) {
  // find, not tensor(): only the storage is read, and tensor() copies the
  // sizes and strides (this runs for every output of every call).
  const Tensor* t = store_.find(id);
  CAPSIM_CHECK(t != nullptr, "hold of a tensor the store does not have");
  Counts& c = counts_[id];
  c.storage = t->storage;
  ++c.holders;
  ++held_per_storage_[t->storage];
}

Status TensorRefs::drop(TensorId id) {
  auto it = counts_.find(id);
  CAPSIM_CHECK(it != counts_.end() && it->second.holders > 0, "drop of an unheld tensor");
  --it->second.holders;
  CAPSIM_CHECK(it->second.saved <= it->second.holders,
               "a saved holder is unmarked before its drop");
  auto s = held_per_storage_.find(it->second.storage);
  CAPSIM_CHECK(s != held_per_storage_.end() && s->second > 0);
  if (--s->second == 0) held_per_storage_.erase(s);
  return release_if_unreferenced(id);
}

void TensorRefs::pin(TensorId id) {
  const Tensor* t = store_.find(id);
  CAPSIM_CHECK(t != nullptr, "pin of a tensor the store does not have");
  Counts& c = counts_[id];
  c.storage = t->storage;
  ++c.pins;
}

Status TensorRefs::unpin(TensorId id) {
  auto it = counts_.find(id);
  CAPSIM_CHECK(it != counts_.end() && it->second.pins > 0, "unpin of an unpinned tensor");
  --it->second.pins;
  return release_if_unreferenced(id);
}

void TensorRefs::mark_saved(TensorId id) {
  auto it = counts_.find(id);
  CAPSIM_CHECK(it != counts_.end() && it->second.saved < it->second.holders,
               "a saved holder is one of the tensor's holders");
  ++it->second.saved;
}

void TensorRefs::unmark_saved(TensorId id) {
  auto it = counts_.find(id);
  CAPSIM_CHECK(it != counts_.end() && it->second.saved > 0, "unmark of an unsaved tensor");
  --it->second.saved;
}

bool TensorRefs::held_only_as_saved(StorageId id, TensorId tensor) const {
  const auto held = held_per_storage_.find(id);
  const auto c = counts_.find(tensor);
  if (held == held_per_storage_.end() || c == counts_.end()) return false;
  CAPSIM_CHECK(c->second.storage == id, "the tensor is over the storage");
  return c->second.saved == held->second;
}

std::uint32_t TensorRefs::holders(TensorId id) const {
  auto it = counts_.find(id);
  return it == counts_.end() ? 0 : it->second.holders;
}

bool TensorRefs::storage_live(StorageId id) const {
  return held_per_storage_.count(id) != 0;
}

Status TensorRefs::release_if_unreferenced(TensorId id) {
  auto it = counts_.find(id);
  if (it->second.holders != 0 || it->second.pins != 0) return {};
  counts_.erase(it);
  return store_.release(id);
}

}  // namespace capsim
