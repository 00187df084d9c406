// Finding out, safely, whether a usable CUDA device exists.
//
// Test executables call this first and exit 77 (ctest SKIP) when it reports no
// device, before any other CUDA call. Without a driver, cudaGetDeviceCount
// fails (and leaves the count untouched); with a driver and no GPU it fails
// with cudaErrorNoDevice; both mean "skip", never "fail".
#pragma once

#include <string>

namespace capsim::cuda {

struct DeviceProbe {
  int device_count = 0;
  std::string reason;  // why there is no device (the CUDA error name), or ""
};

DeviceProbe probe_devices();

// The exit code ctest treats as SKIP (SKIP_RETURN_CODE).
inline constexpr int kSkipExitCode = 77;

}  // namespace capsim::cuda
