// The body ops that the recorder lowers aten's reductions, scalar arithmetic
// and reshaping views to (div, sum over dims, view, expand): their values,
// computed by the body interpreter through the eager oracle, and their errors.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>

#include "tests/sim/body_test_support.hpp"

namespace capsim {
namespace {

using testing::def_of;
using testing::Device;
using testing::op;

std::vector<float> floats_of(const ElementBits& bits) {
  std::vector<float> out;
  for (std::uint32_t b : bits) out.push_back(std::bit_cast<float>(b));
  return out;
}

// The values of `t`, row-major.
std::vector<float> values_of(Device& d, TensorId t) {
  const Tensor tensor = d.store.tensor(t).value();
  const Address data = d.store.data_address(t).value();
  return floats_of(gather_bits(d.memory, data, tensor.meta).value());
}

// The one output of `def` on `inputs`, or the error's text.
Result<std::vector<float>> run_one(const FunctionDef& def, Device& d,
                                   const std::vector<TensorId>& inputs) {
  EagerOracle oracle;
  CAPSIM_TRY_ASSIGN(const std::vector<ElementBits> outs,
                    oracle.outputs(def, d.store, d.memory, inputs));
  REQUIRE(outs.size() == 1);
  return floats_of(outs[0]);
}

BodyOp with_sizes(BodyOp o, Dims sizes) {
  o.sizes = std::move(sizes);
  return o;
}

BodyOp full(float value) {
  BodyOp o = op(BodyOpKind::kFull, {});
  o.scalar = value;
  return o;
}

BodyOp sum_over(std::vector<std::int64_t> dims, bool keepdim) {
  BodyOp o = op(BodyOpKind::kSum, {0});
  o.dims = std::move(dims);
  o.keepdim = keepdim;
  return o;
}

TEST_CASE("body ops: div broadcasts a 0-d operand, as aten.div.Scalar lowers") {
  Device d;
  const TensorId x = d.tensor({2, 3});
  const auto got = run_one(def_of(1, {full(4.0f), op(BodyOpKind::kDiv, {0, 1})}, {2}), d, {x});
  REQUIRE(got.ok());
  const std::vector<float> in = values_of(d, x);
  REQUIRE(got->size() == in.size());
  for (std::size_t i = 0; i < in.size(); ++i) CHECK((*got)[i] == in[i] / 4.0f);
}

TEST_CASE("body ops: sum over some dims, keepdim or not, and mean as sum then div") {
  Device d;
  const TensorId x = d.tensor({2, 3});
  const std::vector<float> in = values_of(d, x);
  const auto cols = run_one(def_of(1, {sum_over({0}, true)}, {1}), d, {x});
  REQUIRE(cols.ok());
  REQUIRE(cols->size() == 3);
  for (int c = 0; c < 3; ++c) CHECK((*cols)[c] == doctest::Approx(in[c] + in[3 + c]));
  const auto rows = run_one(def_of(1, {sum_over({-1}, false)}, {1}), d, {x});
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  for (int r = 0; r < 2; ++r) {
    CHECK((*rows)[r] == doctest::Approx(in[3 * r] + in[3 * r + 1] + in[3 * r + 2]));
  }
  // mean(x): aten.mean.default as the recorder writes it.
  const auto mean =
      run_one(def_of(1, {op(BodyOpKind::kSum, {0}), full(6.0f), op(BodyOpKind::kDiv, {1, 2})}, {3}),
              d, {x});
  REQUIRE(mean.ok());
  float total = 0.0f;
  for (float v : in) total += v;
  CHECK(mean->at(0) == doctest::Approx(total / 6.0f));
  CHECK(run_one(def_of(1, {sum_over({2}, false)}, {1}), d, {x}).error().message ==
        "function 'f': op 0 (sum): sum: dim 2 is out of range for rank 2");
  CHECK(run_one(def_of(1, {sum_over({1, -1}, false)}, {1}), d, {x}).error().message ==
        "function 'f': op 0 (sum): sum: dim 1 appears twice");
}

TEST_CASE("body ops: view keeps the elements in order; a non-contiguous operand is refused") {
  Device d;
  const TensorId x = d.tensor({2, 3});
  const auto viewed =
      run_one(def_of(1, {with_sizes(op(BodyOpKind::kView, {0}), {3, 2})}, {1}), d, {x});
  REQUIRE(viewed.ok());
  CHECK(*viewed == values_of(d, x));
  const FunctionDef of_t = def_of(
      1, {op(BodyOpKind::kTranspose, {0}), with_sizes(op(BodyOpKind::kView, {1}), {6})}, {2});
  CHECK(run_one(of_t, d, {x}).error().message ==
        "function 'f': op 1 (view): view: the operand (sizes [3, 2], strides [1, 3]) is not "
        "contiguous");
  CHECK(run_one(def_of(1, {with_sizes(op(BodyOpKind::kView, {0}), {4})}, {1}), d, {x})
            .error()
            .message ==
        "function 'f': op 0 (view): view: shape [4] is invalid for input of size 6");
}

TEST_CASE("body ops: expand repeats size-1 dims, within the limit of a fresh tensor") {
  Device d;
  const TensorId row = d.tensor({1, 3});
  const FunctionDef f = def_of(
      1, {with_sizes(op(BodyOpKind::kExpand, {0}), {2, 3}), op(BodyOpKind::kClone, {1})}, {2});
  const auto got = run_one(f, d, {row});
  REQUIRE(got.ok());
  std::vector<float> twice = values_of(d, row);
  twice.insert(twice.end(), twice.begin(), twice.end());
  CHECK(*got == twice);
  const FunctionDef huge =
      def_of(1, {with_sizes(op(BodyOpKind::kExpand, {0}), {std::int64_t{1} << 23, 3})}, {1});
  CHECK(run_one(huge, d, {row}).error().message.find("the limit for one tensor") !=
        std::string::npos);
}

TEST_CASE("body ops: an in-place write through a view or an expand mutates the input") {
  const FunctionDef f = def_of(
      2, {with_sizes(op(BodyOpKind::kView, {0}), {6}), op(BodyOpKind::kAddInplace, {2, 1})}, {3});
  CHECK(mutated_input_idxs(f) == std::vector<std::uint32_t>{0});
  const FunctionDef g = def_of(
      2, {with_sizes(op(BodyOpKind::kExpand, {1}), {6}), op(BodyOpKind::kCopyInplace, {2, 0})},
      {3});
  CHECK(mutated_input_idxs(g) == std::vector<std::uint32_t>{1});
}

BodyOp strided(Dims sizes, Dims strides, std::int64_t offset) {
  BodyOp o = op(BodyOpKind::kAsStrided, {0});
  o.sizes = std::move(sizes);
  o.strides = std::move(strides);
  o.storage_offset = offset;
  return o;
}

// permute, select, a slice off dim 0, a split's part: each is as_strided of
// its operand's storage with the node's own geometry, launching nothing.
TEST_CASE("body ops: as_strided views its operand's storage; past the storage is refused") {
  Device d;
  const TensorId x = d.tensor({2, 3});
  const std::vector<float> in = values_of(d, x);
  // x.permute(1, 0)[1:]: sizes [2, 2], strides [1, 3], offset 1.
  const FunctionDef f = def_of(1, {strided({2, 2}, {1, 3}, 1), op(BodyOpKind::kClone, {1})}, {2});
  const auto got = run_one(f, d, {x});
  REQUIRE(got.ok());
  CHECK(*got == std::vector<float>{in[1], in[4], in[2], in[5]});
  const FunctionDef past = def_of(1, {strided({2, 3}, {3, 1}, 1)}, {1});
  CHECK_FALSE(run_one(past, d, {x}).ok());
  FunctionDef bad = def_of(1, {strided({2, 3}, {3}, 0)}, {1});
  CHECK(validate(bad).error().message ==
        "function 'f': op 0 (as_strided): sizes and strides must have the same rank, at most 8");
  const FunctionDef g = def_of(2, {strided({3}, {1}, 0), op(BodyOpKind::kAddInplace, {2, 1})}, {3});
  CHECK(mutated_input_idxs(g) == std::vector<std::uint32_t>{0});
}

// log_softmax as Inductor decomposes it: x - amax, exp, sum, log, subtract.
TEST_CASE("body ops: amax, exp and log compute a log-softmax row by row") {
  Device d;
  const TensorId x = d.tensor({2, 3});
  const std::vector<float> in = values_of(d, x);
  BodyOp amax = op(BodyOpKind::kAmax, {0});
  amax.dims = std::vector<std::int64_t>{1};
  amax.keepdim = true;
  BodyOp sum = op(BodyOpKind::kSum, {3});
  sum.dims = std::vector<std::int64_t>{1};
  sum.keepdim = true;
  const FunctionDef f = def_of(1,
                               {amax, op(BodyOpKind::kSub, {0, 1}), op(BodyOpKind::kExp, {2}), sum,
                                op(BodyOpKind::kLog, {4}), op(BodyOpKind::kSub, {2, 5})},
                               {6});
  const auto got = run_one(f, d, {x});
  REQUIRE(got.ok());
  for (int r = 0; r < 2; ++r) {
    double total = 0;
    for (int c = 0; c < 3; ++c) total += std::exp(static_cast<double>(in[3 * r + c]));
    for (int c = 0; c < 3; ++c) {
      CHECK((*got)[3 * r + c] == doctest::Approx(in[3 * r + c] - std::log(total)).epsilon(1e-5));
    }
  }
  BodyOp dims_on_exp = op(BodyOpKind::kExp, {0});
  dims_on_exp.dims = std::vector<std::int64_t>{0};
  CHECK_FALSE(validate(def_of(1, {dims_on_exp}, {1})).ok());
}

// PyTorch: torch.zeros(1).expand(4).add_(1) raises "unsupported operation:
// more than one element of the written-to tensor refers to a single memory
// location. Please clone() the tensor before performing the operation."
// (assert_no_internal_overlap; test/test_torch.py's check_internal_mem_overlap).
TEST_CASE("values: an in-place write into an expand is PyTorch's RuntimeError") {
  Device d;
  const TensorId x = d.tensor({1});
  const TensorId y = d.tensor({4});
  for (const BodyOpKind kind : {BodyOpKind::kAddInplace, BodyOpKind::kCopyInplace}) {
    const auto got =
        run_one(def_of(2, {with_sizes(op(BodyOpKind::kExpand, {0}), {4}), op(kind, {2, 1})}, {3}),
                d, {x, y});
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().message.find(std::string(kInternalOverlapMessage)) != std::string::npos);
  }
  // A size-1 dim of stride 0 shares nothing, and neither does no element.
  const auto one = run_one(
      def_of(2,
             {with_sizes(op(BodyOpKind::kExpand, {0}), {1}), op(BodyOpKind::kAddInplace, {2, 0})},
             {3}),
      d, {x, x});
  CHECK(one.ok());
  const auto meta = [](Dims sizes, Dims strides) {
    TensorMeta m;
    m.sizes = std::move(sizes);
    m.strides = std::move(strides);
    return m;
  };
  CHECK_FALSE(has_internal_overlap(meta({4, 0}, {0, 1})));
  CHECK(has_internal_overlap(meta({2, 3}, {0, 1})));
  CHECK_FALSE(has_internal_overlap(meta({2, 3}, {3, 1})));
}

// PyTorch: torch.empty(0, 3).amax(0) raises IndexError "amax(): Expected
// reduction dim 0 to have non-zero size." and amax over no dims of an empty
// tensor "amax(): Expected reduction dim to be specified for input.numel() ==
// 0. ..."; amax(1) of the same tensor is an empty result (ReduceOpsUtils.h,
// zero_numel_check_dims; test/test_reductions.py test_empty_tensor_empty_slice).
TEST_CASE("values: amax over an empty dim raises as PyTorch does; its errors name amax") {
  Device d;
  const TensorId x = d.tensor({0, 3});
  BodyOp over0 = op(BodyOpKind::kAmax, {0});
  over0.dims = std::vector<std::int64_t>{0};
  const auto got = run_one(def_of(1, {over0}, {1}), d, {x});
  REQUIRE_FALSE(got.ok());
  CHECK(got.error().message.find("amax(): Expected reduction dim 0 to have non-zero size.") !=
        std::string::npos);
  const auto all = run_one(def_of(1, {op(BodyOpKind::kAmax, {0})}, {1}), d, {x});
  REQUIRE_FALSE(all.ok());
  CHECK(all.error().message.find("amax(): Expected reduction dim to be specified for "
                                 "input.numel() == 0.") != std::string::npos);
  BodyOp over1 = op(BodyOpKind::kAmax, {0});
  over1.dims = std::vector<std::int64_t>{1};
  const auto empty = run_one(def_of(1, {over1}, {1}), d, {x});
  REQUIRE(empty.ok());
  CHECK(empty->empty());
  const TensorId y = d.tensor({2, 3});
  BodyOp far = op(BodyOpKind::kAmax, {0});
  far.dims = std::vector<std::int64_t>{5};
  CHECK(run_one(def_of(1, {far}, {1}), d, {y}).error().message ==
        "function 'f': op 0 (amax): amax: dim 5 is out of range for rank 2");
}

}  // namespace
}  // namespace capsim
