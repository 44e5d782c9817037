// The loaded kernels of one sm90_gather config: compiled by NVRTC (or read from the cubin cache)
// one module per GEMM kernel plus one for align and combine, each module loaded once per process
// and shared by every config and problem that names the same kernels; the loaded set (kernels
// with the launch geometry of one problem) cached per geometry and names.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels::cuda {

/// The loaded kernels of one (activation, config).
struct Sm90GatherKernels {
  GemmGeometry g1, g2;
  cudaKernel_t align = nullptr, gemm1 = nullptr, gemm2 = nullptr, combine = nullptr;
  cudaKernel_t align_count = nullptr, align_place = nullptr;
  /// x copied into GEMM1's sorted-row order (a tma_ws GEMM1 of block_m 256 loads it by TMA).
  cudaKernel_t permute = nullptr;
  /// The fp8 regime's input quantisation (sm90_fp8_quant_kernel.cuh); null for bf16 problems.
  cudaKernel_t quant = nullptr;
  int sm_count = 132;  ///< grid of the persistent (tma_ws) GEMMs
  /// cluster_m 2: CTA pairs of GEMM1 / GEMM2 that fit on the device at once (the grid's cap;
  /// cudaOccupancyMaxActiveClusters, which counts the GPCs' SM layout); 0 when unclustered.
  int clusters1 = 0, clusters2 = 0;
  std::string ptxas_log;  ///< registers / smem per kernel
  double compile_ms = 0;
  bool from_cache = false;
};

/// Compiles (or loads from the cubin cache) and loads the kernels for `config`. Thread-safe;
/// loaded modules are kept for the life of the process. Needs a current CUDA context.
core::Result<std::shared_ptr<Sm90GatherKernels const>> load_sm90_gather(core::MoeProblem const& p,
                                                                        core::MoeConfig const& c);
/// The NVRTC name expressions of a config's kernels (for prewarm and the CI compile check).
core::Result<std::vector<std::string>> sm90_gather_name_exprs(core::MoeProblem const& p,
                                                              core::MoeConfig const& c);
/// The NVRTC modules a config's kernels are compiled and loaded in, one name-expression list
/// each: GEMM1 alone, GEMM2 alone, then (not for the decode kernels) align and combine together.
/// A GEMM's module is thus shared by every config that names the same kernel (the tuner's
/// stage-2 candidates whatever the stage-1 winner, and every bucket): a module costs ~0.25 s of
/// front end plus ~0.5 s per wgmma GEMM. Flattened, the lists are sm90_gather_name_exprs.
core::Result<std::vector<std::vector<std::string>>> sm90_gather_modules(core::MoeProblem const& p,
                                                                        core::MoeConfig const& c);

}  // namespace moetune::kernels::cuda
