// Generic ops (see generic_op.hpp): their checks, their seed and their cost.
#include "sim/core/generic_op.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <span>

#include "model/digest.hpp"

namespace capsim {

namespace {
Status validate_result(const TensorMeta& meta, std::size_t i, bool fresh) {
  const auto where = [&](std::string_view what) {
    return make_error(fmt::format("results[{}]: {}", i, what));
  };
  if (meta.sizes.size() > kMaxRank || meta.sizes.size() != meta.strides.size()) {
    return where(fmt::format("sizes and strides must have the same rank, at most {}", kMaxRank));
  }
  for (std::size_t d = 0; d < meta.sizes.size(); ++d) {
    if (meta.sizes[d] < 0 || meta.strides[d] < 0) return where("negative size or stride");
  }
  if (meta.storage_offset < 0) return where("negative storage_offset");
  if (!fresh) return {};  // checked against the storage it views when it runs
  // The shape only: with values on, the interpreter holds what it fills to
  // kMaxValueElements when the op runs.
  if (Status s = check_shape_sizes(meta.sizes); !s) return where(s.error().message);
  // A fresh result's storage holds offset + what its strides reach: sizes
  // and strides are at most 2^40 here, so 128 bits hold each product.
  __int128 reach = 0;
  for (std::size_t d = 0; d < meta.sizes.size(); ++d) {
    if (meta.sizes[d] == 0) return {};
    if (meta.strides[d] > kMaxTensorElements) return where("a stride over the element limit");
    reach += static_cast<__int128>(meta.sizes[d] - 1) * meta.strides[d];
  }
  if (meta.storage_offset > kMaxTensorElements || reach > kMaxTensorElements) {
    return where(fmt::format("spans more than {} elements", kMaxTensorElements));
  }
  return {};
}

Status validate_generic_lists(const BodyOp& op) {
  const GenericOp& g = op.generic;
  if (!g.views.empty() && g.views.size() != g.results.size()) {
    return make_error(
        fmt::format("views: {} entries for {} results", g.views.size(), g.results.size()));
  }
  for (std::size_t i = 0; i < g.views.size(); ++i) {
    if (!g.views[i]) continue;
    if (*g.views[i] >= op.args.size() || !g.results[i]) {
      return make_error(fmt::format("views[{}]: {} is not an arg, or the result is not a tensor", i,
                                    *g.views[i]));
    }
  }
  for (std::size_t i = 0; i < g.writes.size(); ++i) {
    if (g.writes[i] >= op.args.size() || (i > 0 && g.writes[i] <= g.writes[i - 1])) {
      return make_error(
          fmt::format("writes[{}]: {} is not an arg, or not in increasing order", i, g.writes[i]));
    }
  }
  return {};
}
}  // namespace

Status validate_generic(const BodyOp& op) {
  CAPSIM_CHECK(op.kind == BodyOpKind::kGeneric);
  const GenericOp& g = op.generic;
  if (g.target.empty() || g.target.size() > kMaxGenericTargetBytes) {
    return make_error(fmt::format("target: 1 to {} bytes", kMaxGenericTargetBytes));
  }
  if (g.attrs.size() > kMaxGenericAttrsBytes) {
    return make_error(fmt::format("attrs: more than {} bytes", kMaxGenericAttrsBytes));
  }
  if (op.args.size() > kMaxGenericArgs) {
    return make_error(fmt::format("args: more than {}", kMaxGenericArgs));
  }
  if (g.results.size() > kMaxGenericResults) {
    return make_error(fmt::format("results: more than {}", kMaxGenericResults));
  }
  CAPSIM_TRY(validate_generic_lists(op));
  for (std::size_t i = 0; i < g.results.size(); ++i) {
    const bool fresh = g.views.empty() || !g.views[i];
    if (g.results[i]) CAPSIM_TRY(validate_result(*g.results[i], i, fresh));
  }
  return {};
}

std::uint64_t generic_op_seed(const GenericOp& op) {
  std::uint64_t h = fnv1a64(std::as_bytes(std::span(op.target.data(), op.target.size())));
  const std::byte zero{0};
  h = fnv1a64(std::span(&zero, 1), h);
  return fnv1a64(std::as_bytes(std::span(op.attrs.data(), op.attrs.size())), h);
}

std::uint64_t generic_output_seed(std::uint64_t op_seed, std::size_t k) {
  return op_seed ^ (0x9e3779b97f4a7c15ull * (static_cast<std::uint64_t>(k) + 1));
}

std::int64_t generic_mix_reads(std::int64_t out_numel,
                               const std::vector<std::int64_t>& arg_numels) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  std::int64_t reads = 0;
  for (const std::int64_t m : arg_numels) {
    if (m == 0) continue;
    const std::int64_t r = std::max(m, out_numel);
    if (reads > kMax - r) return kMax;
    reads += r;
  }
  return reads;
}

}  // namespace capsim
