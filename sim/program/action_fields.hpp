// The field types of actions.def: for each, the C++ type of the member and
// the name the recorder's schema gives it (`capsim version --actions`). How
// each is written and read as JSON is traces/format/action_field_json.hpp's;
// what a printer shows is properties'. A field type is a tag, not a value:
// the table names it, and every reader and writer overloads on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/kernel_launch.hpp"
#include "model/tensor.hpp"
#include "sim/compiled_autograd/capture_mode.hpp"
#include "sim/core/function_def.hpp"

namespace capsim {

// X(enumerator, name)
#define CAPSIM_OPTIMIZER_KINDS(X) \
  X(kSgd, "sgd")                  \
  X(kAdam, "adam")                \
  X(kAdamW, "adamw")
enum class OptimizerKind : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_OPTIMIZER_KINDS(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};
std::string_view optimizer_kind_name(OptimizerKind kind);

// A call's outputs (and a function's) may name every value of the body.
inline constexpr std::size_t kMaxCallOutputs = kMaxBodyInputs + kMaxBodyOps;

namespace field {

// actions.def's `presence` column as a value: CAPSIM_PRESENCE_##presence.
enum class Presence : std::uint8_t { kRequired, kOptional };
#define CAPSIM_PRESENCE_required ::capsim::field::Presence::kRequired
#define CAPSIM_PRESENCE_optional ::capsim::field::Presence::kOptional

// Whether a field of `presence` holding `value` is written: a required one
// always, an optional one where it differs from the kind's default.
template <typename T>
bool written(Presence presence, const T& value, const T& default_value) {
  return presence == Presence::kRequired || !(value == default_value);
}

// `schema`: the JSON type a line holds, as the recorder checks it
// (recorder/capsim_recorder/trace_writer.py): "string", "strings",
// "integer", "integers", "boolean", "number", "object", or a list of the
// names an enum takes.

// A name of a tensor, function, optimizer or scenario (at most
// kMaxJsonNameBytes bytes: traces/format/program_json.hpp).
struct Name {
  using type = std::string;
  static constexpr std::string_view schema = "string";
};
struct OptionalName {
  using type = std::optional<std::string>;
  static constexpr std::string_view schema = "string";
};
// At most `limit` names.
template <std::size_t limit>
struct Names {
  using type = std::vector<std::string>;
  static constexpr std::size_t max = limit;
  static constexpr std::string_view schema = "strings";
};
// At most `limit` integers.
template <std::size_t limit>
struct Integers {
  using type = std::vector<std::int64_t>;
  static constexpr std::size_t max = limit;
  static constexpr std::string_view schema = "integers";
};
struct Integer {
  using type = std::int64_t;
  static constexpr std::string_view schema = "integer";
};
struct Flag {
  using type = bool;
  static constexpr std::string_view schema = "boolean";
};
struct OptionalFlag {
  using type = std::optional<bool>;
  static constexpr std::string_view schema = "boolean";
};
// A float32, written with the fewest digits that read back to its bits.
struct OptionalFloat32 {
  using type = std::optional<float>;
  static constexpr std::string_view schema = "number";
};
// A shape: at most kMaxRank sizes, each >= 0, their product within the
// limits of check_shape_sizes.
struct Sizes {
  using type = Dims;
  static constexpr std::string_view schema = "integers";
};
// Strides, one per size.
struct OptionalSizes {
  using type = std::optional<Dims>;
  static constexpr std::string_view schema = "integers";
};
// Enums by their names (model/tensor.hpp, above, capture_mode.hpp).
struct DTypeName {
  using type = DType;
  static constexpr std::string_view schema = "dtype";
};
struct OptimizerKindName {
  using type = OptimizerKind;
  static constexpr std::string_view schema = "optimizer_kind";
};
struct CaptureModeName {
  using type = CaptureMode;
  static constexpr std::string_view schema = "capture_mode";
};
// An optimizer's hyper-parameters, an object of their own.
struct Sgd {
  using type = SgdHyper;
  static constexpr std::string_view schema = "object";
};
struct Adam {
  using type = AdamHyper;
  static constexpr std::string_view schema = "object";
};

}  // namespace field
}  // namespace capsim
