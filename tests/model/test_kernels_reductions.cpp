// Kernels that reduce: sum over dims, sum_to_size and mm, with known values, a
// fixed row-major order, and bitwise reproducibility across independent worlds.
#include "tests/model/kernel_test_world.hpp"

namespace capsim {
namespace {
using namespace kernel_test;

TEST_CASE("sum over one dim, several dims and all dims, keepdim or not") {
  World w;
  // in[a][b][c] = 12a + 4b + c.
  const Tensor in = w.tensor({2, 3, 4}, iota(24));

  SUBCASE("one dim, not keepdim") {
    // out[a][c] = 36a + 12 + 3c.
    const Tensor out = w.tensor({2, 4});
    w.run(launch_sum(w.arg(out), w.arg(in), {1}));
    check_equal(w.read(out), {12, 15, 18, 21, 48, 51, 54, 57});
  }
  SUBCASE("one dim, keepdim") {
    const Tensor out = w.tensor({2, 1, 4});
    w.run(launch_sum(w.arg(out), w.arg(in), {-2}));
    check_equal(w.read(out), {12, 15, 18, 21, 48, 51, 54, 57});
  }
  SUBCASE("last dim") {
    // out[a][b] = 4(12a + 4b) + 6.
    const Tensor out = w.tensor({2, 3});
    w.run(launch_sum(w.arg(out), w.arg(in), {2}));
    check_equal(w.read(out), {6, 22, 38, 54, 70, 86});
  }
  SUBCASE("several dims, not keepdim, in any order and with negative dims") {
    // out[b] = 60 + 32b.
    const Tensor out = w.tensor({3});
    w.run(launch_sum(w.arg(out), w.arg(in), {2, 0}));
    check_equal(w.read(out), {60, 92, 124});
    const Tensor out2 = w.tensor({3});
    w.run(launch_sum(w.arg(out2), w.arg(in), {-1, -3}));
    check_equal(w.read(out2), {60, 92, 124});
  }
  SUBCASE("several dims, keepdim") {
    const Tensor out = w.tensor({1, 3, 1});
    w.run(launch_sum(w.arg(out), w.arg(in), {0, 2}));
    check_equal(w.read(out), {60, 92, 124});
  }
  SUBCASE("all dims into a 0-d tensor") {
    const Tensor out = w.tensor({});
    w.run(launch_sum(w.arg(out), w.arg(in), {0, 1, 2}));
    check_equal(w.read(out), {276});
  }
  SUBCASE("a transposed input and a strided output") {
    // in[:, 0, :] transposed: in_t[c][a] = 12a + c, sizes [4, 2], strides
    // [1, 12]. Summing dim 1 (a) gives out[c] = 12 + 2c, written every other float.
    const Tensor in_t = w.view(in, as_strided(in.meta, {4, 2}, {1, 12}, 0, 96));
    const Tensor base_out = w.tensor({8});
    const Tensor out = w.view(base_out, slice(base_out.meta, 0, 0, 8, 2));
    w.run(launch_sum(w.arg(out), w.arg(in_t), {1}));
    const float s = kSentinel;
    check_equal(w.read_raw(base_out, 8), {12, s, 14, s, 16, s, 18, s});
  }
  SUBCASE("no dims: every element is its own sum") {
    const Tensor out = w.tensor({2, 3, 4});
    w.run(launch_sum(w.arg(out), w.arg(in), {}));
    check_equal(w.read(out), iota(24));
  }
}

TEST_CASE("sum over an empty dim gives +0, and reduces in row-major order from +0") {
  World w;
  SUBCASE("an empty reduced dim") {
    const Tensor in = w.tensor({2, 0});
    const Tensor out = w.tensor({2});  // sentinel-filled: must be overwritten
    w.run(launch_sum(w.arg(out), w.arg(in), {1}));
    check_equal(w.read(out), {0, 0});
    const Tensor in1 = w.tensor({0});
    const Tensor out1 = w.tensor({});
    w.run(launch_sum(w.arg(out1), w.arg(in1), {0}));
    check_equal(w.read(out1), {0.0f});
  }
  SUBCASE("an empty kept dim launches nothing") {
    const Tensor in = w.tensor({0, 3});
    const Tensor out = w.tensor({0});
    auto launch = launch_sum(w.arg(out), w.arg(in), {1});
    require_ok(launch);
    CHECK(grid_size(*launch) == 0);
    w.run(launch);
  }
  SUBCASE("the accumulator starts at +0: a sum of -0 is +0") {
    const Tensor in = w.tensor({2}, {-0.0f, -0.0f});
    const Tensor out = w.tensor({});
    w.run(launch_sum(w.arg(out), w.arg(in), {0}));
    CHECK(bits(w.read(out)[0]) == bits(0.0f));
  }
  SUBCASE("inputs are added in row-major order of the reduced dims") {
    // Row-major: ((0 + 1e8) + 1) - 1e8 = 0 in float; any other order that adds
    // -1e8 before the 1 gives 1.
    const Tensor in = w.tensor({3}, {1e8f, 1.0f, -1e8f});
    const Tensor out = w.tensor({});
    w.run(launch_sum(w.arg(out), w.arg(in), {0}));
    CHECK(w.read(out)[0] == 0.0f);
    // Two reduced dims: in[i][j] over j fastest. [[1e8, 1], [-1e8, 1]]: row-major
    // gives ((1e8 + 1) - 1e8) + 1 = 1; column-major would give 2.
    const Tensor in2 = w.tensor({2, 2}, {1e8f, 1.0f, -1e8f, 1.0f});
    w.run(launch_sum(w.arg(out), w.arg(in2), {0, 1}));
    CHECK(w.read(out)[0] == 1.0f);
  }
}

TEST_CASE("sum_to_size sums leading dims and dims broadcast from 1") {
  World w;
  const Tensor in = w.tensor({2, 3, 4}, iota(24));
  SUBCASE("[2,3,4] -> [3,1]") {
    const Tensor out = w.tensor({3, 1});
    w.run(launch_sum_to_size(w.arg(out), w.arg(in)));
    check_equal(w.read(out), {60, 92, 124});
  }
  SUBCASE("[2,3,4] -> [4]") {
    const Tensor out = w.tensor({4});
    w.run(launch_sum_to_size(w.arg(out), w.arg(in)));
    check_equal(w.read(out), {60, 66, 72, 78});
  }
  SUBCASE("[2,3,4] -> [1]") {
    const Tensor out = w.tensor({1});
    w.run(launch_sum_to_size(w.arg(out), w.arg(in)));
    check_equal(w.read(out), {276});
  }
  SUBCASE("[2,3,4] -> [1,3,1]") {
    const Tensor out = w.tensor({1, 3, 1});
    w.run(launch_sum_to_size(w.arg(out), w.arg(in)));
    check_equal(w.read(out), {60, 92, 124});
  }
  SUBCASE("[2,3,4] -> [2,1,4]") {
    const Tensor out = w.tensor({2, 1, 4});
    w.run(launch_sum_to_size(w.arg(out), w.arg(in)));
    check_equal(w.read(out), {12, 15, 18, 21, 48, 51, 54, 57});
  }
  SUBCASE("[2,3,4] -> [2,3,4] copies") {
    const Tensor out = w.tensor({2, 3, 4});
    w.run(launch_sum_to_size(w.arg(out), w.arg(in)));
    check_equal(w.read(out), iota(24));
  }
  SUBCASE("[2,3,4] -> [] sums everything") {
    const Tensor out = w.tensor({});
    w.run(launch_sum_to_size(w.arg(out), w.arg(in)));
    check_equal(w.read(out), {276});
  }
}

TEST_CASE("mm: a known product, transposed operands, a strided out and K = 0") {
  World w;
  // [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
  const std::vector<float> want = {58, 64, 139, 154};
  const Tensor a = w.tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = w.tensor({3, 2}, {7, 8, 9, 10, 11, 12});

  SUBCASE("contiguous") {
    const Tensor out = w.tensor({2, 2});
    w.run(launch_mm(w.arg(out), w.arg(a), w.arg(b)));
    check_equal(w.read(out), want);
  }
  SUBCASE("b given as the transpose of its transpose") {
    const Tensor bt = w.tensor({2, 3}, {7, 9, 11, 8, 10, 12});
    const Tensor b_view = w.view(bt, as_strided(bt.meta, {3, 2}, {1, 3}, 0, 24));
    const Tensor out = w.tensor({2, 2});
    w.run(launch_mm(w.arg(out), w.arg(a), w.arg(b_view)));
    check_equal(w.read(out), want);
  }
  SUBCASE("a transposed, out transposed") {
    const Tensor at = w.tensor({3, 2}, {1, 4, 2, 5, 3, 6});
    const Tensor a_view = w.view(at, as_strided(at.meta, {2, 3}, {1, 2}, 0, 24));
    const Tensor base_out = w.tensor({2, 2});
    const Tensor out = w.view(base_out, as_strided(base_out.meta, {2, 2}, {1, 2}, 0, 16));
    w.run(launch_mm(w.arg(out), w.arg(a_view), w.arg(b)));
    check_equal(w.read(out), want);
    check_equal(w.read_raw(base_out, 4), {58, 139, 64, 154});
  }
  SUBCASE("a non-square product") {
    // [3,1] @ [1,4]: an outer product.
    const Tensor u = w.tensor({3, 1}, {1, 2, 3});
    const Tensor v = w.tensor({1, 4}, {1, -1, 0.5f, 4});
    const Tensor out = w.tensor({3, 4});
    w.run(launch_mm(w.arg(out), w.arg(u), w.arg(v)));
    check_equal(w.read(out), {1, -1, 0.5f, 4, 2, -2, 1, 8, 3, -3, 1.5f, 12});
  }
  SUBCASE("k runs in ascending order") {
    // Ascending: ((0 + 1) + 1e8) - 1e8 = 0 in float; descending gives 1.
    const Tensor row = w.tensor({1, 3}, {1.0f, 1e8f, -1e8f});
    const Tensor ones = w.tensor({3, 1}, {1.0f, 1.0f, 1.0f});
    const Tensor out = w.tensor({1, 1});
    w.run(launch_mm(w.arg(out), w.arg(row), w.arg(ones)));
    CHECK(w.read(out)[0] == 0.0f);
  }
  SUBCASE("K = 0 gives zeros") {
    const Tensor a0 = w.tensor({2, 0});
    const Tensor b0 = w.tensor({0, 3});
    const Tensor out = w.tensor({2, 3});
    w.run(launch_mm(w.arg(out), w.arg(a0), w.arg(b0)));
    check_equal(w.read(out), {0, 0, 0, 0, 0, 0});
  }
}

// --- Bitwise reproducibility --------------------------------------------------

// Runs mm, sum and 3 Adam steps on fresh tensors in `w` and returns the bytes of
// every result. `shift` allocates that many floats first, so that the second
// world puts every tensor at a different address.
std::vector<std::vector<float>> run_reproducible_workload(World& w, std::int64_t shift) {
  if (shift > 0) (void)w.tensor({shift});
  std::vector<std::vector<float>> results;
  Lcg rng(12345u);
  // mm 17x33 @ (9x33)^T.
  const Tensor a = w.tensor({17, 33}, rng.floats(17 * 33, -2.0f, 2.0f));
  const Tensor bt = w.tensor({9, 33}, rng.floats(9 * 33, -2.0f, 2.0f));
  const Tensor b = w.view(bt, as_strided(bt.meta, {33, 9}, {1, 33}, 0, 9 * 33 * 4));
  const Tensor mm_out = w.tensor({17, 9});
  w.run(launch_mm(w.arg(mm_out), w.arg(a), w.arg(b)));
  results.push_back(w.read(mm_out));
  // sum over dims {0, 2} of [5, 7, 11].
  const Tensor in = w.tensor({5, 7, 11}, rng.floats(5 * 7 * 11, -100.0f, 100.0f));
  const Tensor sum_out = w.tensor({7});
  w.run(launch_sum(w.arg(sum_out), w.arg(in), {0, 2}));
  results.push_back(w.read(sum_out));
  // Adam, 3 steps over 300 elements.
  constexpr std::int64_t kN = 300;
  AdamHyper hyper;
  hyper.weight_decay = 0.01f;
  const Tensor param = w.tensor({kN}, rng.floats(kN, -1.0f, 1.0f));
  const Tensor grad = w.tensor({kN});
  const Tensor m = w.tensor({kN}, std::vector<float>(kN, 0.0f));
  const Tensor v = w.tensor({kN}, std::vector<float>(kN, 0.0f));
  const Tensor state = w.tensor({2}, {1.0f, 1.0f});
  for (int step = 0; step < 3; ++step) {
    w.write_raw(grad, rng.floats(kN, -1.0f, 1.0f));
    w.run(launch_adam_powers(w.arg(state), hyper));
    w.run(launch_adam(KernelKind::kAdam, w.arg(param), w.arg(grad), w.arg(m), w.arg(v),
                      w.arg(state), hyper));
  }
  for (const Tensor* t : {&param, &m, &v, &state}) results.push_back(w.read(*t));
  results.push_back({static_cast<float>(w.address(mm_out) % 65536)});  // for the shift check
  return results;
}

TEST_CASE("mm, sum and adam are bitwise identical across independent worlds") {
  World first;
  World second;
  const auto r1 = run_reproducible_workload(first, 0);
  const auto r2 = run_reproducible_workload(second, 1000);
  REQUIRE(r1.size() == r2.size());
  // The second world really put its tensors elsewhere.
  CHECK(r1.back()[0] != r2.back()[0]);
  const char* names[] = {"mm",        "sum", "adam param", "adam exp_avg", "adam exp_avg_sq",
                         "adam state"};
  for (std::size_t k = 0; k + 1 < r1.size(); ++k) {
    CAPTURE(names[k]);
    REQUIRE(r1[k].size() == r2[k].size());
    CHECK(std::memcmp(r1[k].data(), r2[k].data(), r1[k].size() * sizeof(float)) == 0);
    // Not vacuous: the results are not all zero.
    CHECK(std::any_of(r1[k].begin(), r1[k].end(), [](float f) { return f != 0.0f; }));
  }
  // And a third run in a world that is reused keeps giving the same bytes.
  const auto r3 = run_reproducible_workload(first, 0);
  for (std::size_t k = 0; k + 1 < r1.size(); ++k) {
    CHECK(std::memcmp(r1[k].data(), r3[k].data(), r1[k].size() * sizeof(float)) == 0);
  }
}

TEST_CASE("sum of a 0-d tensor accepts dim 0 and -1, as PyTorch does, and copies it") {
  World w;
  const Tensor in = w.tensor({}, {3.5f});
  const Tensor out = w.tensor({});
  w.run(launch_sum(w.arg(out), w.arg(in), {0}));
  check_equal(w.read(out), {3.5f});
  w.run(launch_sum(w.arg(out), w.arg(in), {-1}));
  check_equal(w.read(out), {3.5f});
  check_error(launch_sum(w.arg(out), w.arg(in), {1}), {"dim 1 is out of range for rank 0"});
  check_error(launch_sum(w.arg(out), w.arg(in), {0, -1}), {"dim 0 appears twice"});
}

}  // namespace
}  // namespace capsim
