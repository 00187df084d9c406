// The host's dense loops (model/cpu_backend.cpp, run_dense) against the element
// bodies of kernel_bodies.hpp: a dense, same-shape elementwise launch takes the
// loop, and every bit it writes must be what the bodies write for the same
// launch, for IEEE corner values and for operands that alias the output
// exactly or overlap it one element off (the loop must stay sequential).
#include "tests/model/kernel_test_world.hpp"

namespace capsim {
namespace {
using namespace kernel_test;

// Values that pin the bodies' corners among ordinary ones: NaN, both zeros,
// infinities, a subnormal, the largest float.
std::vector<float> corner_values(std::size_t n, std::uint32_t seed) {
  Lcg lcg(seed);
  std::vector<float> out = lcg.floats(n, -4.0f, 4.0f);
  const float corners[] = {
      kNaN, 0.0f, -0.0f, kInf, -kInf, 1e-40f, std::numeric_limits<float>::max()};
  for (std::size_t i = 0; i < std::size(corners) && i * 3 < n; ++i) {
    out[(i * 3 + seed) % n] = corners[i];
  }
  return out;
}

// What the element bodies write for `launch` over host copies of its operands:
// `buffer` holds the storage's floats, `offsets` each pointer's element offset in it.
void run_bodies(const KernelLaunch& launch, std::vector<float>& buffer,
                const std::vector<std::size_t>& offsets) {
  namespace k = kernels;
  const std::int64_t n = grid_size(launch);
  auto at = [&](int p) { return buffer.data() + offsets[static_cast<std::size_t>(p)]; };
  const auto& g = launch.geometry;
  for (std::int64_t i = 0; i < n; ++i) {
    switch (launch.kind) {
      case KernelKind::kFill: k::fill_elem(i, at(0), g[0], launch.scalars[0]); break;
      case KernelKind::kCopy: k::copy_elem(i, at(0), g[0], at(1), g[1]); break;
      case KernelKind::kAdd:
      case KernelKind::kSub:
      case KernelKind::kMul:
      case KernelKind::kDiv: {
        const auto op = static_cast<k::BinaryOp>(static_cast<int>(launch.kind) -
                                                 static_cast<int>(KernelKind::kAdd));
        k::binary_elem(i, op, at(0), g[0], at(1), g[1], at(2), g[2]);
        break;
      }
      case KernelKind::kNeg: k::neg_elem(i, at(0), g[0], at(1), g[1]); break;
      case KernelKind::kRelu: k::relu_elem(i, at(0), g[0], at(1), g[1]); break;
      case KernelKind::kReluBackward:
        k::relu_backward_elem(i, at(0), g[0], at(1), g[1], at(2), g[2]);
        break;
      default: FAIL("not a kind of the dense loops");
    }
  }
}

// One storage of 3n floats; operand p is the n floats from offsets[p].
// The launch runs on the simulated device (dense loops) and on host copies
// (element bodies); the whole storage must match bit for bit.
void check_dense_matches_bodies(KernelKind kind, const std::vector<std::size_t>& offsets,
                                std::uint32_t seed) {
  constexpr std::int64_t n = 37;
  World w;
  std::vector<float> values = corner_values(3 * n, seed);
  const Tensor storage = w.tensor({3 * n}, values);
  std::vector<TensorArg> args;
  for (std::size_t off : offsets) {
    args.push_back(w.arg(w.view(storage, slice(storage.meta, 0, static_cast<std::int64_t>(off),
                                               static_cast<std::int64_t>(off) + n))));
  }
  Result<KernelLaunch> launch = make_error("no launch");
  switch (kind) {
    case KernelKind::kFill: launch = launch_fill(args[0], -2.5f); break;
    case KernelKind::kCopy: launch = launch_copy(args[0], args[1]); break;
    case KernelKind::kNeg:
    case KernelKind::kRelu: launch = launch_unary(kind, args[0], args[1]); break;
    case KernelKind::kReluBackward: launch = launch_relu_backward(args[0], args[1], args[2]); break;
    default: launch = launch_binary(kind, args[0], args[1], args[2]);
  }
  w.run(launch);
  run_bodies(*launch, values, offsets);
  check_equal(w.read_raw(storage, values.size()), values);
}

TEST_CASE("the dense loops write the element bodies' bits, aliased and overlapping too") {
  const KernelKind binary[] = {KernelKind::kAdd, KernelKind::kSub, KernelKind::kMul,
                               KernelKind::kDiv, KernelKind::kReluBackward};
  for (std::uint32_t seed = 1; seed <= 3; ++seed) {
    CAPTURE(seed);
    check_dense_matches_bodies(KernelKind::kFill, {1}, seed);
    for (KernelKind kind : {KernelKind::kCopy, KernelKind::kNeg, KernelKind::kRelu}) {
      CAPTURE(kernel_name(kind));
      check_dense_matches_bodies(kind, {0, 37}, seed);  // apart
      check_dense_matches_bodies(kind, {5, 5}, seed);   // in place
      check_dense_matches_bodies(kind, {1, 0}, seed);   // the output one element ahead
      check_dense_matches_bodies(kind, {0, 1}, seed);   // the output one element behind
    }
    for (KernelKind kind : binary) {
      CAPTURE(kernel_name(kind));
      check_dense_matches_bodies(kind, {0, 37, 18}, seed);
      check_dense_matches_bodies(kind, {3, 3, 40}, seed);  // out is a
      check_dense_matches_bodies(kind, {3, 40, 3}, seed);  // out is b
      check_dense_matches_bodies(kind, {1, 0, 0}, seed);   // a and b are one, out one ahead
      check_dense_matches_bodies(kind, {0, 1, 2}, seed);
    }
  }
}

}  // namespace
}  // namespace capsim
