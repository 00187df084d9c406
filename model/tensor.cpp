// Tensor metadata (see tensor.hpp): dtypes, strides and contiguity, the views (as_strided,
// slice, expand), broadcasting and sum's shapes, each checked against overflow and its storage.
#include "model/tensor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

namespace capsim {

namespace {
constexpr std::int64_t kMaxElements = kMaxTensorElements;

constexpr std::string_view kDTypeNames[] = {
#define CAPSIM_NAME_(e, name, bytes) name,
    CAPSIM_DTYPES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
};
constexpr std::uint32_t kDTypeBytes[] = {
#define CAPSIM_BYTES_(e, name, bytes) bytes,
    CAPSIM_DTYPES(CAPSIM_BYTES_)
#undef CAPSIM_BYTES_
};

// a*b+c with a saturating bound: returns false when it would pass kMaxElements.
bool mul_add_bounded(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t& out) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product) || __builtin_add_overflow(product, c, &out)) {
    return false;
  }
  return out <= kMaxElements;
}

Status check_dims(const Dims& sizes, const Dims& strides) {
  if (sizes.size() != strides.size()) {
    return make_error(fmt::format("sizes {} and strides {} have different ranks", sizes, strides));
  }
  if (sizes.size() > kMaxRank) {
    return make_error(fmt::format("rank {} exceeds the limit of {}", sizes.size(), kMaxRank));
  }
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0) return make_error(fmt::format("negative size {} in dim {}", sizes[d], d));
    if (strides[d] < 0) {
      return make_error(fmt::format("negative stride {} in dim {}", strides[d], d));
    }
  }
  std::int64_t span = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (!mul_add_bounded(sizes[d] == 0 ? 0 : sizes[d] - 1, strides[d], span, span)) {
      return make_error(fmt::format("view with sizes {} and strides {} spans more than {} elements",
                                    sizes, strides, kMaxElements));
    }
  }
  return {};
}

Status check_fits(const TensorMeta& meta, std::uint64_t storage_nbytes) {
  const std::uint64_t needed =
      static_cast<std::uint64_t>(needed_size(meta.sizes, meta.strides) == 0
                                     ? 0
                                     : meta.storage_offset + needed_size(meta.sizes, meta.strides));
  const std::uint64_t bytes = needed * element_bytes(meta);
  if (bytes > storage_nbytes) {
    return make_error(fmt::format(
        "view with sizes {}, strides {} and offset {} needs {} bytes, but the storage has {}",
        meta.sizes, meta.strides, meta.storage_offset, bytes, storage_nbytes));
  }
  return {};
}
}  // namespace

std::string_view dtype_name(DType dtype) {
  return kDTypeNames[static_cast<int>(dtype)];
}
std::uint32_t dtype_element_bytes(DType dtype) {
  return kDTypeBytes[static_cast<int>(dtype)];
}
std::optional<DType> dtype_from_name(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kDTypeNames); ++i) {
    if (kDTypeNames[i] == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}
bool is_complex(DType dtype) {
  return dtype == DType::kComplex64;
}

std::int64_t numel(const Dims& sizes) {
  std::int64_t n = 1;
  for (std::int64_t s : sizes) n *= s;
  return n;
}

Dims contiguous_strides(const Dims& sizes) {
  Dims strides(sizes.size(), 1);
  for (std::size_t d = sizes.size(); d-- > 1;) {
    strides[d - 1] = strides[d] * std::max<std::int64_t>(sizes[d], 1);
  }
  return strides;
}

bool is_contiguous(const TensorMeta& meta) {
  std::int64_t expected = 1;
  for (std::size_t d = meta.sizes.size(); d-- > 0;) {
    if (meta.sizes[d] == 1) continue;  // a size-1 dim's stride does not matter
    if (meta.sizes[d] == 0) return true;
    if (meta.strides[d] != expected) return false;
    expected *= meta.sizes[d];
  }
  return true;
}

bool complex_memory_overlap(const TensorMeta& meta) {
  CAPSIM_CHECK(meta.sizes.size() == meta.strides.size());
  // index_expanded_dims takes one element of an expanded dim and squeeze()
  // drops the dims of size 1: neither can overlap anything.
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, size)
  for (std::size_t d = 0; d < meta.sizes.size(); ++d) {
    if (meta.sizes[d] <= 1 || meta.strides[d] == 0) continue;
    dims.emplace_back(meta.strides[d], meta.sizes[d]);
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < dims.size(); ++i) {
    std::int64_t span = 0;
    if (__builtin_mul_overflow(dims[i - 1].first, dims[i - 1].second, &span)) return false;
    if (dims[i].first < span) return true;
  }
  return false;
}

std::int64_t needed_size(const Dims& sizes, const Dims& strides) {
  CAPSIM_CHECK(sizes.size() == strides.size());
  // Saturates at INT64_MAX: shapes read from input may hold sizes and
  // strides whose span passes every limit, and must be refused, not wrap.
  std::int64_t n = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 0;
  }
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    std::int64_t step = 0;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) ||
        __builtin_add_overflow(n, step, &n)) {
      return std::numeric_limits<std::int64_t>::max();
    }
  }
  return n;
}

Result<TensorMeta> contiguous_meta(const Dims& sizes, DType dtype) {
  TensorMeta meta;
  meta.sizes = sizes;
  meta.strides = Dims(sizes.size(), 0);
  meta.dtype = dtype;
  // Check sizes first, with zero strides, so the stride product cannot overflow.
  CAPSIM_TRY(check_dims(meta.sizes, meta.strides));
  std::int64_t n = 1;
  for (std::int64_t s : sizes) {
    if (!mul_add_bounded(n, s, 0, n)) {
      return make_error(
          fmt::format("tensor of sizes {} has more than {} elements", sizes, kMaxElements));
    }
  }
  meta.strides = contiguous_strides(sizes);
  return meta;
}

Result<TensorMeta> as_strided(const TensorMeta& base, const Dims& sizes, const Dims& strides,
                              std::int64_t storage_offset, std::uint64_t storage_nbytes) {
  CAPSIM_TRY(check_dims(sizes, strides));
  if (storage_offset < 0 || storage_offset > kMaxElements) {
    return make_error(fmt::format("storage offset {} is out of range", storage_offset));
  }
  TensorMeta view = base;
  view.sizes = sizes;
  view.strides = strides;
  view.storage_offset = storage_offset;
  CAPSIM_TRY(check_fits(view, storage_nbytes));
  return view;
}

Result<TensorMeta> slice(const TensorMeta& base, std::int64_t dim, std::int64_t start,
                         std::int64_t end, std::int64_t step) {
  const auto rank = static_cast<std::int64_t>(base.sizes.size());
  if (rank == 0) return make_error("slice of a 0-dim tensor");
  if (dim < -rank || dim >= rank) {
    return make_error(fmt::format("slice dim {} is out of range for rank {}", dim, rank));
  }
  if (dim < 0) dim += rank;
  if (step <= 0) return make_error(fmt::format("slice step must be positive, got {}", step));
  const std::int64_t size = base.sizes[dim];
  // Python semantics: negative indices count from the end, then clamp.
  auto clamp = [size](std::int64_t i) {
    if (i < 0) i += size;
    return std::clamp<std::int64_t>(i, 0, size);
  };
  start = clamp(start);
  end = std::max(clamp(end), start);
  TensorMeta view = base;
  view.sizes[dim] = (end - start + step - 1) / step;
  view.strides[dim] = base.strides[dim] * step;
  view.storage_offset = base.storage_offset + start * base.strides[dim];
  return view;
}

Result<TensorMeta> expand(const TensorMeta& base, const Dims& sizes) {
  if (sizes.size() < base.sizes.size()) {
    return make_error(
        fmt::format("expand to {} has fewer dims than the tensor's {}", sizes, base.sizes));
  }
  if (sizes.size() > kMaxRank) {
    return make_error(fmt::format("rank {} exceeds the limit of {}", sizes.size(), kMaxRank));
  }
  const std::size_t lead = sizes.size() - base.sizes.size();
  TensorMeta view = base;
  view.sizes.assign(sizes.size(), 0);
  view.strides.assign(sizes.size(), 0);
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (d < lead) {
      if (sizes[d] < 0) return make_error(fmt::format("expand of a new dim {} to {}", d, sizes[d]));
      view.sizes[d] = sizes[d];
      view.strides[d] = 0;
      continue;
    }
    const std::int64_t have = base.sizes[d - lead];
    const std::int64_t want = sizes[d] == -1 ? have : sizes[d];
    if (want == have) {
      view.sizes[d] = have;
      view.strides[d] = base.strides[d - lead];
    } else if (have == 1 && want >= 0) {
      view.sizes[d] = want;
      view.strides[d] = 0;
    } else {
      return make_error(fmt::format(
          "expand of size {} to {} in dim {}: only size-1 dims can be expanded", have, want, d));
    }
  }
  return view;
}

Result<Dims> broadcast_shape(const Dims& a, const Dims& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Dims out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return make_error(fmt::format(
          "the size of tensor a ({}) must match the size of tensor b ({}) at non-singleton "
          "dimension {}",
          da, db, i));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Result<std::uint32_t> sum_reduce_mask(const Dims& sizes, const std::vector<std::int64_t>& dims,
                                      std::string_view op) {
  const auto rank = static_cast<std::int64_t>(sizes.size());
  const std::int64_t wrap = std::max<std::int64_t>(rank, 1);
  std::uint32_t seen = 0;
  for (const std::int64_t d : dims) {
    if (d < -wrap || d >= wrap) {
      return make_error(fmt::format("{}: dim {} is out of range for rank {}", op, d, rank));
    }
    const std::int64_t dim = d < 0 ? d + wrap : d;
    if ((seen >> dim) & 1u) return make_error(fmt::format("{}: dim {} appears twice", op, dim));
    seen |= 1u << dim;
  }
  return rank == 0 ? 0u : seen;
}

Result<Dims> sum_result_sizes(const Dims& sizes, const std::vector<std::int64_t>& dims,
                              bool keepdim, std::string_view op) {
  CAPSIM_TRY_ASSIGN(const std::uint32_t mask, sum_reduce_mask(sizes, dims, op));
  Dims out;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (((mask >> d) & 1u) == 0) {
      out.push_back(sizes[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

bool has_internal_overlap(const TensorMeta& meta) {
  bool shared = false;
  for (std::size_t d = 0; d < meta.sizes.size(); ++d) {
    if (meta.sizes[d] == 0) return false;  // no elements: nothing shares
    shared = shared || (meta.sizes[d] > 1 && meta.strides[d] == 0);
  }
  return shared;
}

Status check_amax_of_empty(const Dims& sizes,
                           const std::optional<std::vector<std::int64_t>>& dims) {
  const bool empty = std::any_of(sizes.begin(), sizes.end(), [](std::int64_t s) { return s == 0; });
  if (!empty) return {};
  if (!dims || dims->empty()) {
    return make_error(
        "amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
        "reduction dim with the 'dim' argument.");
  }
  const auto rank = static_cast<std::int64_t>(sizes.size());
  for (const std::int64_t d : *dims) {
    const std::int64_t dim = d < 0 ? d + rank : d;
    if (dim >= 0 && dim < rank && sizes[static_cast<std::size_t>(dim)] == 0) {
      return make_error(fmt::format(
          "amax(): Expected reduction dim {} to have non-zero size. (PyTorch raises IndexError)",
          d));
    }
  }
  return {};
}

}  // namespace capsim
