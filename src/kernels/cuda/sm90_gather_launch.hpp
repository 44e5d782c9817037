// Host side of the sm90_gather family: launches the layer with one config's loaded kernels
// (sm90_gather_load.hpp: align -> GEMM1 + activation -> GEMM2 + routing weight -> combine) on a
// stream with no host synchronisation. No allocation on this path: the caller sizes the workspace
// up front.
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
#include "kernels/cuda/sm90_gather_load.hpp"
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
  const void* b1 = nullptr;  ///< [E, N1]; set exactly when the problem has_bias
  const void* b2 = nullptr;  ///< [E, K]
  /// fp8 problems (quant; w1 and w2 e4m3): fp8_block: w1_scale [E, N1/128, K/128] and
  /// w2_scale [E, K/128, I/128]; fp8_tensor: w1_scale and w2_scale [E], a1_scale and a2_scale
  /// [1] (the static scales of the GEMM inputs). Null otherwise.
  const float* w1_scale = nullptr;
  const float* w2_scale = nullptr;
  const float* a1_scale = nullptr;
  const float* a2_scale = nullptr;
};

/// Which stages a launch runs (per-stage timing runs them one at a time).
enum StageMask : unsigned {
  kStageAlign = 1,
  kStageGemm1 = 2,
  kStageGemm2 = 4,
  kStageCombine = 8,
  kStageAll = 15
};

/// Workspace bytes for (problem with M = p.num_tokens, config), derived from the config's
/// geometry: for sizing before the kernels are loaded. Never 0 (align's counters always take
/// room), so M = 0 still holds a real allocation.
size_t sm90_gather_workspace_bytes(core::MoeProblem const& p, core::MoeConfig const& c);
/// The same bytes from loaded kernels' own geometry (no derivation): what a launch of M =
/// p.num_tokens checks against, and what the hot path asks for.
size_t sm90_gather_workspace_bytes(Sm90GatherKernels const& k, core::MoeProblem const& p);

/// The multi-CTA align's chunks (the CTAs of each of its two launches) for `pairs` (M x top_k)
/// over `num_experts`, where more than one CTA's share of pairs (2048) is to be aligned: chunks of
/// 2 to 8 ids per thread of 256, as many as a place CTA sums in one batch of histogram loads, up
/// to 32768 pairs; 2048 pairs a chunk above. The kernels derive the ids per thread from it.
int sm90_align_chunks(int64_t pairs, int64_t num_experts);

/// Launches the layer for M = p.num_tokens. M == 0 launches nothing. `workspace`: at least
/// sm90_gather_workspace_bytes (its contents on entry do not matter).
core::Status launch_sm90_gather(Sm90GatherKernels const& k, core::MoeProblem const& p,
                                MoeArgs const& args, void* workspace, size_t workspace_bytes,
                                cudaStream_t stream, unsigned stages = kStageAll,
                                FastPaths const& fast_paths = {});

}  // namespace moetune::kernels::cuda
