// MOETUNE_CU_CHECK / MOETUNE_CUDA_CHECK: wrap every driver / runtime call (STYLE 12). On failure
// the enclosing function returns a core::Error naming the call text, file:line and the error name.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

#include "core/result.hpp"

namespace moetune::kernels::cuda {

inline core::Error cu_error(CUresult rc, const char* call, const char* file, int line) {
  const char* name = nullptr;
  cuGetErrorName(rc, &name);
  return core::make_error(core::ErrorCode::kInternal, std::string(file) + ":" + std::to_string(line),
                          std::string(call) + " failed with " + (name ? name : "CUDA_ERROR_?"));
}
inline core::Error cuda_error(cudaError_t rc, const char* call, const char* file, int line) {
  return core::make_error(core::ErrorCode::kInternal, std::string(file) + ":" + std::to_string(line),
                          std::string(call) + " failed with " + cudaGetErrorName(rc));
}

}  // namespace moetune::kernels::cuda

#define MOETUNE_CU_CHECK(call)                                                        \
  do {                                                                                \
    CUresult moetune_rc_ = (call);                                                    \
    if (moetune_rc_ != CUDA_SUCCESS)                                                  \
      return ::moetune::kernels::cuda::cu_error(moetune_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define MOETUNE_CUDA_CHECK(call)                                                        \
  do {                                                                                  \
    cudaError_t moetune_rc_ = (call);                                                   \
    if (moetune_rc_ != cudaSuccess)                                                     \
      return ::moetune::kernels::cuda::cuda_error(moetune_rc_, #call, __FILE__, __LINE__); \
  } while (0)
