// The top-level parameter lists of the reference kernels, as host data.
//
// A CUDA kernel node holds its arguments as raw bytes behind `kernelParams`,
// one buffer per parameter. To build a node from a KernelLaunch, and to read
// the baked pointers back out of a node the driver returns, the backend needs
// each kernel's parameter list: which slot is the element count, which are
// pointers (and which of the launch's pointers each is), which are geometries,
// scalars, the reduce mask or a constant. This table is that list, in plain
// C++ so that encoding, decoding and the layout arithmetic are unit-tested
// without a GPU; on a GPU, `check_param_info` holds it against
// `cudaFuncGetParamInfo` for the compiled kernels (docs/cuda-reference.md,
// "What the backend proves from the driver"). The rule that lets the backend
// read pointers out of raw parameters holds by construction: top-level
// parameters are pointers and plain values only, and no geometry holds a
// pointer.
//
// cuda_reference/device_kernels.cu declares the same lists as __global__
// signatures; a kernel whose signature drifts from this table fails
// check_param_info on the first GPU run.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/kernel_table.hpp"
#include "model/result.hpp"

namespace capsim::cuda {

// X(enumerator, name)
#define CAPSIM_PARAM_SLOTS(X)                                      \
  X(kCount, "count")       /* std::int64_t: elements, the grid */  \
  X(kOpCode, "op")         /* int: the binary op (kAdd = 0) */     \
  X(kPointer, "pointer")   /* float*: launch.pointers[index] */    \
  X(kGeometry, "geometry") /* Geometry: launch.geometry[index] */  \
  X(kScalar, "scalar")     /* float: launch.scalars[index] */      \
  X(kMask, "mask")         /* std::uint32_t: launch.reduce_mask */ \
  X(kConstant, "constant") /* float: fixed per kind (AdamW's 1) */

enum class ParamSlot : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_PARAM_SLOTS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view param_slot_name(ParamSlot slot);

struct KernelParam {
  ParamSlot slot = ParamSlot::kCount;
  std::uint8_t index = 0;  // which pointer, geometry or scalar
  std::size_t offset = 0;  // in the parameter block, C ABI alignment
  std::size_t size = 0;
  std::size_t align = 0;
};

// The limit on parameters of one kernel (adam has 17).
inline constexpr std::size_t kMaxKernelParams = 24;

struct KernelAbi {
  KernelKind kind = KernelKind::kFill;
  std::vector<KernelParam> params;
  std::size_t block_bytes = 0;  // the end of the last parameter
};

// The parameter list of the __global__ function that runs `kind`.
const KernelAbi& kernel_abi(KernelKind kind);

// What cudaFuncGetParamInfo reports for parameter i.
struct ParamInfo {
  std::size_t offset = 0;
  std::size_t size = 0;
};
// The compiled kernel's parameters against the table: the same count, and
// each at the same offset with the same size. The error names the kernel,
// the parameter and both values.
Status check_param_info(KernelKind kind, std::span<const ParamInfo> compiled);

// A launch's arguments as the bytes of each parameter, with device pointers
// standing for the launch's pointers (device_pointers[p] for pointer p). The
// `args` array is what cudaKernelNodeParams::kernelParams points at; it stays
// valid while the ParamBlock lives and is not moved.
struct ParamBlock {
  ParamBlock() = default;
  ParamBlock(const ParamBlock&) = delete;
  ParamBlock& operator=(const ParamBlock&) = delete;
  std::vector<std::byte> bytes;  // block_bytes, each parameter at its offset
  std::vector<void*> args;       // &bytes[offset] per parameter
};
Status encode_params(const KernelLaunch& launch, std::span<const std::uint64_t> device_pointers,
                     ParamBlock& out);

// The inverse, from what a kernel node holds (one buffer per parameter, as
// the driver returns them): the launch with its pointers as device
// addresses. A pointer passed without a geometry (Adam's powers buffer) gets
// the contiguous 2-float geometry the body reads. Refuses an op code, a
// constant or an element count that is not the table's.
Result<KernelLaunch> decode_params(KernelKind kind, std::span<const void* const> args);

}  // namespace capsim::cuda
