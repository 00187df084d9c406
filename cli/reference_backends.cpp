// The `--backend` choices (see reference_backends.hpp): which backends this build and machine
// can run, and a ReferenceMirror over each. The only file of cli/ that knows whether the build
// has CUDA.
#include "cli/reference_backends.hpp"

#include <fmt/format.h>

#include <string>

#include "cuda_reference/host_backend.hpp"
#include "cuda_reference/reference_mirror.hpp"
#if CAPSIM_HAVE_CUDA
#include "cuda_reference/cuda_backend.hpp"
#include "cuda_reference/cuda_probe.hpp"
#endif

namespace capsim::cli {

Status check_backend_usable(std::string_view name) {
  if (name == "cpu" || name == "host") return {};
  if (name != "cuda") {
    return make_error(fmt::format("--backend {}: unknown backend (cpu, host or cuda)", name));
  }
#if CAPSIM_HAVE_CUDA
  const cuda::DeviceProbe probe = cuda::probe_devices();
  if (probe.device_count == 0) {
    return make_error(fmt::format("--backend cuda: no CUDA device ({})", probe.reason));
  }
  return {};
#else
  return make_error(
      "--backend cuda: this build has no CUDA backend (nvcc was not found when it was configured)");
#endif
}

Result<std::unique_ptr<ReplayMirror>> make_mirror(std::string_view name, Fault fault) {
  if (name == "host") {
    return std::unique_ptr<ReplayMirror>(
        std::make_unique<cuda::ReferenceMirror>(std::make_unique<cuda::HostBackend>(), fault));
  }
#if CAPSIM_HAVE_CUDA
  if (name == "cuda") {
    CAPSIM_TRY_ASSIGN(std::unique_ptr<cuda::CudaBackend> backend, cuda::CudaBackend::create());
    return std::unique_ptr<ReplayMirror>(
        std::make_unique<cuda::ReferenceMirror>(std::move(backend), fault));
  }
#endif
  return make_error(fmt::format("--backend {}: no mirror of that name", name));
}

MirrorFactory mirror_factory(std::string_view name) {
  return [name = std::string(name)](Fault fault) { return make_mirror(name, fault); };
}

}  // namespace capsim::cli
