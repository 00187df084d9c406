// Whether a usable CUDA device exists (see cuda_probe.hpp): one cudaGetDeviceCount, read so
// that no driver and no GPU both come out as "no device", never as a failure.
#include <cuda_runtime.h>

#include "cuda_reference/cuda_probe.hpp"

namespace capsim::cuda {

DeviceProbe probe_devices() {
  DeviceProbe probe;
  int count = 0;  // left untouched by the call when there is no driver
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    probe.reason = cudaGetErrorName(err);
    return probe;
  }
  probe.device_count = count;
  if (count == 0) probe.reason = "no CUDA device";
  return probe;
}

}  // namespace capsim::cuda
