// MOETUNE_CUDA_CHECK: wraps every CUDA runtime call (STYLE 12). The backend uses the runtime API
// only (libcudart loads the driver at run time), so binaries start on machines without a driver.
// On failure
// the enclosing function returns a core::Error naming the call text, file:line and the error name.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/result.hpp"

namespace moetune::kernels::cuda {

/// The error of a failed call. The runtime's last-error slot is cleared (cudaGetLastError): the
/// failure is reported here, once, so a later cudaGetLastError check does not blame an unrelated
/// call for it (a sticky error, a fault on the device, stays set and keeps failing every call).
inline core::Error cuda_error(cudaError_t rc, const char* call, const char* file, int line) {
  (void)cudaGetLastError();
  return core::make_error(core::ErrorCode::kInternal,
                          std::string(file) + ":" + std::to_string(line),
                          std::string(call) + " failed with " + cudaGetErrorName(rc));
}

}  // namespace moetune::kernels::cuda

#define MOETUNE_CUDA_CHECK(call)                                                           \
  do {                                                                                     \
    cudaError_t moetune_rc_ = (call);                                                      \
    if (moetune_rc_ != cudaSuccess)                                                        \
      return ::moetune::kernels::cuda::cuda_error(moetune_rc_, #call, __FILE__, __LINE__); \
  } while (0)
