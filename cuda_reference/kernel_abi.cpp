// The kernel ABI table (see kernel_abi.hpp): each kernel's parameter list in device_kernels.cu's
// order, its check against the compiled kernels, and encoding a launch into node parameters and
// decoding it back.
#include "cuda_reference/kernel_abi.hpp"

#include <fmt/format.h>

#include <cstring>

#include "model/check.hpp"

namespace capsim::cuda {

namespace {

using kernels::Geometry;

KernelParam param(ParamSlot slot, std::uint8_t index = 0) {
  KernelParam p;
  p.slot = slot;
  p.index = index;
  switch (slot) {
    case ParamSlot::kCount:
      p.size = sizeof(std::int64_t);
      p.align = alignof(std::int64_t);
      break;
    case ParamSlot::kOpCode:
      p.size = sizeof(int);
      p.align = alignof(int);
      break;
    case ParamSlot::kPointer:
      p.size = sizeof(float*);
      p.align = alignof(float*);
      break;
    case ParamSlot::kGeometry:
      p.size = sizeof(Geometry);
      p.align = alignof(Geometry);
      break;
    case ParamSlot::kScalar:
    case ParamSlot::kConstant:
      p.size = sizeof(float);
      p.align = alignof(float);
      break;
    case ParamSlot::kMask:
      p.size = sizeof(std::uint32_t);
      p.align = alignof(std::uint32_t);
      break;
  }
  return p;
}

// Pointer p followed by its geometry, for p in [0, n).
void tensors(std::vector<KernelParam>& out, int n) {
  for (int p = 0; p < n; ++p) {
    out.push_back(param(ParamSlot::kPointer, static_cast<std::uint8_t>(p)));
    out.push_back(param(ParamSlot::kGeometry, static_cast<std::uint8_t>(p)));
  }
}

void scalars(std::vector<KernelParam>& out, int n) {
  for (int s = 0; s < n; ++s)
    out.push_back(param(ParamSlot::kScalar, static_cast<std::uint8_t>(s)));
}

// The lists of device_kernels.cu, in its parameter order.
KernelAbi make_abi(KernelKind kind) {
  KernelAbi abi;
  abi.kind = kind;
  std::vector<KernelParam>& ps = abi.params;
  ps.push_back(param(ParamSlot::kCount));
  switch (kind) {
    case KernelKind::kFill:
      tensors(ps, 1);
      scalars(ps, 1);
      break;
    case KernelKind::kCopy:
    case KernelKind::kNeg:
    case KernelKind::kRelu: tensors(ps, 2); break;
    case KernelKind::kAdd:
    case KernelKind::kSub:
    case KernelKind::kMul:
    case KernelKind::kDiv:
      ps.push_back(param(ParamSlot::kOpCode));
      tensors(ps, 3);
      break;
    case KernelKind::kReluBackward:
    case KernelKind::kMm: tensors(ps, 3); break;
    case KernelKind::kSum:
    case KernelKind::kAmax:
      tensors(ps, 2);
      ps.push_back(param(ParamSlot::kMask));
      break;
    case KernelKind::kUnaryMath:
      tensors(ps, 2);
      scalars(ps, 1);
      break;
    case KernelKind::kSgd:
      tensors(ps, 3);
      scalars(ps, 5);
      break;
    case KernelKind::kSgdPlain:
      tensors(ps, 2);
      scalars(ps, 5);
      break;
    case KernelKind::kAdamPowers:
      ps.push_back(param(ParamSlot::kPointer, 0));
      scalars(ps, 2);
      break;
    case KernelKind::kAdam:
    case KernelKind::kAdamW:
      tensors(ps, 4);
      ps.push_back(param(ParamSlot::kPointer, 4));  // the 2-float powers buffer: no geometry
      scalars(ps, 5);
      ps.push_back(param(ParamSlot::kConstant));  // decoupled weight decay: 1 for AdamW
      break;
    case KernelKind::kTypedCopy:
      tensors(ps, 2);
      scalars(ps, 4);
      break;
    case KernelKind::kGenericMix:
      tensors(ps, 5);
      scalars(ps, 6);
      break;
  }
  std::size_t end = 0;
  for (KernelParam& p : ps) {
    p.offset = (end + p.align - 1) / p.align * p.align;
    end = p.offset + p.size;
  }
  abi.block_bytes = end;
  CAPSIM_CHECK(ps.size() <= kMaxKernelParams);
  return abi;
}

const std::array<KernelAbi, kNumKernelKinds>& table() {
  static const std::array<KernelAbi, kNumKernelKinds> abis = [] {
    std::array<KernelAbi, kNumKernelKinds> t;
    for (int k = 0; k < kNumKernelKinds; ++k) t[k] = make_abi(static_cast<KernelKind>(k));
    return t;
  }();
  return abis;
}

// A pointer the kernel takes without a geometry is Adam's 2-float powers
// buffer ({beta1^t, beta2^t}, contiguous): what the body reads of it.
Geometry implicit_geometry() {
  Geometry g;
  g.rank = 1;
  g.sizes[0] = 2;
  g.strides[0] = 1;
  return g;
}

float constant_of(KernelKind kind) {
  return kind == KernelKind::kAdamW ? 1.0f : 0.0f;
}

int op_code_of(KernelKind kind) {
  return static_cast<int>(kind) - static_cast<int>(KernelKind::kAdd);
}

}  // namespace

std::string_view param_slot_name(ParamSlot slot) {
  switch (slot) {
#define CAPSIM_CASE_(e, name) \
  case ParamSlot::e: return name;
    CAPSIM_PARAM_SLOTS(CAPSIM_CASE_)
#undef CAPSIM_CASE_
  }
  return "?";
}

const KernelAbi& kernel_abi(KernelKind kind) {
  const auto k = static_cast<std::size_t>(kind);
  CAPSIM_CHECK(k < table().size(), "a known kernel kind");
  return table()[k];
}

Status check_param_info(KernelKind kind, std::span<const ParamInfo> compiled) {
  const KernelAbi& abi = kernel_abi(kind);
  if (compiled.size() != abi.params.size()) {
    return make_error(fmt::format("kernel {}: the compiled kernel has {} parameters, the table {}",
                                  kernel_name(kind), compiled.size(), abi.params.size()));
  }
  for (std::size_t i = 0; i < compiled.size(); ++i) {
    const KernelParam& want = abi.params[i];
    if (compiled[i].offset != want.offset || compiled[i].size != want.size) {
      return make_error(fmt::format(
          "kernel {}: parameter {} ({} {}) is at offset {} with {} bytes compiled, but at offset "
          "{} with {} bytes in the table",
          kernel_name(kind), i, param_slot_name(want.slot), want.index, compiled[i].offset,
          compiled[i].size, want.offset, want.size));
    }
  }
  return {};
}

Status encode_params(const KernelLaunch& launch, std::span<const std::uint64_t> device_pointers,
                     ParamBlock& out) {
  const KernelAbi& abi = kernel_abi(launch.kind);
  const int pointers = signature(launch.kind).num_pointers;
  if (device_pointers.size() != static_cast<std::size_t>(pointers)) {
    return make_error(fmt::format("kernel {}: {} device pointers for {} pointer arguments",
                                  kernel_name(launch.kind), device_pointers.size(), pointers));
  }
  out.bytes.assign(abi.block_bytes, std::byte{0});
  out.args.clear();
  for (const KernelParam& p : abi.params) {
    std::byte* at = out.bytes.data() + p.offset;
    switch (p.slot) {
      case ParamSlot::kCount: {
        const std::int64_t n = grid_size(launch);
        std::memcpy(at, &n, sizeof n);
        break;
      }
      case ParamSlot::kOpCode: {
        const int op = op_code_of(launch.kind);
        std::memcpy(at, &op, sizeof op);
        break;
      }
      case ParamSlot::kPointer: {
        const std::uint64_t address = device_pointers[p.index];
        static_assert(sizeof(float*) == sizeof(std::uint64_t));
        std::memcpy(at, &address, sizeof address);
        break;
      }
      case ParamSlot::kGeometry: std::memcpy(at, &launch.geometry[p.index], p.size); break;
      case ParamSlot::kScalar: std::memcpy(at, &launch.scalars[p.index], p.size); break;
      case ParamSlot::kMask: std::memcpy(at, &launch.reduce_mask, p.size); break;
      case ParamSlot::kConstant: {
        const float c = constant_of(launch.kind);
        std::memcpy(at, &c, sizeof c);
        break;
      }
    }
    out.args.push_back(at);
  }
  return {};
}

Result<KernelLaunch> decode_params(KernelKind kind, std::span<const void* const> args) {
  const KernelAbi& abi = kernel_abi(kind);
  if (args.size() != abi.params.size()) {
    return make_error(fmt::format("kernel {}: {} parameters read back, the table has {}",
                                  kernel_name(kind), args.size(), abi.params.size()));
  }
  KernelLaunch launch;
  launch.kind = kind;
  for (int p = 0; p < signature(kind).num_pointers; ++p) launch.geometry[p] = implicit_geometry();
  std::int64_t count = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const KernelParam& p = abi.params[i];
    if (args[i] == nullptr) {
      return make_error(fmt::format("kernel {}: parameter {} has no bytes", kernel_name(kind), i));
    }
    switch (p.slot) {
      case ParamSlot::kCount: std::memcpy(&count, args[i], sizeof count); break;
      case ParamSlot::kOpCode: {
        int op = 0;
        std::memcpy(&op, args[i], sizeof op);
        if (op != op_code_of(kind)) {
          return make_error(fmt::format("kernel {}: op code {} where {} was expected",
                                        kernel_name(kind), op, op_code_of(kind)));
        }
        break;
      }
      case ParamSlot::kPointer: {
        std::uint64_t address = 0;
        std::memcpy(&address, args[i], sizeof address);
        launch.pointers[p.index] = address;
        break;
      }
      case ParamSlot::kGeometry: std::memcpy(&launch.geometry[p.index], args[i], p.size); break;
      case ParamSlot::kScalar: std::memcpy(&launch.scalars[p.index], args[i], p.size); break;
      case ParamSlot::kMask: std::memcpy(&launch.reduce_mask, args[i], p.size); break;
      case ParamSlot::kConstant: {
        float c = 0;
        std::memcpy(&c, args[i], sizeof c);
        if (c != constant_of(kind)) {
          return make_error(fmt::format("kernel {}: constant {} where {} was expected",
                                        kernel_name(kind), c, constant_of(kind)));
        }
        break;
      }
    }
  }
  if (count != grid_size(launch)) {
    return make_error(fmt::format("kernel {}: element count {}, but its output geometry has {}",
                                  kernel_name(kind), count, grid_size(launch)));
  }
  return launch;
}

}  // namespace capsim::cuda
