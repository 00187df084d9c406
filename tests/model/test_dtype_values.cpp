// model/dtype_values.hpp: fills and draws stored as PyTorch stores them. The
// expected values are PyTorch 2.15.0's on a CPU (torch.tensor(v,
// dtype=...).view(torch.int16), .fill_(v)), and its overflow messages.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "model/dtype_values.hpp"

namespace capsim {
namespace {

float from_bfloat16(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

TEST_CASE("dtype values: bfloat16 rounds to nearest, ties to even, as c10::BFloat16") {
  CHECK(from_bfloat16(bfloat16_bits(1.0f + 0x1p-8f)) == 1.0f);                   // a tie, to even
  CHECK(from_bfloat16(bfloat16_bits(1.0f + 3 * 0x1p-8f)) == 1.015625f);          // a tie, to even
  CHECK(from_bfloat16(bfloat16_bits(1.0f + 0x1p-8f + 0x1p-20f)) == 1.0078125f);  // past half
  CHECK(bfloat16_bits(0x1p-134f) == 0);                                          // to zero
  CHECK(bfloat16_bits(3.4e38f) == 0x7f80);                                       // to infinity
  CHECK(bfloat16_bits(-std::numeric_limits<float>::quiet_NaN()) == 0x7fc0);      // every NaN
  CHECK(bfloat16_bits(-2.0f) == 0xc000);
}

TEST_CASE("dtype values: float16 rounds to nearest, ties to even, as c10::Half") {
  CHECK(float16_bits(65519.0f) == 0x7bff);  // 65504, the largest
  CHECK(float16_bits(65520.0f) == 0x7c00);  // a tie with infinity: to infinity
  CHECK(float16_bits(2049.0f) == 0x6800);   // 2048: a tie, to even
  CHECK(float16_bits(2051.0f) == 0x6802);   // 2052: a tie, to even
  CHECK(float16_bits(0x1p-25f) == 0);       // half the smallest subnormal: a tie, to 0
  CHECK(float16_bits(0x1p-24f) == 0x0001);  // the smallest subnormal
  CHECK(float16_bits(0x1.8p-24f) == 0x0002);
  CHECK(float16_bits(0x1p-14f) == 0x0400);      // the smallest normal
  CHECK(float16_bits(0x1.ffcp-15f) == 0x0400);  // rounds up into it
  CHECK(float16_bits(1.0f) == 0x3c00);
  CHECK(float16_bits(-0.5f) == 0xb800);
  CHECK(float16_bits(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(float16_bits(-std::numeric_limits<float>::quiet_NaN()) == 0xfe00);
}

TEST_CASE("dtype values: a fill that does not fit its dtype is PyTorch's overflow error") {
  const auto refused = [](DType dtype, float value) {
    const Status s = check_fill_fits(dtype, value);
    return s ? std::string() : s.error().message;
  };
  // torch.empty(2, dtype=torch.int8).fill_(300)
  CHECK(refused(DType::kInt8, 300.0f) ==
        "value cannot be converted to type int8_t without overflow");
  CHECK(refused(DType::kInt8, 127.9f).empty());  // truncated to 127
  CHECK(refused(DType::kInt8, 128.0f) != "");
  CHECK(refused(DType::kInt8, -128.9f) != "");  // below the lowest
  CHECK(refused(DType::kUInt8, -0.5f) ==
        "value cannot be converted to type uint8_t without overflow");
  CHECK(refused(DType::kInt32, 2147483648.0f) ==
        "value cannot be converted to type int without overflow");
  CHECK(refused(DType::kInt32, std::numeric_limits<float>::quiet_NaN()) != "");
  CHECK(refused(DType::kInt32, std::numeric_limits<float>::infinity()) != "");
  // torch.empty(2, dtype=torch.int64).fill_(1e20), and 2^63 itself.
  CHECK(refused(DType::kInt64, 1e20f) ==
        "value cannot be converted to type int64_t without overflow");
  CHECK(refused(DType::kInt64, 0x1p63f) != "");
  CHECK(refused(DType::kInt64, -0x1p63f).empty());
  // The half types: a finite value past the largest; infinities and NaN pass.
  CHECK(refused(DType::kFloat16, 65505.0f) ==
        "value cannot be converted to type c10::Half without overflow");
  CHECK(refused(DType::kFloat16, 65504.0f).empty());
  CHECK(refused(DType::kFloat16, std::numeric_limits<float>::infinity()).empty());
  CHECK(refused(DType::kBFloat16, 3.4e38f) ==
        "value cannot be converted to type c10::BFloat16 without overflow");
  CHECK(refused(DType::kBFloat16, 1e38f).empty());
  // Bool and the wide floats take anything.
  CHECK(refused(DType::kBool, std::numeric_limits<float>::quiet_NaN()).empty());
  CHECK(refused(DType::kFloat32, 3.4e38f).empty());
}

}  // namespace
}  // namespace capsim
