// The testbed's GPU references, host side: the mirror of their parameters and their launch (one
// warp per output element). The bf16 reference is sm90_reference_kernel.cuh, launched by
// CudaTestbed; the fp8 one is sm90_fp8_reference_kernel.cuh, launched by CudaFp8Layer.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/result.hpp"

namespace moetune::kernels::cuda {

/// Host mirror of moetune_dev::RefParams (sm90_reference_kernel.cuh).
struct RefParams {
  const void* x;
  const void* w1;
  const void* w2;
  const int32_t* topk_ids;
  const float* topk_weights;
  const int32_t* tokens;
  float* h;
  float* out;
  int num_sample, k_dim, i_dim, top_k, act, gated;
};

/// `total_warps` warps of 256-thread CTAs: the reference kernels' one warp per output element.
core::Status launch_ref_warps(cudaKernel_t kernel, long long total_warps, void** params,
                              cudaStream_t stream);

}  // namespace moetune::kernels::cuda
