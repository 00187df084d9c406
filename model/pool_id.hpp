// PoolId: which memory pool a block or storage belongs to.
//
// Its own header so that tensors can name their pool without depending on the
// allocator. Pool 0 is the default (eager) pool; private pools, such as the
// cudagraph pool of `graph_pool_handle()`, are numbered from 1 in creation order.
#pragma once

#include <compare>
#include <cstdint>

namespace capsim {

struct PoolId {
  std::uint32_t value = 0;
  friend auto operator<=>(const PoolId&, const PoolId&) = default;
};
// The pool that eager allocations come from.
inline constexpr PoolId kDefaultPool{0};

}  // namespace capsim
