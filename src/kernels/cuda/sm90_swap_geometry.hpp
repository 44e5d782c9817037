// Geometry of the sm90_gather family's swap-AB kernel (launch.swap_ab with schedule tma_ws,
// sm90_swap_kernel.cuh): the rules can_implement enforces for it and the GemmGeometry it runs
// with. Host-only, like sm90_gather_geometry.hpp, which calls it for those configs.
#pragma once

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"

namespace moetune::kernels::cuda {

/// Whether `k` names the swap-AB kernel (else swap_ab names the decode kernels).
inline bool is_swap_ws(core::KernelConfig const& k) {
  return k.launch.swap_ab && k.launch.schedule == core::Schedule::kTmaWarpSpecialized;
}

/// Whether `k` names the decode kernels (sm90_decode_kernel.cuh: swap_ab with schedule auto).
inline bool is_decode(core::KernelConfig const& k) { return k.launch.swap_ab && !is_swap_ws(k); }

/// Output columns of one swap-AB tile: 64 weight rows per consumer warpgroup (num_warps / 4 of
/// them), half of them gate rows for gated GEMM1.
int swap_block_n(int num_warps, bool gated);

/// Geometry of the swap-AB GEMM1 (is_gemm1) or GEMM2 for `problem`, or why the config cannot run:
/// "gemm1.launch.swap_ab = true with schedule tma_ws (swap-AB wgmma) takes tile.block_n = 96 with
/// 12 warps (gated: 32 output columns per consumer warpgroup); saw 128".
core::Result<GemmGeometry> swap_geometry(core::MoeProblem const& problem,
                                         core::KernelConfig const& k, bool is_gemm1);

}  // namespace moetune::kernels::cuda
