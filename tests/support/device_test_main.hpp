// The main() of a device test executable: probe first, before any other CUDA
// call, and exit 77 (ctest's SKIP_RETURN_CODE) with "no CUDA device: skipped
// (<reason>)" when there is no usable GPU; otherwise run doctest. Include it
// once, after DOCTEST_CONFIG_IMPLEMENT and the tests.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>

#include "cuda_reference/cuda_probe.hpp"

int main(int argc, char** argv) {
  const capsim::cuda::DeviceProbe probe = capsim::cuda::probe_devices();
  if (probe.device_count == 0) {
    std::printf("no CUDA device: skipped (%s)\n", probe.reason.c_str());
    return capsim::cuda::kSkipExitCode;
  }
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  return context.run();
}
