// Fills PyTorch refuses (see dtype_values.hpp): overflows<T>'s bounds per dtype, and its message.
#include "model/dtype_values.hpp"

#include <fmt/format.h>

#include <limits>

namespace capsim {

namespace {

// The half types' largest finite values, as doubles.
constexpr double kHalfMax = 65504.0;
constexpr double kBFloat16Max = 3.3895313892515355e38;  // 0x7f7f as bfloat16

// An integer dtype's lowest value and 2^digits, its first value past the top.
struct IntegerRange {
  double lowest, upper;
};

std::optional<IntegerRange> integer_range(DType dtype) {
  switch (dtype) {
    case DType::kInt8: return IntegerRange{-128.0, 128.0};
    case DType::kUInt8: return IntegerRange{0.0, 256.0};
    case DType::kInt32: return IntegerRange{-2147483648.0, 2147483648.0};
    case DType::kInt64: return IntegerRange{-9223372036854775808.0, 9223372036854775808.0};
    default: return std::nullopt;
  }
}

}  // namespace

std::string_view overflow_type_name(DType dtype) {
  switch (dtype) {
    case DType::kInt8: return "int8_t";
    case DType::kUInt8: return "uint8_t";
    case DType::kInt32: return "int";
    case DType::kInt64: return "int64_t";
    case DType::kFloat16: return "c10::Half";
    case DType::kBFloat16: return "c10::BFloat16";
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kComplex64:
    case DType::kBool: return "";
  }
  return "";
}

Status check_fill_fits(DType dtype, float value) {
  const double v = value;
  bool overflows = false;
  if (const std::optional<IntegerRange> r = integer_range(dtype)) {
    overflows = std::isnan(v) || v < r->lowest || v >= r->upper;  // infinities included
  } else if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
    const double max = dtype == DType::kFloat16 ? kHalfMax : kBFloat16Max;
    overflows = std::isfinite(v) && (v < -max || v > max);
  }
  if (!overflows) return {};
  return make_error(fmt::format("value cannot be converted to type {} without overflow",
                                overflow_type_name(dtype)));
}

}  // namespace capsim
