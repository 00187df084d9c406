// StepProgram (see step_program.hpp): adding steps, the pointer uses a program bakes, and the
// validation of every step (its dependencies, and each kernel's geometry against its table row).
#include "model/step_program.hpp"

#include <fmt/format.h>

#include <set>

namespace capsim {

namespace {
constexpr std::string_view kStepKindNames[] = {
#define CAPSIM_NAME_(e, name) name,
    CAPSIM_STEP_KINDS(CAPSIM_NAME_)
#undef CAPSIM_NAME_
};
static_assert(std::variant_size_v<StepOp> == std::size(kStepKindNames),
              "StepOp alternatives must follow CAPSIM_STEP_KINDS");

// Elements a geometry may span, bounded so byte counts cannot overflow.
constexpr std::int64_t kMaxSpan = std::int64_t{1} << 40;

Status validate_geometry(const StepProgram& program, StepIndex i, const KernelLaunch& launch,
                         int arg) {
  const kernels::Geometry& g = launch.geometry[arg];
  auto where = [&] {
    return fmt::format("program '{}': step {} ({}): pointer {} ({})", program.name, i,
                       kernel_name(launch.kind), arg, signature(launch.kind).pointer_names[arg]);
  };
  if (g.rank < 0 || g.rank > kernels::kMaxGeometryRank) {
    return make_error(fmt::format("{}: rank {} is out of range", where(), g.rank));
  }
  // The float32 kernels read 4-byte elements; only generic_mix takes others.
  const bool any_size =
      launch.kind == KernelKind::kGenericMix || launch.kind == KernelKind::kTypedCopy;
  if (any_size ? !(g.elem_bytes == 1 || g.elem_bytes == 2 || g.elem_bytes == 4 || g.elem_bytes == 8)
               : g.elem_bytes != 4) {
    return make_error(fmt::format("{}: elements of {} bytes", where(), g.elem_bytes));
  }
  std::int64_t span = 1;
  for (int d = 0; d < g.rank; ++d) {
    if (g.sizes[d] < 0 || g.strides[d] < 0) {
      return make_error(fmt::format("{}: negative size or stride in dim {}", where(), d));
    }
    std::int64_t term = 0;
    if (g.sizes[d] > 0 && (__builtin_mul_overflow(g.sizes[d] - 1, g.strides[d], &term) ||
                           __builtin_add_overflow(span, term, &span) || span > kMaxSpan)) {
      return make_error(fmt::format("{}: geometry spans more than {} elements", where(), kMaxSpan));
    }
  }
  // A null pointer is fine for an empty operand (data_ptr 0), never otherwise.
  if (launch.pointers[arg] == 0 && pointer_extent(launch, arg).bytes != 0) {
    return make_error(fmt::format("{}: null address", where()));
  }
  if (launch.pointers[arg] % static_cast<std::uint64_t>(g.elem_bytes) != 0) {
    return make_error(fmt::format("{}: address {} is not {}-byte aligned", where(),
                                  hex(launch.pointers[arg]), g.elem_bytes));
  }
  return {};
}

Status validate_kernel(const StepProgram& program, StepIndex i, const KernelLaunch& launch) {
  const auto kind = static_cast<int>(launch.kind);
  if (kind < 0 || kind >= kNumKernelKinds) {
    return make_error(
        fmt::format("program '{}': step {}: unknown kernel kind {}", program.name, i, kind));
  }
  const KernelSignature& s = signature(launch.kind);
  for (int p = 0; p < s.num_pointers; ++p) CAPSIM_TRY(validate_geometry(program, i, launch, p));
  auto same_sizes = [](const kernels::Geometry& a, const kernels::Geometry& b) {
    if (a.rank != b.rank) return false;
    for (int d = 0; d < a.rank; ++d) {
      if (a.sizes[d] != b.sizes[d]) return false;
    }
    return true;
  };
  // A typed_copy that fills (scalar use_value) has no input to compare.
  const bool fill = launch.kind == KernelKind::kTypedCopy && launch.scalars[1] != 0.0f;
  for (int p = 1; p < (fill ? 1 : elementwise_pointers(launch.kind)); ++p) {
    if (!same_sizes(launch.geometry[p], launch.geometry[0])) {
      return make_error(
          fmt::format("program '{}': step {} ({}): pointer {} ({}) has other sizes "
                      "than pointer 0",
                      program.name, i, s.name, p, s.pointer_names[p]));
    }
  }
  const bool powers = launch.kind == KernelKind::kAdamPowers;
  if (powers || launch.kind == KernelKind::kAdam || launch.kind == KernelKind::kAdamW) {
    const int arg = powers ? 0 : 4;
    const kernels::Geometry& g = launch.geometry[arg];
    if (g.rank != 1 || g.sizes[0] != 2) {
      return make_error(
          fmt::format("program '{}': step {} ({}): pointer {} (state) must have "
                      "sizes [2]",
                      program.name, i, s.name, arg));
    }
  }
  if (s.uses_reduce_mask) {
    const int rank = launch.geometry[1].rank;
    if (launch.geometry[0].rank != rank || (rank < 32 && (launch.reduce_mask >> rank) != 0)) {
      return make_error(
          fmt::format("program '{}': step {} ({}): reduce mask {:#x} or out rank {} "
                      "does not fit the input rank {}",
                      program.name, i, s.name, launch.reduce_mask, launch.geometry[0].rank, rank));
    }
  }
  if (launch.kind == KernelKind::kUnaryMath) {
    const float op = launch.scalars[0];
    if (!(op >= 0.0f && op < static_cast<float>(kernels::kNumUnaryMath)) ||
        op != static_cast<float>(static_cast<int>(op))) {
      return make_error(fmt::format("program '{}': step {} (unary_math): op {} is not 0 to {}",
                                    program.name, i, op, kernels::kNumUnaryMath - 1));
    }
  }
  if (launch.kind == KernelKind::kMm &&
      (launch.geometry[0].rank != 2 || launch.geometry[1].rank != 2 ||
       launch.geometry[2].rank != 2 || launch.geometry[1].sizes[1] != launch.geometry[2].sizes[0] ||
       launch.geometry[0].sizes[0] != launch.geometry[1].sizes[0] ||
       launch.geometry[0].sizes[1] != launch.geometry[2].sizes[1])) {
    return make_error(
        fmt::format("program '{}': step {} (mm): operand shapes do not match", program.name, i));
  }
  return {};
}
}  // namespace

std::string_view step_kind_name(StepKind kind) {
  return kStepKindNames[static_cast<int>(kind)];
}

StepIndex StepProgram::add(StepOp op, std::vector<StepIndex> deps) {
  CAPSIM_CHECK(steps.size() < kMaxSteps, "step program is full");
  steps.push_back(Step{std::move(op), std::move(deps)});
  return static_cast<StepIndex>(steps.size() - 1);
}

std::vector<PointerUse> pointer_uses(const StepProgram& program) {
  std::vector<PointerUse> uses;
  for (StepIndex i = 0; i < program.steps.size(); ++i) {
    const StepOp& op = program.steps[i].op;
    if (const auto* k = std::get_if<KernelLaunch>(&op)) {
      const KernelSignature& s = signature(k->kind);
      for (int p = 0; p < s.num_pointers; ++p) {
        uses.push_back(
            {i, static_cast<std::uint8_t>(p), pointer_extent(*k, p), s.pointer_access[p]});
      }
    } else if (const auto* c = std::get_if<CopyStep>(&op)) {
      uses.push_back({i, 0, {c->dst, c->bytes}, Access::kWrite});
      uses.push_back({i, 1, {c->src, c->bytes}, Access::kRead});
    } else if (const auto* m = std::get_if<MemsetStep>(&op)) {
      uses.push_back({i, 0, {m->dst, m->bytes}, Access::kWrite});
    }
  }
  return uses;
}

Status validate(const StepProgram& program) {
  if (program.steps.size() > kMaxSteps) {
    return make_error(fmt::format("program '{}' has {} steps; the limit is {}", program.name,
                                  program.steps.size(), kMaxSteps));
  }
  for (StepIndex i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    std::set<StepIndex> seen;
    for (StepIndex d : step.deps) {
      if (d >= i) {
        return make_error(
            fmt::format("program '{}': step {}: dependency on step {} is not an earlier step",
                        program.name, i, d));
      }
      if (!seen.insert(d).second) {
        return make_error(fmt::format(
            "program '{}': step {}: dependency on step {} is listed twice", program.name, i, d));
      }
    }
    if (const auto* k = std::get_if<KernelLaunch>(&step.op)) {
      CAPSIM_TRY(validate_kernel(program, i, *k));
    } else if (const auto* c = std::get_if<CopyStep>(&step.op)) {
      if (c->bytes > 0 && AddressRange{c->dst, c->bytes}.overlaps({c->src, c->bytes})) {
        return make_error(
            fmt::format("program '{}': step {} (copy): source {} and destination {} "
                        "overlap over {} bytes",
                        program.name, i, hex(c->src), hex(c->dst), c->bytes));
      }
    }
  }
  return {};
}

}  // namespace capsim
