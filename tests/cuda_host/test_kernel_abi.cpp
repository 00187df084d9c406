// The kernel ABI table (cuda_reference/kernel_abi.hpp), without a GPU: its
// layout follows the C ABI, every pointer of a kernel's signature appears
// once, check_param_info catches a drifted kernel, and a launch encoded into
// kernel-node parameters decodes back to the same launch.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "cuda_reference/kernel_abi.hpp"
#include "model/kernel_launch.hpp"

namespace capsim::cuda {
namespace {

TensorArg arg(Address address, const Dims& sizes) {
  return {address, contiguous_meta(sizes).value()};
}

// Device addresses stand for simulated ones at a fixed distance.
constexpr std::uint64_t kDeviceShift = 0x100000000000ull;

std::vector<std::uint64_t> device_pointers(const KernelLaunch& launch) {
  std::vector<std::uint64_t> out;
  for (int p = 0; p < signature(launch.kind).num_pointers; ++p) {
    out.push_back(launch.pointers[p] + kDeviceShift);
  }
  return out;
}

std::vector<KernelLaunch> sample_launches() {
  const Address base = 0x7f0000000000ull;
  std::vector<KernelLaunch> out;
  out.push_back(launch_fill(arg(base, {3, 4}), 1.5f).value());
  out.push_back(launch_copy(arg(base, {3, 4}), arg(base + 512, {3, 4})).value());
  out.push_back(
      launch_binary(KernelKind::kDiv, arg(base, {4}), arg(base + 512, {4}), arg(base + 1024, {4}))
          .value());
  out.push_back(launch_sum(arg(base, {3}), arg(base + 512, {3, 4}), {1}).value());
  out.push_back(
      launch_mm(arg(base, {2, 3}), arg(base + 512, {2, 4}), arg(base + 1024, {4, 3})).value());
  AdamHyper h;
  h.lr = 0.01f;
  h.weight_decay = 0.1f;
  out.push_back(launch_adam_powers(arg(base + 2048, {2}), h).value());
  out.push_back(launch_adam(KernelKind::kAdamW, arg(base, {8}), arg(base + 512, {8}),
                            arg(base + 1024, {8}), arg(base + 1536, {8}), arg(base + 2048, {2}), h)
                    .value());
  SgdHyper s;
  s.momentum = 0.9f;
  out.push_back(launch_sgd(arg(base, {5}), arg(base + 512, {5}), arg(base + 1024, {5}), s).value());
  return out;
}

TEST_CASE("cuda host: every kernel's parameters follow the C ABI and name each pointer once") {
  for (int k = 0; k < kNumKernelKinds; ++k) {
    const auto kind = static_cast<KernelKind>(k);
    CAPTURE(kernel_name(kind));
    const KernelAbi& abi = kernel_abi(kind);
    REQUIRE_FALSE(abi.params.empty());
    CHECK(abi.params[0].slot == ParamSlot::kCount);
    std::size_t end = 0;
    std::vector<int> pointer_seen(kMaxKernelPointers, 0);
    int scalars = 0;
    for (const KernelParam& p : abi.params) {
      CHECK(p.offset % p.align == 0);
      CHECK(p.offset >= end);
      CHECK(p.offset - end < p.align);  // no more padding than alignment needs
      end = p.offset + p.size;
      if (p.slot == ParamSlot::kPointer) ++pointer_seen[p.index];
      if (p.slot == ParamSlot::kGeometry) CHECK(p.index < signature(kind).num_pointers);
      if (p.slot == ParamSlot::kScalar) ++scalars;
    }
    CHECK(abi.block_bytes == end);
    CHECK(scalars == signature(kind).num_scalars);
    for (int p = 0; p < kMaxKernelPointers; ++p) {
      CHECK(pointer_seen[p] == (p < signature(kind).num_pointers ? 1 : 0));
    }
  }
}

TEST_CASE("cuda host: the layout of fill is (n, out, g_out, value) at 0, 8, 16, 152") {
  // Geometry: an int32 rank, padding, then two int64 arrays of 8.
  static_assert(sizeof(kernels::Geometry) == 136);
  const KernelAbi& abi = kernel_abi(KernelKind::kFill);
  REQUIRE(abi.params.size() == 4);
  CHECK(abi.params[1].offset == 8);
  CHECK(abi.params[2].offset == 16);
  CHECK(abi.params[3].offset == 152);
  CHECK(abi.block_bytes == 156);
}

TEST_CASE("cuda host: check_param_info accepts the table and names a drifted parameter") {
  const KernelAbi& abi = kernel_abi(KernelKind::kSum);
  std::vector<ParamInfo> compiled;
  for (const KernelParam& p : abi.params) compiled.push_back({p.offset, p.size});
  CHECK(check_param_info(KernelKind::kSum, compiled));

  std::vector<ParamInfo> shifted = compiled;
  shifted.back().offset += 4;
  const Status s = check_param_info(KernelKind::kSum, shifted);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("kernel sum: parameter 5 (mask 0)") != std::string::npos);

  compiled.pop_back();
  const Status fewer = check_param_info(KernelKind::kSum, compiled);
  REQUIRE_FALSE(fewer);
  CHECK(fewer.error().message.find("has 5 parameters, the table 6") != std::string::npos);
}

TEST_CASE("cuda host: a launch encoded into node parameters decodes back to itself") {
  for (const KernelLaunch& launch : sample_launches()) {
    CAPTURE(kernel_name(launch.kind));
    ParamBlock block;
    REQUIRE(encode_params(launch, device_pointers(launch), block));
    CHECK(block.args.size() == kernel_abi(launch.kind).params.size());
    std::vector<const void*> args(block.args.begin(), block.args.end());
    Result<KernelLaunch> decoded = decode_params(launch.kind, args);
    REQUIRE(decoded);
    KernelLaunch expected = launch;
    for (int p = 0; p < signature(launch.kind).num_pointers; ++p) {
      expected.pointers[p] += kDeviceShift;
    }
    // Scalars past the signature's are not passed; the model leaves them 0.
    CHECK(*decoded == expected);
    for (int p = 0; p < signature(launch.kind).num_pointers; ++p) {
      const AddressRange a = pointer_extent(*decoded, p);
      const AddressRange b = pointer_extent(launch, p);
      CHECK(a.base == b.base + kDeviceShift);
      CHECK(a.bytes == b.bytes);
    }
  }
}

TEST_CASE("cuda host: decoding refuses parameters that are not the table's") {
  const KernelLaunch add =
      launch_binary(KernelKind::kAdd, arg(0x1000, {4}), arg(0x2000, {4}), arg(0x3000, {4})).value();
  ParamBlock block;
  REQUIRE(encode_params(add, device_pointers(add), block));
  std::vector<const void*> args(block.args.begin(), block.args.end());

  SUBCASE("another op code") {
    const int mul = 2;
    std::memcpy(block.args[1], &mul, sizeof mul);
    const auto r = decode_params(KernelKind::kAdd, args);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("op code 2 where 0 was expected") != std::string::npos);
  }
  SUBCASE("an element count its output does not have") {
    const std::int64_t n = 5;
    std::memcpy(block.args[0], &n, sizeof n);
    const auto r = decode_params(KernelKind::kAdd, args);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("element count 5") != std::string::npos);
  }
  SUBCASE("too few parameters") {
    args.pop_back();
    CHECK_FALSE(decode_params(KernelKind::kAdd, args));
  }
  SUBCASE("a missing parameter buffer") {
    args[2] = nullptr;
    CHECK_FALSE(decode_params(KernelKind::kAdd, args));
  }
  SUBCASE("encoding with the wrong number of device pointers") {
    const std::vector<std::uint64_t> two = {0x1000, 0x2000};
    ParamBlock other;
    const Status s = encode_params(add, two, other);
    REQUIRE_FALSE(s);
    CHECK(s.error().message.find("2 device pointers for 3 pointer arguments") != std::string::npos);
  }
}

TEST_CASE("cuda host: AdamW's decoupled-decay constant is checked") {
  const Address base = 0x7f0000000000ull;
  const KernelLaunch adamw =
      launch_adam(KernelKind::kAdamW, arg(base, {4}), arg(base + 512, {4}), arg(base + 1024, {4}),
                  arg(base + 1536, {4}), arg(base + 2048, {2}), AdamHyper{})
          .value();
  ParamBlock block;
  REQUIRE(encode_params(adamw, device_pointers(adamw), block));
  std::vector<const void*> args(block.args.begin(), block.args.end());
  CHECK(decode_params(KernelKind::kAdamW, args));
  // The same bytes read as plain Adam carry the wrong constant.
  const auto as_adam = decode_params(KernelKind::kAdam, args);
  REQUIRE_FALSE(as_adam);
  CHECK(as_adam.error().message.find("constant 1 where 0 was expected") != std::string::npos);
}

}  // namespace
}  // namespace capsim::cuda
