// Storage, TensorMeta and Tensor: the vocabulary of tensors over device memory.
//
// A Storage is a block of simulated device memory with an id, a use count and an
// alive flag. A Tensor is a TensorMeta (sizes, strides, offset, dtype, ...) over
// a Storage; views share their base's storage. Every dtype has its real element
// size in every byte count (a float64 takes 8 bytes, a bool 1), so a pool holds
// what PyTorch's would. The exact kernels compute float32 only; other dtypes
// are written by generic ops (docs/trace-format.md §4.1).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "model/address.hpp"
#include "model/pool_id.hpp"
#include "model/result.hpp"

namespace capsim {

// The largest rank a tensor may have (the kernels' Geometry holds this many).
inline constexpr std::size_t kMaxRank = 8;
// Elements one tensor may span (2^40); keeps every byte count far from
// overflow. Shapes read from input are held to it; values are held to far
// less (kMaxValueElements, sim/core/function_def.hpp) where they are computed.
inline constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 40;

// X(enumerator, name, element bytes)
#define CAPSIM_DTYPES(X)        \
  X(kFloat32, "float32", 4)     \
  X(kFloat16, "float16", 2)     \
  X(kBFloat16, "bfloat16", 2)   \
  X(kFloat64, "float64", 8)     \
  X(kComplex64, "complex64", 8) \
  X(kInt64, "int64", 8)         \
  X(kBool, "bool", 1)           \
  X(kInt32, "int32", 4)         \
  X(kInt8, "int8", 1)           \
  X(kUInt8, "uint8", 1)

enum class DType : std::uint8_t {
#define CAPSIM_ENUM_(e, name, bytes) e,
  CAPSIM_DTYPES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view dtype_name(DType dtype);
// Bytes one element of `dtype` takes in memory: 1, 2, 4 or 8.
std::uint32_t dtype_element_bytes(DType dtype);
// The dtype named `name` ("float32", ...), or nullopt.
std::optional<DType> dtype_from_name(std::string_view name);
bool is_complex(DType dtype);

enum class DeviceType : std::uint8_t { kCpu, kCuda };
struct Device {
  DeviceType type = DeviceType::kCuda;
  std::int32_t index = 0;
  friend bool operator==(const Device&, const Device&) = default;
};

// kJagged is a nested tensor's layout: metadata only, so that compiled
// autograd's rejection of nested InputMetadata can be modelled.
enum class Layout : std::uint8_t { kStrided, kJagged };

struct StorageId {
  std::uint64_t value = 0;
  friend auto operator<=>(const StorageId&, const StorageId&) = default;
};
struct TensorId {
  std::uint64_t value = 0;
  friend auto operator<=>(const TensorId&, const TensorId&) = default;
};

using Dims = std::vector<std::int64_t>;

struct Storage {
  StorageId id;
  Address base = 0;
  std::uint64_t nbytes = 0;
  PoolId pool;
  bool alive = false;           // true while the store holds it; dead storages are dropped
  std::uint32_t use_count = 0;  // tensors (bases and views) that refer to it
};

struct TensorMeta {
  Dims sizes;
  Dims strides;
  std::int64_t storage_offset = 0;  // in elements
  DType dtype = DType::kFloat32;
  Device device;
  Layout layout = Layout::kStrided;
  bool requires_grad = false;
  bool is_subclass = false;
  friend bool operator==(const TensorMeta&, const TensorMeta&) = default;
};

struct Tensor {
  TensorId id;
  TensorMeta meta;
  StorageId storage;
};

// --- Shape arithmetic -------------------------------------------------------

std::int64_t numel(const Dims& sizes);
inline std::int64_t numel(const TensorMeta& meta) {
  return numel(meta.sizes);
}
Dims contiguous_strides(const Dims& sizes);
bool is_contiguous(const TensorMeta& meta);

// Elements a view touches past its offset: sum((size-1)*stride) + 1, or 0 for
// an empty tensor. Sizes and strides must be non-negative.
std::int64_t needed_size(const Dims& sizes, const Dims& strides);

// Whether two elements of the view share memory, beyond its expanded
// (stride 0) and size-1 dims: Inductor's complex_memory_overlap test
// (output_code.py up to 2.12.x), the dims sorted by stride (ties by
// position), each stride below the span of the dims before it.
bool complex_memory_overlap(const TensorMeta& meta);

// Contiguous metadata for a fresh tensor; checks rank, sizes and overflow.
Result<TensorMeta> contiguous_meta(const Dims& sizes, DType dtype = DType::kFloat32);

// --- Views: the metadata of a view, checked against the storage's size -----

Result<TensorMeta> as_strided(const TensorMeta& base, const Dims& sizes, const Dims& strides,
                              std::int64_t storage_offset, std::uint64_t storage_nbytes);
// Python's t[..., start:end:step] on `dim`, with start/end clamped as PyTorch does.
Result<TensorMeta> slice(const TensorMeta& base, std::int64_t dim, std::int64_t start,
                         std::int64_t end, std::int64_t step = 1);
// Broadcasts size-1 dims (stride 0) and prepends new leading dims; -1 keeps a size.
Result<TensorMeta> expand(const TensorMeta& base, const Dims& sizes);
// PyTorch's broadcast of two shapes, with its error text.
Result<Dims> broadcast_shape(const Dims& a, const Dims& b);
// The dims a reduction over `dims` of a tensor of `sizes` reduces, bit d for
// dim d (negative dims count from the end; a 0-d tensor accepts 0 and -1, as
// maybe_wrap_dim does, and reduces nothing). An error for a dim out of range
// or named twice, naming `op` ("sum", "amax").
Result<std::uint32_t> sum_reduce_mask(const Dims& sizes, const std::vector<std::int64_t>& dims,
                                      std::string_view op = "sum");
// The sizes of that reduction: each reduced dim dropped, or kept with size 1
// under `keepdim`.
Result<Dims> sum_result_sizes(const Dims& sizes, const std::vector<std::int64_t>& dims,
                              bool keepdim, std::string_view op = "sum");
// PyTorch refuses amax (and amin, max, argmax) of a tensor with no elements
// over a dim of size 0, where the largest of nothing is undefined
// (ReduceOpsUtils.h, zero_numel_check_dims: an IndexError, "amax(): Expected
// reduction dim 0 to have non-zero size."), and over no dims at all ("amax():
// Expected reduction dim to be specified for input.numel() == 0. ...", a
// RuntimeError). `dims` as given (none: every dim); an error in PyTorch's
// words, or nothing.
Status check_amax_of_empty(const Dims& sizes, const std::optional<std::vector<std::int64_t>>& dims);

// Whether several elements of a tensor share one memory location, where
// PyTorch says so for certain (has_internal_overlap's Yes, in
// aten/src/ATen/MemoryOverlap.cpp): a dim of size > 1 with stride 0, an
// expand(), in a tensor with elements. An in-place write into such a tensor
// (add_, copy_) raises kInternalOverlapMessage in PyTorch
// (assert_no_internal_overlap); fill_ and zero_ do not check. PyTorch's
// "too hard" cases (an as_strided view whose dims overlap with non-zero
// strides) are not checked there, nor here.
bool has_internal_overlap(const TensorMeta& meta);
inline constexpr std::string_view kInternalOverlapMessage =
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation.";

// Bytes one element of the tensor takes.
inline std::uint64_t element_bytes(const TensorMeta& meta) {
  return dtype_element_bytes(meta.dtype);
}
// The address of element 0 of a tensor over `storage`.
inline Address data_address(const Storage& storage, const TensorMeta& meta) {
  return storage.base + static_cast<std::uint64_t>(meta.storage_offset) * element_bytes(meta);
}
// The bytes [data_address, +extent) that a tensor may touch.
inline std::uint64_t extent_bytes(const TensorMeta& meta) {
  return static_cast<std::uint64_t>(needed_size(meta.sizes, meta.strides)) * element_bytes(meta);
}

}  // namespace capsim
