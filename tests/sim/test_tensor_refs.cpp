// TensorRefs and ObjectTable (sim/core/tensor_refs.hpp,
// sim/world/object_table.hpp): saved holders, the kind that check_refcount up
// to 2.14 does not count, are counted apart from the others and follow their
// object through `.data =` and its death.
#include <doctest/doctest.h>

#include "model/caching_allocator.hpp"
#include "model/device_memory.hpp"
#include "model/tensor_store.hpp"
#include "sim/core/tensor_refs.hpp"
#include "sim/world/object_table.hpp"

namespace capsim {
namespace {

struct Refs {
  DeviceMemory memory;
  CachingAllocator alloc{memory};
  TensorStore store{alloc};
  TensorRefs refs{store};
  ObjectTable objects{refs};

  // A fresh tensor with one hold (the caller's, or the object's it becomes).
  TensorId held() {
    const Tensor t = store.empty({4}).value();
    refs.hold(t.id);
    return t.id;
  }
};

TEST_CASE("a storage held only by saved holders of one tensor reads as saved-only") {
  Refs r;
  const TensorId t = r.held();
  const StorageId s = r.store.at(t).storage;
  CHECK_FALSE(r.refs.held_only_as_saved(s, t));
  r.refs.mark_saved(t);
  CHECK(r.refs.held_only_as_saved(s, t));
  CHECK(r.refs.storage_live(s));

  // Another holder of the same tensor (an input list) or of a view of its
  // storage makes it an ordinary live storage again.
  r.refs.hold(t);
  CHECK_FALSE(r.refs.held_only_as_saved(s, t));
  REQUIRE(r.refs.drop(t).ok());
  const Tensor view = r.store.view_of_storage(s, r.store.at(t).meta).value();
  r.refs.hold(view.id);
  CHECK_FALSE(r.refs.held_only_as_saved(s, t));
  REQUIRE(r.refs.drop(view.id).ok());
  CHECK(r.refs.held_only_as_saved(s, t));

  r.refs.unmark_saved(t);
  CHECK_FALSE(r.refs.held_only_as_saved(s, t));
  REQUIRE(r.refs.drop(t).ok());
  CHECK_FALSE(r.refs.storage_live(s));
}

TEST_CASE("a saved object's hold is saved until it dies, and moves with .data =") {
  Refs r;
  const TensorId first = r.held();
  const std::uint64_t o = r.objects.new_saved_object(first);
  REQUIRE(r.objects.bind("saved", o).ok());
  CHECK(r.refs.held_only_as_saved(r.store.at(first).storage, first));

  const TensorId fresh = r.held();
  const TensorId previous = r.objects.swap_tensor(o, fresh);
  CHECK(previous == first);
  CHECK_FALSE(r.refs.held_only_as_saved(r.store.at(first).storage, first));
  REQUIRE(r.refs.drop(previous).ok());
  const StorageId s = r.store.at(fresh).storage;
  CHECK(r.refs.held_only_as_saved(s, fresh));

  REQUIRE(r.objects.unbind("saved").ok());
  CHECK_FALSE(r.refs.storage_live(s));
}

}  // namespace
}  // namespace capsim
