// Device launchers for the shared kernel bodies of model/kernel_bodies.hpp.
//
// Each KernelKind has one __global__ function that calls the same element body
// the CPU backend calls, one thread per output element. This header is plain
// C++ so host-only translation units can use it; CUDA types stay in the .cu.
#pragma once

#include <cstddef>
#include <string>

#include "model/kernel_table.hpp"

namespace capsim::cuda {

// Launches `launch` with device_pointers[p] standing for launch.pointers[p] and
// waits for it. Returns the cudaError_t as an int (0 is success).
int launch_and_wait(const KernelLaunch& launch, float* const* device_pointers);

// The __global__ function that runs `kind` (binary kinds share one, as do
// Adam and AdamW: kernel_abi.hpp's op code and constant tell them apart), as
// the host stub a kernel node's `func` holds.
const void* kernel_function(KernelKind kind);

// Thin wrappers so that tests need no CUDA headers.
int device_malloc(float** out, std::size_t bytes);
int device_free(float* ptr);
int copy_to_device(float* dst, const float* src, std::size_t bytes);
int copy_to_host(float* dst, const float* src, std::size_t bytes);
std::string error_name(int error);

}  // namespace capsim::cuda
