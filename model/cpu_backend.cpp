// CpuBackend (see cpu_backend.hpp): a kernel launch run on the host over DeviceMemory (with a
// rank-1 geometry for dense elementwise launches, and plain loops for the common ones), and
// StepPrograms instantiated, replayed and their evidence computed.
#include "model/cpu_backend.hpp"

#include <fmt/format.h>

#include <cstring>

namespace capsim {

namespace {
using kernels::Geometry;

// Host pointers for a launch's arguments, each checked against its extent.
Result<std::array<float*, kMaxKernelPointers>> resolve_pointers(const KernelLaunch& launch,
                                                                DeviceMemory& memory) {
  std::array<float*, kMaxKernelPointers> ptrs{};
  const KernelSignature& s = signature(launch.kind);
  for (int p = 0; p < s.num_pointers; ++p) {
    const AddressRange extent = pointer_extent(launch, p);
    auto host = memory.resolve(extent.base, extent.bytes);
    if (!host) {
      return make_error(fmt::format("{} pointer {} ({}): {}", s.name, p, s.pointer_names[p],
                                    host.error().message));
    }
    ptrs[p] = reinterpret_cast<float*>(*host);
  }
  return ptrs;
}
bool is_dense(const Geometry& g) {
  std::int64_t expected = 1;
  for (int d = g.rank - 1; d >= 0; --d) {
    if (g.sizes[d] == 1) continue;
    if (g.strides[d] != expected) return false;
    expected *= g.sizes[d];
  }
  return true;
}

// An elementwise launch whose operands are all dense row-major tensors of the
// same shape touches element i at offset i in each, so every geometry can be
// collapsed to rank 1. Same addresses, same order, same arithmetic: only the
// index computation gets cheaper.
bool collapses_to_rank_one(const KernelLaunch& launch, std::int64_t n) {
  const int pointers = elementwise_pointers(launch.kind);
  if (pointers == 0) return false;
  for (int p = 0; p < pointers; ++p) {
    const Geometry& g = launch.geometry[p];
    // One shared geometry holds one element size (typed_copy's may differ).
    if (!is_dense(g) || kernels::geometry_numel(g) != n ||
        g.elem_bytes != launch.geometry[0].elem_bytes) {
      return false;
    }
  }
  return true;
}

// Each operand's geometry: its own, or one rank-1 geometry shared by all when
// the launch collapses. Pointers, not a collapsed copy of the launch: a
// launch holds every operand's sizes and strides, and copying it was most of
// a small kernel's time.
class OperandGeometry {
 public:
  OperandGeometry(const KernelLaunch& launch, std::int64_t n) {
    flat_.rank = 1;
    flat_.elem_bytes = launch.geometry[0].elem_bytes;
    flat_.sizes[0] = n;
    flat_.strides[0] = 1;
    collapsed_ = collapses_to_rank_one(launch, n);
    for (std::size_t i = 0; i < at_.size(); ++i) {
      at_[i] = collapsed_ ? &flat_ : &launch.geometry[i];
    }
  }
  OperandGeometry(const OperandGeometry&) = delete;  // at_ may point into it
  const Geometry& operator[](std::size_t i) const { return *at_[i]; }
  // Element i of every operand is at offset i (elementwise, dense, same shape).
  bool collapsed() const { return collapsed_; }

 private:
  Geometry flat_;
  std::array<const Geometry*, kMaxKernelPointers> at_{};
  bool collapsed_ = false;
};

// The dense loops: a collapsed launch of the common elementwise kernels as a
// plain loop over its operands. Each element goes through the value function
// that the element body of kernel_bodies.hpp applies, reads its operands in
// the body's order and is written in the same ascending order, so the bits
// are the body's (an in-place or overlapping operand included: the loop is
// sequential). What it saves is the per-element geometry and the per-element
// dispatch on the operator. tests/model/test_kernels_dense.cpp holds it to
// the bodies.
template <kernels::BinaryOp Op>
void binary_dense(float* out, const float* a, const float* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = kernels::apply_binary(Op, a[i], b[i]);
}

// False for a kind it does not cover, which then takes the element bodies.
bool run_dense(const KernelLaunch& launch, const std::array<float*, kMaxKernelPointers>& p,
               std::int64_t n) {
  namespace k = kernels;
  float* out = p[0];
  switch (launch.kind) {
    case KernelKind::kFill:
      for (std::int64_t i = 0; i < n; ++i) out[i] = launch.scalars[0];
      return true;
    case KernelKind::kCopy:
      for (std::int64_t i = 0; i < n; ++i) out[i] = p[1][i];
      return true;
    case KernelKind::kAdd: binary_dense<k::BinaryOp::kAdd>(out, p[1], p[2], n); return true;
    case KernelKind::kSub: binary_dense<k::BinaryOp::kSub>(out, p[1], p[2], n); return true;
    case KernelKind::kMul: binary_dense<k::BinaryOp::kMul>(out, p[1], p[2], n); return true;
    case KernelKind::kDiv: binary_dense<k::BinaryOp::kDiv>(out, p[1], p[2], n); return true;
    case KernelKind::kNeg:
      for (std::int64_t i = 0; i < n; ++i) out[i] = k::neg_value(p[1][i]);
      return true;
    case KernelKind::kRelu:
      for (std::int64_t i = 0; i < n; ++i) out[i] = k::relu_value(p[1][i]);
      return true;
    case KernelKind::kReluBackward:
      for (std::int64_t i = 0; i < n; ++i) out[i] = k::relu_backward_value(p[1][i], p[2][i]);
      return true;
    default: return false;
  }
}
}  // namespace

namespace {
// generic_mix over the launch's pointers, as bytes; the whole output in one
// call (grid_size is 1).
void run_generic_mix(const KernelLaunch& launch, const std::array<float*, kMaxKernelPointers>& p) {
  namespace k = kernels;
  std::array<const unsigned char*, k::kMaxMixInputs> in{};
  for (int a = 0; a < k::kMaxMixInputs; ++a) {
    in[a] = reinterpret_cast<const unsigned char*>(p[a + 1]);
  }
  const auto& s = launch.scalars;
  k::generic_mix_run(reinterpret_cast<unsigned char*>(p[0]), launch.geometry[0], in.data(),
                     &launch.geometry[1], k::kMaxMixInputs,
                     k::seed_from_scalars(s[0], s[1], s[2], s[3]),
                     static_cast<k::MixStore>(static_cast<int>(s[4])), s[5] != 0.0f);
}

// The optimizer kernels: sgd, sgd_plain, adam_powers, adam and adamw.
// sgd_plain passes no buffer: sgd_elem never touches it without momentum
// (the launch checks that momentum is 0).
void run_optimizer(const KernelLaunch& launch, const std::array<float*, kMaxKernelPointers>& p,
                   const OperandGeometry& g, std::int64_t n) {
  namespace k = kernels;
  const auto& s = launch.scalars;
  switch (launch.kind) {
    case KernelKind::kSgd:
      for (std::int64_t i = 0; i < n; ++i) {
        k::sgd_elem(i, p[0], g[0], p[1], g[1], p[2], g[2], s[0], s[1], s[2], s[3], s[4]);
      }
      break;
    case KernelKind::kSgdPlain:
      for (std::int64_t i = 0; i < n; ++i) {
        k::sgd_elem(i, p[0], g[0], p[1], g[1], nullptr, g[1], s[0], s[1], s[2], s[3], s[4]);
      }
      break;
    case KernelKind::kAdamPowers:
      for (std::int64_t i = 0; i < n; ++i) k::adam_powers_elem(i, p[0], s[0], s[1]);
      break;
    case KernelKind::kAdam:
    case KernelKind::kAdamW: {
      const float decoupled = launch.kind == KernelKind::kAdamW ? 1.0f : 0.0f;
      for (std::int64_t i = 0; i < n; ++i) {
        k::adam_elem(i, p[0], g[0], p[1], g[1], p[2], g[2], p[3], g[3], p[4], s[0], s[1], s[2],
                     s[3], s[4], decoupled);
      }
      break;
    }
    default: CAPSIM_CHECK(false, "run_optimizer takes the optimizer kernels only");
  }
}

// typed_copy over its two pointers as bytes, with their (maybe collapsed)
// geometries.
void run_typed_copy(const KernelLaunch& launch, const std::array<float*, kMaxKernelPointers>& p,
                    const kernels::Geometry& g_out, const kernels::Geometry& g_in, std::int64_t n) {
  namespace k = kernels;
  auto* out = reinterpret_cast<unsigned char*>(p[0]);
  const auto* in = reinterpret_cast<const unsigned char*>(p[1]);
  const auto& s = launch.scalars;
  const auto out_kind = static_cast<k::CopyElem>(static_cast<int>(s[2]));
  const auto in_kind = static_cast<k::CopyElem>(static_cast<int>(s[3]));
  for (std::int64_t i = 0; i < n; ++i) {
    k::typed_copy_elem(i, out, g_out, out_kind, in, g_in, in_kind, s[0], s[1] != 0.0f);
  }
}
}  // namespace

Status run_kernel_on_host(const KernelLaunch& launch, DeviceMemory& memory) {
  auto resolved = resolve_pointers(launch, memory);
  if (!resolved) return resolved.error();
  const auto& p = *resolved;
  const auto& s = launch.scalars;
  const std::int64_t n = grid_size(launch);
  const OperandGeometry g(launch, n);
  if (g.collapsed() && run_dense(launch, p, n)) return {};
  namespace k = kernels;
  switch (launch.kind) {
    case KernelKind::kFill:
      for (std::int64_t i = 0; i < n; ++i) k::fill_elem(i, p[0], g[0], s[0]);
      break;
    case KernelKind::kCopy:
      for (std::int64_t i = 0; i < n; ++i) k::copy_elem(i, p[0], g[0], p[1], g[1]);
      break;
    case KernelKind::kAdd:
    case KernelKind::kSub:
    case KernelKind::kMul:
    case KernelKind::kDiv: {
      const auto op = static_cast<k::BinaryOp>(static_cast<int>(launch.kind) -
                                               static_cast<int>(KernelKind::kAdd));
      for (std::int64_t i = 0; i < n; ++i)
        k::binary_elem(i, op, p[0], g[0], p[1], g[1], p[2], g[2]);
      break;
    }
    case KernelKind::kNeg:
      for (std::int64_t i = 0; i < n; ++i) k::neg_elem(i, p[0], g[0], p[1], g[1]);
      break;
    case KernelKind::kRelu:
      for (std::int64_t i = 0; i < n; ++i) k::relu_elem(i, p[0], g[0], p[1], g[1]);
      break;
    case KernelKind::kReluBackward:
      for (std::int64_t i = 0; i < n; ++i) {
        k::relu_backward_elem(i, p[0], g[0], p[1], g[1], p[2], g[2]);
      }
      break;
    case KernelKind::kSum:
      for (std::int64_t i = 0; i < n; ++i)
        k::sum_elem(i, p[0], g[0], p[1], g[1], launch.reduce_mask);
      break;
    case KernelKind::kAmax:
      for (std::int64_t i = 0; i < n; ++i)
        k::amax_elem(i, p[0], g[0], p[1], g[1], launch.reduce_mask);
      break;
    case KernelKind::kUnaryMath: {
      const auto op = static_cast<k::UnaryMath>(static_cast<int>(s[0]));
      for (std::int64_t i = 0; i < n; ++i) k::unary_math_elem(i, op, p[0], g[0], p[1], g[1]);
      break;
    }
    case KernelKind::kMm:
      for (std::int64_t i = 0; i < n; ++i) k::mm_elem(i, p[0], g[0], p[1], g[1], p[2], g[2]);
      break;
    case KernelKind::kSgd:
    case KernelKind::kSgdPlain:
    case KernelKind::kAdamPowers:
    case KernelKind::kAdam:
    case KernelKind::kAdamW: run_optimizer(launch, p, g, n); break;
    case KernelKind::kTypedCopy: run_typed_copy(launch, p, g[0], g[1], n); break;
    case KernelKind::kGenericMix: run_generic_mix(launch, p); break;
  }
  return {};
}

Status CpuBackend::materialize(const MemoryLayout& layout) {
  // The CPU backend runs on the simulated memory itself: every segment of the
  // layout must already be mapped there.
  for (const AddressRange& segment : layout.segments) {
    if (!memory_.check_mapped(segment.base, segment.bytes)) {
      return make_error(fmt::format("cpu backend: segment {} of {} bytes is not mapped",
                                    hex(segment.base), segment.bytes));
    }
  }
  return {};
}

Result<GraphHandle> CpuBackend::instantiate(const StepProgram& program) {
  CAPSIM_TRY(validate(program));
  if (programs_.size() >= kMaxGraphs) {
    return make_error(fmt::format("cpu backend: more than {} instantiated programs", kMaxGraphs));
  }
  // Every baked range must be mapped now; segments are never unmapped, so a
  // replay can then never fault.
  for (const PointerUse& use : pointer_uses(program)) {
    const Status mapped = memory_.check_mapped(use.range.base, use.range.bytes);
    if (!mapped) {
      return make_error(fmt::format("program '{}': step {} argument {}: {}", program.name, use.step,
                                    use.arg, mapped.error().message));
    }
  }
  programs_.push_back(program);
  const GraphHandle handle{static_cast<std::uint32_t>(programs_.size() - 1)};
  if (mirror_ != nullptr) mirror_->instantiated(handle, programs_.back(), memory_);
  return handle;
}

Result<const StepProgram*> CpuBackend::program(GraphHandle handle) const {
  if (handle.value >= programs_.size()) {
    return make_error(fmt::format("cpu backend: unknown graph handle {}", handle.value));
  }
  return &programs_[handle.value];
}

Status CpuBackend::run_step(const Step& step) {
  if (!memory_.backed()) return {};  // values off: the steps compute nothing to keep
  if (const auto* k = std::get_if<KernelLaunch>(&step.op)) return run_kernel_on_host(*k, memory_);
  if (const auto* c = std::get_if<CopyStep>(&step.op)) {
    auto dst = memory_.resolve(c->dst, c->bytes);
    if (!dst) return dst.error();
    auto src = memory_.resolve(c->src, c->bytes);
    if (!src) return src.error();
    // validate() rejects overlapping copies in programs; memmove keeps an
    // unvalidated eager step defined all the same.
    if (c->bytes > 0) std::memmove(*dst, *src, c->bytes);
    return {};
  }
  const auto& m = std::get<MemsetStep>(step.op);
  auto dst = memory_.resolve(m.dst, m.bytes);
  if (!dst) return dst.error();
  if (m.bytes > 0) std::memset(*dst, m.value, m.bytes);
  return {};
}

Status CpuBackend::replay(GraphHandle handle) {
  auto p = program(handle);
  if (!p) return p.error();
  if (mirror_ != nullptr) mirror_->before_replay(handle, memory_);
  for (const Step& step : (*p)->steps) CAPSIM_TRY(run_step(step));
  if (mirror_ != nullptr) mirror_->after_replay(handle, memory_);
  return {};
}

Result<GraphEvidence> CpuBackend::evidence(GraphHandle handle) const {
  if (mirror_ != nullptr) {
    if (std::optional<GraphEvidence> e = mirror_->evidence(handle)) return std::move(*e);
    // Never the model's own digests in the mirror's name.
    return make_error(
        fmt::format("{} backend: {}", mirror_->name(),
                    mirror_->disagreement().value_or(fmt::format(
                        "no evidence of graph {} (it has not replayed)", handle.value))));
  }
  CAPSIM_TRY_ASSIGN(const StepProgram* p, program(handle));
  const std::vector<PointerUse> baked = pointer_uses(*p);
  return graph_evidence(baked, [this](Address address, std::span<std::byte> out) {
    return memory_.read(address, out);
  });
}

Status CpuBackend::read(Address address, std::span<std::byte> out) {
  return memory_.read(address, out);
}

Status CpuBackend::write(Address address, std::span<const std::byte> in) {
  return memory_.write(address, in);
}

Result<std::vector<PointerUse>> CpuBackend::baked_pointers(GraphHandle handle) const {
  auto p = program(handle);
  if (!p) return p.error();
  return pointer_uses(**p);
}

}  // namespace capsim
