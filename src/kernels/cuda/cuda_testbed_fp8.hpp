// CudaFp8Layer: the fp8 half of the cuda testbed (problem quant fp8_block / fp8_tensor): the
// scales it draws for its e4m3 weights, the static input scales (per-tensor), and the fp32 GPU
// reference that repeats the kernels' quantisation (sm90_fp8_reference_kernel.cuh). Its module
// compiles on the first fp8 problem only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/cuda/cuda_reference.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"

namespace moetune::kernels::cuda {

class CudaFp8Layer {
 public:
  CudaFp8Layer() = default;
  CudaFp8Layer(CudaFp8Layer const&) = delete;
  CudaFp8Layer& operator=(CudaFp8Layer const&) = delete;
  ~CudaFp8Layer();

  /// Draws problem p's e4m3 w1 and w2 (device buffers of 1 byte per element) and every scale
  /// from `seed`: weight scales 10^[-2, 2] apart per 128x128 block (per expert 10^[-0.5, 0.5]
  /// per-tensor), static input scales 8 / 448 (x) and 16 / 448 (h).
  core::Status draw(core::MoeProblem const& p, void* w1, void* w2, uint64_t seed,
                    cudaStream_t stream);
  /// The reference's out [rp.num_sample, K] for rp (rp.h: [sample pairs, I] fp32 scratch).
  core::Status reference(core::MoeProblem const& p, RefParams const& rp, cudaStream_t stream);
  /// The scales of the drawn layer into a launch's arguments.
  void set_scales(core::MoeProblem const& p, MoeArgs& args) const;

 private:
  core::Status load();

  bool loaded_ = false;
  cudaKernel_t fill_e4m3_ = nullptr, fill_scale_ = nullptr, quant_ = nullptr, gemm1_ = nullptr,
               gemm2_ = nullptr;
  float* w1_scale_ = nullptr;
  float* w2_scale_ = nullptr;
  float* a_scale_ = nullptr;  // per-tensor: [2] = x's, h's
  size_t w1s_cap_ = 0, w2s_cap_ = 0;
};

}  // namespace moetune::kernels::cuda
