// TensorRefs: who holds which tensor, and so which storages are alive.
//
// PyTorch decides liveness by reference counts: a cudagraph output is "dead"
// when its storage's use count reaches zero, and a cached replay output is dead
// when nobody but the tree manager refers to it (docs/cudagraph-trees.md
// §5.3). capsim keeps two counts per tensor: `holders` are references the
// program can see (a name, a param's .grad, optimizer state, a call's input
// list) and `pins` are the tree manager's own (cached outputs, static outputs,
// plain-API surfaces).
// A storage is alive while some tensor over it has a holder. A tensor with
// neither is released from the TensorStore, which frees an owned block.
// Some holders are marked `saved`: a forward's saved tensor, which in
// PyTorch only autograd's SavedVariable holds (C++, no Python reference).
// They hold like any other; only the tree manager's liveness test up to
// 2.14 tells them apart (`held_only_as_saved`).
//
// Storages freed by `dealloc_current_path_weakrefs` keep an access error (E1):
// any later use of a tensor over them reports it.
#pragma once

#include <unordered_map>

#include "model/tensor_store.hpp"

namespace capsim {

class TensorRefs {
 public:
  explicit TensorRefs(TensorStore& store) : store_(store) {}
  TensorRefs(const TensorRefs&) = delete;
  TensorRefs& operator=(const TensorRefs&) = delete;

  // `id` must be a live tensor of the store.
  void hold(TensorId id);
  Status drop(TensorId id);
  void pin(TensorId id);
  Status unpin(TensorId id);

  // One of `id`'s holders becomes (stops being) a saved one.
  void mark_saved(TensorId id);
  void unmark_saved(TensorId id);

  std::uint32_t holders(TensorId id) const;
  bool storage_live(StorageId id) const;
  // Whether every holder of storage `id` is a saved holder of `tensor`.
  bool held_only_as_saved(StorageId id, TensorId tensor) const;

  // dealloc_current_path_weakrefs marked the storage: a later access raises
  // E1, with its own text for a grad output (a BACKWARD function's) and the
  // stack trace of the output that owned it (the first marking's).
  struct AccessError {
    bool grad_output = false;
    std::string stack_trace;
  };
  void set_access_error(StorageId id, bool grad_output, std::string stack_trace) {
    access_errors_.emplace(id, AccessError{grad_output, std::move(stack_trace)});
  }
  bool access_error(StorageId id) const { return access_errors_.count(id) != 0; }
  const AccessError* find_access_error(StorageId id) const {
    const auto it = access_errors_.find(id);
    return it == access_errors_.end() ? nullptr : &it->second;
  }

  TensorStore& store() { return store_; }
  const TensorStore& store() const { return store_; }

 private:
  struct Counts {
    std::uint32_t holders = 0;
    std::uint32_t pins = 0;
    std::uint32_t saved = 0;  // of holders
    StorageId storage;
  };
  Status release_if_unreferenced(TensorId id);

  TensorStore& store_;
  // Looked up per call, never iterated: hashed (model/hashing.hpp).
  std::unordered_map<TensorId, Counts, IdHash> counts_;
  std::unordered_map<StorageId, std::uint32_t, IdHash> held_per_storage_;
  std::unordered_map<StorageId, AccessError, IdHash> access_errors_;
};

}  // namespace capsim
