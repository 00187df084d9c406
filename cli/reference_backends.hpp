// The reference backends that `capsim check` and `capsim record` can run
// beside the model (`--backend`): `cpu`, the model alone; `host`, the CPU
// kernels over a memory of their own, which tests the mirror on any machine
// and proves nothing about a GPU; and `cuda`, the CUDA reference backend,
// present when the build found nvcc and usable when a GPU is there.
#pragma once

#include <memory>
#include <string_view>

#include "model/replay_mirror.hpp"
#include "model/result.hpp"
#include "properties/reference_agrees.hpp"

namespace capsim::cli {

// What a mirror's broken twin does (the property's control).
inline constexpr std::string_view kMirrorControl =
    "mirror fault skip_upload: the reference gets the model's memory before its first replay "
    "only";

// Checks that `name` is a backend this build and machine can run: an error
// (exit 2) for an unknown name, for `cuda` in a build without nvcc and for
// `cuda` on a machine without a usable GPU.
Status check_backend_usable(std::string_view name);

// A fresh mirror over a fresh `name` backend (not `cpu`), with `fault` (kNone
// or a kMirror fault of model/fault.hpp).
Result<std::unique_ptr<ReplayMirror>> make_mirror(std::string_view name, Fault fault);

// make_mirror as a factory for reference.agrees.
MirrorFactory mirror_factory(std::string_view name);

}  // namespace capsim::cli
