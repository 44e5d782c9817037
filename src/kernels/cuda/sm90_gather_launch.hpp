// Host side of the sm90_gather family: loads the JIT-compiled kernels of one config and launches
// the layer (align -> GEMM1 + activation -> GEMM2 + routing weight -> combine) on a stream with no
// host synchronisation. No allocation on this path: the caller sizes the workspace up front.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels::cuda {

/// Device pointers of one layer call. Layouts: x [M, K], topk_ids [M, top_k] int32,
/// topk_weights [M, top_k] fp32, w1 [E, N1, K], w2 [E, K, I], out [M, K]; bf16 unless stated.
struct MoeArgs {
  const void* x = nullptr;
  const int32_t* topk_ids = nullptr;
  const float* topk_weights = nullptr;
  const void* w1 = nullptr;
  const void* w2 = nullptr;
  void* out = nullptr;
};

/// Which stages a launch runs (per-stage timing runs them one at a time).
enum StageMask : unsigned {
  kStageAlign = 1,
  kStageGemm1 = 2,
  kStageGemm2 = 4,
  kStageCombine = 8,
  kStageAll = 15
};

/// The loaded kernels of one (activation, config).
struct Sm90GatherKernels {
  GemmGeometry g1, g2;
  cudaKernel_t align = nullptr, gemm1 = nullptr, gemm2 = nullptr, combine = nullptr;
  cudaKernel_t align_count = nullptr, align_scan = nullptr, align_scatter = nullptr;
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

/// Workspace bytes for (problem with M = p.num_tokens, config).
size_t sm90_gather_workspace_bytes(core::MoeProblem const& p, core::MoeConfig const& c);

/// Launches the layer for M = p.num_tokens. M == 0 launches nothing.
core::Status launch_sm90_gather(Sm90GatherKernels const& k, core::MoeProblem const& p,
                                MoeArgs const& args, void* workspace, size_t workspace_bytes,
                                cudaStream_t stream, unsigned stages = kStageAll,
                                FastPaths const& fast_paths = {});

}  // namespace moetune::kernels::cuda
