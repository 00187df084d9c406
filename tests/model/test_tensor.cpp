// Tensors: shape arithmetic, views (as_strided, slice, expand), and the
// TensorStore's ids, use counts and frees.
#include <doctest/doctest.h>

#include "model/tensor.hpp"
#include "model/tensor_store.hpp"

using namespace capsim;

TEST_CASE("needed_size is sum((size-1)*stride) + 1, and 0 when empty") {
  CHECK(needed_size({2, 3}, {3, 1}) == 6);
  CHECK(needed_size({3, 2}, {1, 3}) == 6);    // a transpose spans the same elements
  CHECK(needed_size({4, 5}, {0, 1}) == 5);    // expanded dim: stride 0
  CHECK(needed_size({2, 2}, {10, 2}) == 13);  // holes count
  CHECK(needed_size({}, {}) == 1);            // a scalar
  CHECK(needed_size({3, 0, 2}, {0, 1, 1}) == 0);
  CHECK(numel(Dims{2, 3, 4}) == 24);
  CHECK(contiguous_strides({2, 3, 4}) == Dims{12, 4, 1});
  CHECK(contiguous_strides({2, 0, 4}) == Dims{4, 4, 1});
}

TEST_CASE("complex_memory_overlap: elements that share memory, beyond expanded and size-1 dims") {
  const auto overlap = [](Dims sizes, Dims strides) {
    TensorMeta m;
    m.sizes = std::move(sizes);
    m.strides = std::move(strides);
    return complex_memory_overlap(m);
  };
  CHECK_FALSE(overlap({4, 4}, {4, 1}));  // contiguous
  CHECK_FALSE(overlap({4, 4}, {1, 4}));  // a transpose
  CHECK_FALSE(overlap({2, 2}, {8, 1}));  // holes, no sharing
  CHECK_FALSE(overlap({4, 4}, {0, 1}));  // expanded: Inductor takes one row
  CHECK_FALSE(overlap({1, 4}, {1, 1}));  // a size-1 dim is squeezed away
  CHECK_FALSE(overlap({}, {}));
  CHECK(overlap({4, 4}, {1, 1}));  // as_strided((4, 4), (1, 1))
  CHECK(overlap({3, 2}, {1, 2}));  // element 2 is [2][0] and [0][1]
  CHECK(overlap({2, 3, 2}, {0, 1, 2}));
}

TEST_CASE("contiguity ignores size-1 dims") {
  auto meta = contiguous_meta({2, 1, 3});
  REQUIRE(meta.ok());
  CHECK(is_contiguous(*meta));
  TensorMeta odd = *meta;
  odd.strides[1] = 99;
  CHECK(is_contiguous(odd));
  TensorMeta transposed = *meta;
  transposed.sizes = {3, 1, 2};
  transposed.strides = {1, 3, 3};
  CHECK_FALSE(is_contiguous(transposed));
}

TEST_CASE("slice follows Python's clamping and keeps the storage") {
  auto base = contiguous_meta({4, 6});
  REQUIRE(base.ok());
  auto cols = slice(*base, 1, 1, 5, 2);  // t[:, 1:5:2]
  REQUIRE(cols.ok());
  CHECK(cols->sizes == Dims{4, 2});
  CHECK(cols->strides == Dims{6, 2});
  CHECK(cols->storage_offset == 1);
  auto tail = slice(*base, 0, -1, 100);  // t[-1:]
  REQUIRE(tail.ok());
  CHECK(tail->sizes == Dims{1, 6});
  CHECK(tail->storage_offset == 18);
  auto empty = slice(*base, 0, 3, 1);  // end before start: empty
  REQUIRE(empty.ok());
  CHECK(empty->sizes == Dims{0, 6});
  CHECK_FALSE(slice(*base, 2, 0, 1).ok());
  CHECK_FALSE(slice(*base, 0, 0, 1, 0).ok());
}

TEST_CASE("expand broadcasts size-1 dims with stride 0") {
  auto base = contiguous_meta({3, 1});
  REQUIRE(base.ok());
  auto wide = expand(*base, {2, 3, 4});
  REQUIRE(wide.ok());
  CHECK(wide->sizes == Dims{2, 3, 4});
  CHECK(wide->strides == Dims{0, 1, 0});
  CHECK(needed_size(wide->sizes, wide->strides) == 3);
  auto keep = expand(*base, {-1, 5});
  REQUIRE(keep.ok());
  CHECK(keep->sizes == Dims{3, 5});
  auto bad = expand(*base, {4, 1});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "expand of size 3 to 4 in dim 0: only size-1 dims can be expanded");
}

TEST_CASE("as_strided is checked against the storage size") {
  auto base = contiguous_meta({2, 3});
  REQUIRE(base.ok());
  const std::uint64_t nbytes = 6 * kElementBytes;
  auto t = as_strided(*base, {3, 2}, {1, 3}, 0, nbytes);
  REQUIRE(t.ok());
  CHECK(t->strides == Dims{1, 3});
  auto past = as_strided(*base, {3, 2}, {1, 3}, 1, nbytes);
  REQUIRE_FALSE(past.ok());
  CHECK(
      past.error().message ==
      "view with sizes [3, 2], strides [1, 3] and offset 1 needs 28 bytes, but the storage has 24");
  CHECK_FALSE(as_strided(*base, {2}, {-1}, 0, nbytes).ok());
  CHECK_FALSE(as_strided(*base, {2, 2}, {1}, 0, nbytes).ok());
  CHECK_FALSE(as_strided(*base, {1LL << 40, 1LL << 40}, {1, 1}, 0, nbytes).ok());
}

TEST_CASE("contiguous_meta rejects overflowing and over-rank shapes") {
  CHECK_FALSE(contiguous_meta({1LL << 31, 1LL << 31}).ok());
  CHECK_FALSE(contiguous_meta({-1}).ok());
  CHECK_FALSE(contiguous_meta(Dims(9, 1)).ok());
  CHECK(contiguous_meta(Dims(8, 1)).ok());
}

TEST_CASE("TensorStore counts uses and frees the block with the last tensor") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  TensorStore store(alloc);
  auto base = store.empty({4, 4});
  REQUIRE(base.ok());
  CHECK(base->id.value == 1);
  auto addr = store.data_address(base->id);
  REQUIRE(addr.ok());
  CHECK(*addr == 0x7f0000000000);
  auto row = slice(base->meta, 0, 1, 2);
  REQUIRE(row.ok());
  auto view = store.view(base->id, *row);
  REQUIRE(view.ok());
  CHECK(view->storage == base->storage);
  CHECK(*store.data_address(view->id) == 0x7f0000000000 + 16);
  CHECK(store.storage(base->storage)->use_count == 2);

  REQUIRE(store.release(base->id).ok());
  CHECK(alloc.live_blocks(kDefaultPool).size() == 1);  // the view keeps it alive
  REQUIRE(store.release(view->id).ok());
  CHECK(alloc.live_blocks(kDefaultPool).empty());
  CHECK_FALSE(store.storage(base->storage).ok());  // dead storages are dropped
  CHECK(store.live_tensors() == 0);

  auto again = store.release(view->id);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().message == "release of unknown tensor 2");
}

TEST_CASE("a view that does not fit its storage is refused") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  TensorStore store(alloc);
  auto base = store.empty({2, 2});
  REQUIRE(base.ok());
  TensorMeta too_big = base->meta;
  too_big.sizes = {3, 2};
  CHECK_FALSE(store.view(base->id, too_big).ok());
  CHECK_FALSE(store.view(TensorId{99}, base->meta).ok());
}

TEST_CASE("a non-owning tensor frees nothing when released") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  TensorStore store(alloc);
  auto owner = store.empty({8});
  REQUIRE(owner.ok());
  const Address address = *store.data_address(owner->id);
  auto alias = store.from_address(address, owner->meta, kDefaultPool);
  REQUIRE(alias.ok());
  CHECK(alias->storage != owner->storage);
  REQUIRE(store.release(alias->id).ok());
  CHECK(alloc.live_blocks(kDefaultPool).size() == 1);
}

TEST_CASE("an empty tensor allocates nothing and has data address 0, as in PyTorch") {
  DeviceMemory memory;
  CachingAllocator alloc(memory);
  TensorStore store(alloc);
  auto empty = store.empty({3, 0});
  REQUIRE(empty.ok());
  CHECK(*store.data_address(empty->id) == 0);
  CHECK(store.storage(empty->storage)->nbytes == 0);
  CHECK(alloc.stats().allocations == 0);
  CHECK(alloc.segments().empty());
  REQUIRE(store.release(empty->id).ok());
  CHECK(alloc.stats().frees == 0);
}
