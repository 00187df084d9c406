// Kernels, element by element: fill, copy, the binary ops, neg, relu and
// relu_backward, with known values over strided, sliced and broadcast operands
// and the IEEE corner cases the bodies pin (NaN, -0, subnormals).
#include "tests/model/kernel_test_world.hpp"

namespace capsim {
namespace {
using namespace kernel_test;

TEST_CASE("fill writes the value through a strided view and nothing else") {
  World w;
  const Tensor base = w.tensor({2, 4});
  // base[:, 1::2]: sizes [2, 2], strides [4, 2], offset 1.
  const Tensor cols = w.view(base, slice(base.meta, 1, 1, 4, 2));
  w.run(launch_fill(w.arg(cols), 3.5f));
  const float s = kSentinel;
  check_equal(w.read_raw(base, 8), {s, 3.5f, s, 3.5f, s, 3.5f, s, 3.5f});

  // -0.0f and NaN are stored bit for bit.
  const Tensor t = w.tensor({3});
  w.run(launch_fill(w.arg(t), -0.0f));
  for (float f : w.read(t)) CHECK(bits(f) == bits(-0.0f));
  w.run(launch_fill(w.arg(t), kNaN));
  for (float f : w.read(t)) CHECK(bits(f) == bits(kNaN));
}

TEST_CASE("copy between contiguous, transposed, sliced and expanded tensors") {
  World w;
  const float s = kSentinel;

  SUBCASE("contiguous to contiguous") {
    const Tensor in = w.tensor({2, 3}, iota(6, 1.0f));
    const Tensor out = w.tensor({2, 3});
    w.run(launch_copy(w.arg(out), w.arg(in)));
    check_equal(w.read_raw(out, 6), {1, 2, 3, 4, 5, 6});
  }
  SUBCASE("transposed source (as_strided)") {
    // in = [[0,1,2],[3,4,5]]; in.T = [[0,3],[1,4],[2,5]].
    const Tensor base = w.tensor({2, 3}, iota(6));
    const Tensor in_t = w.view(base, as_strided(base.meta, {3, 2}, {1, 3}, 0, 24));
    const Tensor out = w.tensor({3, 2});
    w.run(launch_copy(w.arg(out), w.arg(in_t)));
    check_equal(w.read_raw(out, 6), {0, 3, 1, 4, 2, 5});
  }
  SUBCASE("step-2 slice source") {
    // base = [[0..4],[5..9]]; base[:, ::2] = [[0,2,4],[5,7,9]].
    const Tensor base = w.tensor({2, 5}, iota(10));
    const Tensor in = w.view(base, slice(base.meta, 1, 0, 5, 2));
    const Tensor out = w.tensor({2, 3});
    w.run(launch_copy(w.arg(out), w.arg(in)));
    check_equal(w.read_raw(out, 6), {0, 2, 4, 5, 7, 9});
  }
  SUBCASE("stride-0 expand source") {
    const Tensor row = w.tensor({1, 3}, {7, 8, 9});
    const Tensor in = w.view(row, expand(row.meta, {4, 3}));
    CHECK(in.meta.strides == Dims{0, 1});
    const Tensor out = w.tensor({4, 3});
    w.run(launch_copy(w.arg(out), w.arg(in)));
    check_equal(w.read_raw(out, 12), {7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 8, 9});
    // A new leading dim is stride 0 too.
    const Tensor col = w.tensor({3}, {1, 2, 3});
    const Tensor in2 = w.view(col, expand(col.meta, {2, 3}));
    const Tensor out2 = w.tensor({2, 3});
    w.run(launch_copy(w.arg(out2), w.arg(in2)));
    check_equal(w.read_raw(out2, 6), {1, 2, 3, 1, 2, 3});
  }
  SUBCASE("strided to strided: sliced source into a transposed, gapped destination") {
    // in = base_in[:, 1::2] of a [3, 4] base: [[1,3],[5,7],[9,11]], strides [4, 2].
    const Tensor base_in = w.tensor({3, 4}, iota(12));
    const Tensor in = w.view(base_in, slice(base_in.meta, 1, 1, 4, 2));
    // out: a [3, 2] view of a [2, 6] base with strides [2, 6]: element (i, j) at
    // 2i + 6j, so the odd positions of the base stay untouched.
    const Tensor base_out = w.tensor({2, 6});
    const Tensor out = w.view(base_out, as_strided(base_out.meta, {3, 2}, {2, 6}, 0, 48));
    w.run(launch_copy(w.arg(out), w.arg(in)));
    check_equal(w.read(out), {1, 3, 5, 7, 9, 11});
    check_equal(w.read_raw(base_out, 12), {1, s, 5, s, 9, s, 3, s, 7, s, 11, s});
  }
  SUBCASE("expanded source into a transposed destination") {
    const Tensor col = w.tensor({3, 1}, {1, 2, 3});
    const Tensor in = w.view(col, expand(col.meta, {3, 2}));
    const Tensor base_out = w.tensor({2, 3});
    const Tensor out = w.view(base_out, as_strided(base_out.meta, {3, 2}, {1, 3}, 0, 24));
    w.run(launch_copy(w.arg(out), w.arg(in)));
    // out[i][j] = i + 1 at base position i + 3j.
    check_equal(w.read_raw(base_out, 6), {1, 2, 3, 1, 2, 3});
  }
  SUBCASE("a view with a storage offset") {
    const Tensor base = w.tensor({6}, iota(6, 10.0f));
    const Tensor in = w.view(base, slice(base.meta, 0, 3, 6));
    const Tensor out = w.tensor({3});
    w.run(launch_copy(w.arg(out), w.arg(in)));
    check_equal(w.read_raw(out, 3), {13, 14, 15});
  }
}

TEST_CASE("add, sub, mul and div with a broadcast operand") {
  World w;
  const Tensor a = w.tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  // b = [0.5, 2, -4] broadcast over rows (stride 0 in dim 0).
  const Tensor b_row = w.tensor({3}, {0.5f, 2.0f, -4.0f});
  const Tensor b = w.view(b_row, expand(b_row.meta, {2, 3}));
  const Tensor out = w.tensor({2, 3});

  w.run(launch_binary(KernelKind::kAdd, w.arg(out), w.arg(a), w.arg(b)));
  check_equal(w.read(out), {1.5f, 4, -1, 4.5f, 7, 2});
  w.run(launch_binary(KernelKind::kSub, w.arg(out), w.arg(a), w.arg(b)));
  check_equal(w.read(out), {0.5f, 0, 7, 3.5f, 3, 10});
  w.run(launch_binary(KernelKind::kMul, w.arg(out), w.arg(a), w.arg(b)));
  check_equal(w.read(out), {0.5f, 4, -12, 2, 10, -24});
  w.run(launch_binary(KernelKind::kDiv, w.arg(out), w.arg(a), w.arg(b)));
  check_equal(w.read(out), {2, 1, -0.75f, 8, 2.5f, -1.5f});
  // Operand order matters: b / a.
  w.run(launch_binary(KernelKind::kDiv, w.arg(out), w.arg(b), w.arg(a)));
  check_equal(w.read(out), {0.5f, 1, -4.0f / 3.0f, 0.125f, 0.4f, -4.0f / 6.0f});

  // A column broadcast (size-1 dim expanded) on the left operand.
  const Tensor c_col = w.tensor({2, 1}, {10, 20});
  const Tensor c = w.view(c_col, expand(c_col.meta, {2, 3}));
  w.run(launch_binary(KernelKind::kSub, w.arg(out), w.arg(c), w.arg(a)));
  check_equal(w.read(out), {9, 8, 7, 16, 15, 14});
}

TEST_CASE("binary ops follow IEEE: division by zero, NaN, subnormals are not flushed") {
  World w;
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float min_normal = std::numeric_limits<float>::min();
  const Tensor a = w.tensor({5}, {1.0f, -1.0f, 0.0f, min_normal, tiny});
  const Tensor b = w.tensor({5}, {0.0f, 0.0f, 0.0f, 0.5f, 1.0f});
  const Tensor out = w.tensor({5});
  w.run(launch_binary(KernelKind::kDiv, w.arg(out), w.arg(a), w.arg(b)));
  const auto q = w.read(out);
  CHECK(q[0] == kInf);
  CHECK(q[1] == -kInf);
  CHECK(std::isnan(q[2]));
  CHECK(q[3] == min_normal * 2.0f);
  CHECK(q[4] == tiny);
  w.run(launch_binary(KernelKind::kMul, w.arg(out), w.arg(a), w.arg(b)));
  const auto p = w.read(out);
  // min_normal * 0.5 is subnormal: kept, not flushed to zero.
  CHECK(p[3] == min_normal / 2.0f);
  CHECK(p[3] != 0.0f);
  CHECK(bits(p[4]) == bits(tiny));
  w.run(launch_binary(KernelKind::kAdd, w.arg(out), w.arg(a), w.arg(a)));
  CHECK(bits(w.read(out)[4]) == bits(2.0f * tiny));
}

TEST_CASE("neg flips the sign bit, of zeros, infinities and NaN too") {
  World w;
  const Tensor in = w.tensor({6}, {1.5f, -2.0f, 0.0f, -0.0f, kInf, kNaN});
  const Tensor out = w.tensor({6});
  w.run(launch_unary(KernelKind::kNeg, w.arg(out), w.arg(in)));
  const auto r = w.read(out);
  CHECK(r[0] == -1.5f);
  CHECK(r[1] == 2.0f);
  CHECK(bits(r[2]) == bits(-0.0f));
  CHECK(bits(r[3]) == bits(0.0f));
  CHECK(r[4] == -kInf);
  CHECK(std::isnan(r[5]));
  CHECK(bits(r[5]) == (bits(kNaN) ^ 0x80000000u));
}

TEST_CASE("relu keeps positives, zeroes negatives, propagates NaN and maps -0 to +0") {
  World w;
  const float tiny = std::numeric_limits<float>::denorm_min();
  const Tensor in = w.tensor({8}, {2.5f, -3.0f, 0.0f, -0.0f, kNaN, -kInf, kInf, tiny});
  const Tensor out = w.tensor({8});
  w.run(launch_unary(KernelKind::kRelu, w.arg(out), w.arg(in)));
  const auto r = w.read(out);
  CHECK(r[0] == 2.5f);
  CHECK(bits(r[1]) == bits(0.0f));
  CHECK(bits(r[2]) == bits(0.0f));
  // The body returns the literal 0.0f for every x that is not > 0: -0 becomes +0.
  CHECK(bits(r[3]) == bits(0.0f));
  // relu(NaN) is NaN, payload kept (clamp_min semantics, as in PyTorch).
  CHECK(bits(r[4]) == bits(kNaN));
  CHECK(bits(r[5]) == bits(0.0f));
  CHECK(r[6] == kInf);
  CHECK(bits(r[7]) == bits(tiny));

  // Through a transposed input view.
  const Tensor base = w.tensor({2, 2}, {-1, 2, 3, -4});
  const Tensor t = w.view(base, as_strided(base.meta, {2, 2}, {1, 2}, 0, 16));
  const Tensor out2 = w.tensor({2, 2});
  w.run(launch_unary(KernelKind::kRelu, w.arg(out2), w.arg(t)));
  check_equal(w.read(out2), {0, 3, 2, 0});
}

TEST_CASE("relu_backward passes grad where result > 0 and gives 0 where result <= 0") {
  World w;
  const Tensor grad = w.tensor({7}, {10, 20, 30, 40, 50, kNaN, 70});
  const Tensor result = w.tensor({7}, {1.0f, 0.0f, -0.0f, -2.0f, kNaN, 0.0f, kInf});
  const Tensor out = w.tensor({7});
  w.run(launch_relu_backward(w.arg(out), w.arg(grad), w.arg(result)));
  const auto r = w.read(out);
  CHECK(r[0] == 10.0f);
  CHECK(bits(r[1]) == bits(0.0f));  // result == 0: zero (threshold is <=)
  CHECK(bits(r[2]) == bits(0.0f));  // result == -0: zero
  CHECK(bits(r[3]) == bits(0.0f));
  CHECK(r[4] == 50.0f);             // NaN <= 0 is false: grad passes
  CHECK(bits(r[5]) == bits(0.0f));  // a NaN grad is dropped where result <= 0
  CHECK(r[6] == 70.0f);

  // Broadcast grad (stride 0).
  const Tensor g1 = w.tensor({1}, {5});
  const Tensor g = w.view(g1, expand(g1.meta, {4}));
  const Tensor res = w.tensor({4}, {1, -1, 2, 0});
  const Tensor out2 = w.tensor({4});
  w.run(launch_relu_backward(w.arg(out2), w.arg(g), w.arg(res)));
  check_equal(w.read(out2), {5, 0, 5, 0});
}

}  // namespace
}  // namespace capsim
