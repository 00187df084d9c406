// Compiled autograd's two initial-capture modes, as data.
//
// `functional` is the capture after PR 144707 (every node an opaque op, no
// proxy metadata read); `legacy` is the one before it, kept as the negative
// control of the capture properties. Its own header because a program action
// (`run_capture_scenario`) names a mode, and sim/program/program.hpp must not pull in
// the capture itself.
#pragma once

#include <cstdint>
#include <string_view>

namespace capsim {

// X(enumerator, name)
#define CAPSIM_CAPTURE_MODES(X) \
  X(kFunctional, "functional")  \
  X(kLegacy, "legacy")
enum class CaptureMode : std::uint8_t {
#define CAPSIM_ENUM_(e, name) e,
  CAPSIM_CAPTURE_MODES(CAPSIM_ENUM_)
#undef CAPSIM_ENUM_
};

inline std::string_view capture_mode_name(CaptureMode mode) {
  switch (mode) {
#define CAPSIM_NAME_(e, name) \
  case CaptureMode::e: return name;
    CAPSIM_CAPTURE_MODES(CAPSIM_NAME_)
#undef CAPSIM_NAME_
  }
  return "?";
}

}  // namespace capsim
