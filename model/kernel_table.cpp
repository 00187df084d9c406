// The kernel signature table (see kernel_table.hpp), one row per CAPSIM_KERNELS entry and
// checked against it at compile time, and what a KernelLaunch derives from it: names, grid
// size and each pointer's extent.
#include "model/kernel_table.hpp"

#include <bit>

#include "model/check.hpp"

namespace capsim {

namespace {
constexpr Access R = Access::kRead;
constexpr Access W = Access::kWrite;
constexpr Access RW = Access::kReadWrite;

// One row per CAPSIM_KERNELS entry, in the same order (checked below).
constexpr KernelSignature kSignatures[] = {
    {KernelKind::kFill, "fill", 1, {"out"}, {W}, 1, {"value"}, false},
    {KernelKind::kCopy, "copy", 2, {"out", "in"}, {W, R}, 0, {}, false},
    {KernelKind::kAdd, "add", 3, {"out", "a", "b"}, {W, R, R}, 0, {}, false},
    {KernelKind::kSub, "sub", 3, {"out", "a", "b"}, {W, R, R}, 0, {}, false},
    {KernelKind::kMul, "mul", 3, {"out", "a", "b"}, {W, R, R}, 0, {}, false},
    {KernelKind::kDiv, "div", 3, {"out", "a", "b"}, {W, R, R}, 0, {}, false},
    {KernelKind::kNeg, "neg", 2, {"out", "in"}, {W, R}, 0, {}, false},
    {KernelKind::kRelu, "relu", 2, {"out", "in"}, {W, R}, 0, {}, false},
    {KernelKind::kReluBackward,
     "relu_backward",
     3,
     {"out", "grad", "result"},
     {W, R, R},
     0,
     {},
     false},
    {KernelKind::kSum, "sum", 2, {"out", "in"}, {W, R}, 0, {}, true},
    {KernelKind::kMm, "mm", 3, {"out", "a", "b"}, {W, R, R}, 0, {}, false},
    {KernelKind::kSgd,
     "sgd",
     3,
     {"param", "grad", "momentum_buffer"},
     {RW, R, RW},
     5,
     {"lr", "momentum", "dampening", "weight_decay", "nesterov"},
     false},
    // SGD without momentum: no buffer (torch.optim.SGD keeps no state then).
    {KernelKind::kSgdPlain,
     "sgd_plain",
     2,
     {"param", "grad"},
     {RW, R},
     5,
     {"lr", "momentum", "dampening", "weight_decay", "nesterov"},
     false},
    {KernelKind::kAdamPowers, "adam_powers", 1, {"state"}, {RW}, 2, {"beta1", "beta2"}, false},
    {KernelKind::kAdam,
     "adam",
     5,
     {"param", "grad", "exp_avg", "exp_avg_sq", "state"},
     {RW, R, RW, RW, R},
     5,
     {"lr", "beta1", "beta2", "eps", "weight_decay"},
     false},
    {KernelKind::kAdamW,
     "adamw",
     5,
     {"param", "grad", "exp_avg", "exp_avg_sq", "state"},
     {RW, R, RW, RW, R},
     5,
     {"lr", "beta1", "beta2", "eps", "weight_decay"},
     false},
    // copy_ and fill over float64 (and copies between equal dtypes): the
    // autograd engine's dtype casts, exact (kernel_bodies.hpp).
    {KernelKind::kTypedCopy,
     "typed_copy",
     2,
     {"out", "in"},
     {W, R},
     4,
     {"value", "use_value", "out_kind", "in_kind"},
     false},
    // A generic op's values (kernel_bodies.hpp): up to four operands mixed
    // into `out`; an unused operand is null with an empty geometry.
    {KernelKind::kGenericMix,
     "generic_mix",
     5,
     {"out", "a", "b", "c", "d"},
     {RW, R, R, R, R},
     6,
     {"seed0", "seed1", "seed2", "seed3", "store", "first"},
     false},
    // exp, log, sigmoid, tanh, rsqrt, sqrt, reciprocal (kernel_bodies.hpp's
    // UnaryMath, by the scalar `op`).
    {KernelKind::kUnaryMath, "unary_math", 2, {"out", "in"}, {W, R}, 1, {"op"}, false},
    {KernelKind::kAmax, "amax", 2, {"out", "in"}, {W, R}, 0, {}, true},
};
static_assert(sizeof(kSignatures) / sizeof(kSignatures[0]) == kNumKernelKinds);

constexpr bool table_matches_enum() {
  int i = 0;
#define CAPSIM_CHECK_ROW_(e, row_name)                                                       \
  if (kSignatures[i].kind != KernelKind::e || kSignatures[i].name != row_name) return false; \
  ++i;
  CAPSIM_KERNELS(CAPSIM_CHECK_ROW_)
#undef CAPSIM_CHECK_ROW_
  return true;
}
static_assert(table_matches_enum(), "kSignatures must follow CAPSIM_KERNELS row by row");
}  // namespace

std::string_view access_name(Access access) {
  switch (access) {
    case Access::kRead: return "read";
    case Access::kWrite: return "write";
    case Access::kReadWrite: return "read_write";
  }
  return "?";
}

const KernelSignature& signature(KernelKind kind) {
  const auto i = static_cast<int>(kind);
  CAPSIM_CHECK(i >= 0 && i < kNumKernelKinds);
  return kSignatures[i];
}

std::string_view kernel_name(KernelKind kind) {
  return signature(kind).name;
}

std::optional<KernelKind> kernel_kind_from_name(std::string_view name) {
  for (const auto& s : kSignatures) {
    if (s.name == name) return s.kind;
  }
  return std::nullopt;
}

bool operator==(const kernels::Geometry& a, const kernels::Geometry& b) {
  if (a.rank != b.rank || a.elem_bytes != b.elem_bytes) return false;
  for (int d = 0; d < a.rank; ++d) {
    if (a.sizes[d] != b.sizes[d] || a.strides[d] != b.strides[d]) return false;
  }
  return true;
}

bool operator==(const KernelLaunch& a, const KernelLaunch& b) {
  if (a.kind != b.kind || a.reduce_mask != b.reduce_mask) return false;
  const KernelSignature& s = signature(a.kind);
  for (int p = 0; p < s.num_pointers; ++p) {
    if (a.pointers[p] != b.pointers[p] || !(a.geometry[p] == b.geometry[p])) return false;
  }
  for (int k = 0; k < s.num_scalars; ++k) {
    // Bitwise, so that -0.0f and NaN payloads count.
    if (std::bit_cast<std::uint32_t>(a.scalars[k]) != std::bit_cast<std::uint32_t>(b.scalars[k])) {
      return false;
    }
  }
  return true;
}

int elementwise_pointers(KernelKind kind) {
  switch (kind) {
    case KernelKind::kSum:
    case KernelKind::kAmax:
    case KernelKind::kMm:
    case KernelKind::kAdamPowers:
    case KernelKind::kGenericMix: return 0;

    case KernelKind::kAdam:
    case KernelKind::kAdamW: return 4;
    default: return signature(kind).num_pointers;
  }
}

std::int64_t grid_size(const KernelLaunch& launch) {
  const std::int64_t n = kernels::geometry_numel(launch.geometry[0]);
  if (launch.kind == KernelKind::kGenericMix) return n == 0 ? 0 : 1;
  return n;
}

AddressRange pointer_extent(const KernelLaunch& launch, int arg) {
  CAPSIM_CHECK(arg >= 0 && arg < signature(launch.kind).num_pointers);
  const kernels::Geometry& g = launch.geometry[arg];
  std::int64_t elements = 1;
  for (int d = 0; d < g.rank; ++d) {
    if (g.sizes[d] == 0) {
      elements = 0;
      break;
    }
    elements += (g.sizes[d] - 1) * g.strides[d];
  }
  return AddressRange{launch.pointers[arg], static_cast<std::uint64_t>(elements) *
                                                static_cast<std::uint64_t>(g.elem_bytes)};
}

}  // namespace capsim
