// A float32 value stored in each dtype as PyTorch stores it: the bits of a
// fill or of a drawn value in float16 and bfloat16 (round to nearest, ties to
// even), and the fills PyTorch refuses because the value does not fit.
//
// PyTorch converts a Python number into a tensor's dtype with
// c10::checked_convert (c10/core/Scalar.h, Scalar::to<T>), which raises
// "value cannot be converted to type T without overflow" when overflows<T>
// (torch/headeronly/util/overflows.h, torch 2.15.0) says so: for an integer
// dtype a NaN, an infinity, a value below the lowest or at or above 2^digits
// (so an int8 fill of 127.9 is 127, one of 128 or -128.9 raises); for float16
// and bfloat16 a finite value past the largest finite one (infinities and
// NaN pass). Bool and the wider floats take any value. The half types then
// round as c10::Half (fp16_ieee_from_fp32_value) and c10::BFloat16
// (round_to_nearest_even) do.
//
// Where capsim differs: PyTorch skips the half types' check for a CPU tensor
// of one element (at::detail::scalar_fill casts without it); capsim's tensors
// are device tensors, whose fill checks whatever the count. A trace's fill is
// a float: PyTorch lets a negative Python int wrap into an unsigned dtype
// (uint8.fill_(-1) is 255) but refuses a negative float, and capsim, which
// cannot tell them apart, refuses both. Releases before the 2^digits bound
// compared with max() and let an int64 fill of 2^63 wrap.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "model/result.hpp"
#include "model/tensor.hpp"

namespace capsim {

// bfloat16 bits of `f`: round to nearest, ties to even; overflow is an
// infinity; every NaN is 0x7fc0 (c10::BFloat16's round_to_nearest_even).
constexpr std::uint16_t bfloat16_bits(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  const std::uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + bias) >> 16);
}

// float16 bits of `f`: round to nearest, ties to even, subnormals kept;
// 65520 and above (in magnitude) is an infinity; NaN is sign | 0x7e00.
constexpr std::uint16_t float16_bits(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // 65520 ties to infinity
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  if (exponent < -25) return sign;  // below half the smallest subnormal: 0
  // The significand with its hidden bit, as k units of the result's last
  // place after dropping `shift` bits.
  const std::uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const int shift = exponent >= -14 ? 13 : 13 + (-14 - exponent);
  std::uint32_t kept = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u))) ++kept;
  if (exponent < -14) return static_cast<std::uint16_t>(sign | kept);  // subnormal (or 2^-14)
  // Normal: the exponent's field, then the fraction; a carry out of the
  // fraction moves the exponent up, as it should.
  const auto biased = static_cast<std::uint32_t>(exponent + 15);
  return static_cast<std::uint16_t>(sign | ((biased << 10) + (kept - 0x400u)));
}

// PyTorch's name for `dtype`'s C++ type in its overflow message ("int8_t",
// "int", "c10::Half"), or "" for a dtype whose fills never overflow.
std::string_view overflow_type_name(DType dtype);

// An error in PyTorch's words ("value cannot be converted to type int8_t
// without overflow") when a fill of `value` into `dtype` raises in PyTorch.
Status check_fill_fits(DType dtype, float value);

}  // namespace capsim
