// Generic ops (docs/trace-format.md §4.1): what they allocate, view and
// write is exact, and their values are a fixed function of the op and of
// every byte they read, so a stale input shows in their outputs.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>

#include "model/kernel_launch.hpp"
#include "model/kernel_table.hpp"
#include "sim/core/generic_op.hpp"
#include "sim/world/world.hpp"
#include "tests/sim/body_test_support.hpp"

namespace capsim {
namespace {

using testing::def_of;
using testing::Device;
using testing::op;

TensorMeta meta_of(Dims sizes, DType dtype = DType::kFloat32) {
  TensorMeta m = contiguous_meta(sizes, dtype).value();
  return m;
}

BodyOp generic(std::string target, std::vector<ValueIndex> args,
               std::vector<std::optional<TensorMeta>> results) {
  BodyOp o = op(BodyOpKind::kGeneric, std::move(args));
  o.generic.target = std::move(target);
  o.generic.results = std::move(results);
  return o;
}

BodyOp getitem(ValueIndex tuple, std::uint32_t index) {
  BodyOp o = op(BodyOpKind::kGetItem, {tuple});
  o.index = index;
  return o;
}

std::vector<ElementBits> run(const FunctionDef& def, Device& d,
                             const std::vector<TensorId>& inputs) {
  REQUIRE(validate(def).ok());
  EagerOracle oracle;
  auto outs = oracle.outputs(def, d.store, d.memory, inputs);
  REQUIRE_MESSAGE(outs.ok(), (outs.ok() ? "" : outs.error().message));
  return *outs;
}

void set_element(Device& d, TensorId t, std::int64_t i, float value) {
  const Address a = d.store.data_address(t).value() + static_cast<Address>(i) * 4;
  REQUIRE(d.memory.write(a, std::as_bytes(std::span(&value, 1))).ok());
}

TEST_CASE(
    "generic op: the same bytes give the same values, any changed input element changes them") {
  Device d;
  const TensorId x = d.tensor({6});
  const TensorId w = d.tensor({2, 3});
  // A reduction-like result smaller than one input and larger than the other.
  const FunctionDef def = def_of(2, {generic("aten.fake.default", {0, 1}, {meta_of({4})})}, {2});
  const auto first = run(def, d, {x, w});
  CHECK(run(def, d, {x, w}) == first);
  for (std::int64_t i = 0; i < 6; ++i) {
    Device e;
    const TensorId x2 = e.tensor({6});
    const TensorId w2 = e.tensor({2, 3});
    CHECK(run(def, e, {x2, w2}) == first);  // the same seed draws the same inputs
    set_element(e, i % 2 == 0 ? x2 : w2, i, 123.0f);
    CHECK(run(def, e, {x2, w2}) != first);
  }
}

TEST_CASE("generic op: every baked pointer lies in memory, the unused operands' too") {
  // A launch bakes every pointer of its signature. An operand slot the op does
  // not use reads nothing, but its pointer is still baked, translated to a
  // device address and checked against the segments (the host and CUDA
  // backends): pointing it at 0 made every generic op with fewer than the
  // most inputs fail there (found by reference.agrees on generated programs).
  const TensorArg out{0x7f0000000000, meta_of({4})};
  const TensorArg in{0x7f0000000200, meta_of({4})};
  const std::vector<TensorArg> inputs{in};
  const KernelLaunch k = launch_generic_mix(out, inputs, 1, true).value();
  const KernelSignature& sig = signature(KernelKind::kGenericMix);
  REQUIRE(sig.num_pointers > 2);
  CHECK(pointer_extent(k, 1).base == in.address);
  for (int p = 2; p < sig.num_pointers; ++p) {
    CAPTURE(p);
    CHECK(pointer_extent(k, p).base == out.address);
    CHECK(pointer_extent(k, p).bytes == 0);
  }
}

TEST_CASE("generic op: target and attrs select the values; floats stay finite") {
  Device d;
  const TensorId x = d.tensor({5});
  FunctionDef def = def_of(1, {generic("aten.a.default", {0}, {meta_of({5})})}, {1});
  const auto a = run(def, d, {x});
  def.ops[0].generic.attrs = "dim=1";
  const auto b = run(def, d, {x});
  CHECK(a != b);
  for (const std::uint32_t bits : b[0]) {
    const float f = std::bit_cast<float>(bits);
    CHECK(std::isfinite(f));
    CHECK(std::abs(f) >= 0.5f);
    CHECK(std::abs(f) < 1.0f);
  }
}

TEST_CASE("generic op: results of every dtype take their real bytes; getitem picks one") {
  Device d;
  const TensorId x = d.tensor({4});
  BodyOp g = generic("aten.many.default", {0},
                     {meta_of({4}, DType::kBool), std::nullopt, meta_of({4}, DType::kFloat64),
                      meta_of({3}, DType::kInt64)});
  const FunctionDef def = def_of(1, {g, getitem(1, 0), getitem(1, 2), getitem(1, 3)}, {2, 3, 4});
  const auto outs = run(def, d, {x});
  REQUIRE(outs.size() == 3);
  CHECK(outs[0].size() == 4);  // bool: one word per element, 0 or 1
  for (const std::uint32_t v : outs[0]) CHECK(v <= 1u);
  CHECK(outs[1].size() == 8);  // float64: two words per element
  CHECK(outs[2].size() == 6);
  // A tuple is used through getitem only, at a tensor.
  CHECK_FALSE(validate(def_of(1, {g}, {1})).ok());
  CHECK_FALSE(validate(def_of(1, {g, getitem(1, 1)}, {2})).ok());
  CHECK_FALSE(validate(def_of(1, {g, op(BodyOpKind::kNeg, {1})}, {2})).ok());
}

TEST_CASE("generic op: a view result launches nothing and a write mutates its input") {
  Device d;
  const TensorId x = d.tensor({2, 3});
  TensorMeta permuted = meta_of({3, 2});
  permuted.strides = {1, 3};
  BodyOp view = generic("aten.permute.default", {0}, {permuted});
  view.generic.attrs = "[1, 0]";
  view.generic.views = {0};
  BodyOp write = generic("aten.fake_.default", {0}, {meta_of({2, 3})});
  write.generic.views = {0};
  write.generic.writes = {0};
  const FunctionDef def = def_of(1, {view, write}, {1, 2});
  CHECK(mutated_input_idxs(def) == std::vector<std::uint32_t>{0});
  CHECK(mutated_input_idxs(def_of(1, {view}, {1})).empty());
  const auto before = run(def_of(1, {view}, {1}), d, {x});
  const auto outs = run(def, d, {x});
  // The view was taken before the write, over the same storage: it shows the
  // written values, permuted.
  CHECK(outs[0] != before[0]);
  CHECK(outs[0][1] == outs[1][3]);  // [0][1] of the permute is [1][0] of x
}

TEST_CASE("generic op: bad fields are refused with the field named") {
  BodyOp g = generic("aten.x.default", {0}, {meta_of({2})});
  g.generic.views = {1};
  CHECK(validate_generic(g).error().message.find("views[0]") != std::string::npos);
  g.generic.views.clear();
  g.generic.writes = {0, 0};
  CHECK(validate_generic(g).error().message.find("writes[1]") != std::string::npos);
  g.generic.writes.clear();
  g.generic.target.clear();
  CHECK(validate_generic(g).error().message.find("target") != std::string::npos);
  g.generic.target = "t";
  TensorMeta huge;  // over the shape limit, which meta_of would refuse to build
  huge.sizes = {std::int64_t{1} << 41};
  huge.strides = {1};
  g.generic.results = {huge};
  CHECK(validate_generic(g).error().message.find("results[0]") != std::string::npos);
}

TEST_CASE("generic op: an op over the read limit is mixed from its metadata alone") {
  // 17 reads of 2^23 elements pass kMaxGenericReads (2^27): the op runs, and
  // its value no longer depends on its operand; one read less depends on it.
  const auto value = [](std::size_t reads, float first) {
    Device d;
    const TensorId x = d.tensor({1 << 11, 1 << 12});
    set_element(d, x, 0, first);
    std::vector<ValueIndex> args(reads, 0);
    return run(def_of(1, {generic("aten.big.default", args, {meta_of({1})})}, {1}), d, {x});
  };
  CHECK(value(17, 1.0f) == value(17, 2.0f));
  CHECK(value(16, 1.0f) != value(16, 2.0f));
}

// Whether every single-element change of any operand changes generic_mix's
// output, for an output of n and operands of the given sizes; `mix` runs
// the kernel body (or a broken one).
using MixFn = void (*)(unsigned char*, const kernels::Geometry&, const unsigned char* const*,
                       const kernels::Geometry*, int);
bool every_input_reaches_output(MixFn mix, std::int64_t n, std::vector<std::int64_t> sizes) {
  const auto flat = [](std::int64_t count) {
    kernels::Geometry g;
    g.rank = 1;
    g.sizes[0] = count;
    g.strides[0] = 1;
    return g;
  };
  std::vector<std::vector<float>> ins;
  for (const std::int64_t m : sizes) {
    std::vector<float> v(static_cast<std::size_t>(m));
    for (std::int64_t e = 0; e < m; ++e) v[e] = static_cast<float>(e) * 0.25f;
    ins.push_back(std::move(v));
  }
  std::vector<kernels::Geometry> geoms;
  for (const std::int64_t m : sizes) geoms.push_back(flat(m));
  const auto run_once = [&] {
    std::vector<float> out(static_cast<std::size_t>(n));
    std::vector<const unsigned char*> ptrs;
    for (const auto& v : ins) ptrs.push_back(reinterpret_cast<const unsigned char*>(v.data()));
    mix(reinterpret_cast<unsigned char*>(out.data()), flat(n), ptrs.data(), geoms.data(),
        static_cast<int>(ins.size()));
    return out;
  };
  const auto base = run_once();
  for (auto& v : ins) {
    for (float& x : v) {
      const float kept = x;
      x = kept + 1.0f;
      const bool changed = run_once() != base;
      x = kept;
      if (!changed) return false;
    }
  }
  return true;
}

void real_mix(unsigned char* out, const kernels::Geometry& g, const unsigned char* const* in,
              const kernels::Geometry* gi, int count) {
  kernels::generic_mix_run(out, g, in, gi, count, 42, kernels::MixStore::kFloat32, true);
}
// The negative control: a kernel that forgets its last operand.
void forgetful_mix(unsigned char* out, const kernels::Geometry& g, const unsigned char* const* in,
                   const kernels::Geometry* gi, int count) {
  kernels::generic_mix_run(out, g, in, gi, count - 1, 42, kernels::MixStore::kFloat32, true);
}

TEST_CASE("generic_mix: every operand element reaches the output; a forgetful kernel is caught") {
  for (const std::int64_t n : {1, 3, 8}) {
    for (const auto& sizes : std::vector<std::vector<std::int64_t>>{{1, 5}, {8, 3}, {2, 9, 4}}) {
      CAPTURE(n);
      CHECK(every_input_reaches_output(real_mix, n, sizes));
      CHECK_FALSE(every_input_reaches_output(forgetful_mix, n, sizes));
    }
  }
}

// A non-static float64 input is copied into a placeholder of its own dtype
// (the recording's empty_strided), 8 bytes an element: a float32 placeholder
// of the same element count was half its size (nanoGPT's and the LSTM's
// traces under explain --as-on-a-gpu).
TEST_CASE("generic op: a copied float64 input gets a float64 placeholder") {
  Program p;
  p.functions.push_back(
      def_of(1, {generic("aten.neg.default", {0}, {meta_of({5, 4}, DType::kFloat64)})}, {1}));
  p.functions.back().mode = CompilationMode::kInference;
  for (int step = 0; step < 3; ++step) {
    p.actions.push_back(NewTensor{.name = "x", .sizes = {5, 4}, .dtype = DType::kFloat64});
    p.actions.push_back(Call{"f", {"x"}, {"y"}, {}, std::nullopt, {}});
    p.actions.push_back(Del{"y"});
  }
  WorldOptions options;
  options.config.cudagraphs = true;
  World w(options);
  const Status s = w.run(p);
  REQUIRE_MESSAGE(s.ok(), s.error().message);
  std::int64_t copies = 0;
  for (const Event& e : w.events()) {
    if (e.kind != EventKind::kCopyIn) continue;
    ++copies;
    CHECK(e.get<std::int64_t>(F::bytes) == 5 * 4 * 8);
  }
  CHECK(copies >= 1);
}

}  // namespace
}  // namespace capsim
