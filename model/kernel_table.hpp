// The kernel signature table and the host-side description of one launch.
//
// Every kernel capsim knows is one row of CAPSIM_KERNELS: its serialised name,
// its pointer arguments (with how each is accessed) and its scalar arguments.
// A KernelLaunch is a concrete launch with baked addresses: exactly what a CUDA
// kernel node holds. Pointer 0 is always the output (or the updated param), and
// the launch runs one body call per element of pointer 0's geometry.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "model/address.hpp"
#include "model/kernel_bodies.hpp"

namespace capsim {

// X(enumerator, name)
#define CAPSIM_KERNELS(X)           \
  X(kFill, "fill")                  \
  X(kCopy, "copy")                  \
  X(kAdd, "add")                    \
  X(kSub, "sub")                    \
  X(kMul, "mul")                    \
  X(kDiv, "div")                    \
  X(kNeg, "neg")                    \
  X(kRelu, "relu")                  \
  X(kReluBackward, "relu_backward") \
  X(kSum, "sum")                    \
  X(kMm, "mm")                      \
  X(kSgd, "sgd")                    \
  X(kSgdPlain, "sgd_plain")         \
  X(kAdamPowers, "adam_powers")     \
  X(kAdam, "adam")                  \
  X(kAdamW, "adamw")                \
  X(kTypedCopy, "typed_copy")       \
  X(kGenericMix, "generic_mix")     \
  X(kUnaryMath, "unary_math")       \
  X(kAmax, "amax")

enum class KernelKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_KERNELS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
inline constexpr int kNumKernelKinds = 0
#define CAPSIM_COUNT_(e, name) +1
    CAPSIM_KERNELS(CAPSIM_COUNT_)
#undef CAPSIM_COUNT_
    ;

inline constexpr int kMaxKernelPointers = 5;
inline constexpr int kMaxKernelScalars = 6;

enum class Access : std::uint8_t { kRead, kWrite, kReadWrite };
std::string_view access_name(Access access);

struct KernelSignature {
  KernelKind kind;
  std::string_view name;
  std::uint8_t num_pointers;
  std::array<std::string_view, kMaxKernelPointers> pointer_names;
  std::array<Access, kMaxKernelPointers> pointer_access;
  std::uint8_t num_scalars;
  std::array<std::string_view, kMaxKernelScalars> scalar_names;
  bool uses_reduce_mask;
};

const KernelSignature& signature(KernelKind kind);
std::string_view kernel_name(KernelKind kind);
std::optional<KernelKind> kernel_kind_from_name(std::string_view name);

struct KernelLaunch {
  KernelKind kind = KernelKind::kFill;
  std::array<Address, kMaxKernelPointers> pointers{};
  std::array<kernels::Geometry, kMaxKernelPointers> geometry{};
  std::array<float, kMaxKernelScalars> scalars{};
  std::uint32_t reduce_mask = 0;  // kSum and kAmax only: the dims to reduce
};

bool operator==(const kernels::Geometry& a, const kernels::Geometry& b);
bool operator==(const KernelLaunch& a, const KernelLaunch& b);

// How many leading pointers a kind reads or writes at element i only (and so
// must all have pointer 0's sizes; typed_copy's fill, with an empty input,
// is checked by its builder): 0 for sum, amax, mm, adam_powers and
// generic_mix; 4
// for adam
// and adamw, whose fifth pointer is the 2-float powers buffer; all otherwise.
int elementwise_pointers(KernelKind kind);

// Body calls: the numel of pointer 0's geometry; generic_mix, which computes
// its whole output in one call, 1 (0 for an empty output).
std::int64_t grid_size(const KernelLaunch& launch);
// The bytes pointer `arg` may touch: [pointer, pointer + extent).
AddressRange pointer_extent(const KernelLaunch& launch, int arg);

}  // namespace capsim
