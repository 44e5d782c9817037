// Geometry of the sm90_gather family's decode kernels (launch.swap_ab: the tiny-M path of
// sm90_decode_kernel.cuh): the rules can_implement enforces for them and the GemmGeometry they
// run with. Host-only, like sm90_gather_geometry.hpp, which calls it for swap_ab configs.
#pragma once

#include <string>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"

namespace moetune::kernels::cuda {

/// Geometry of the decode GEMM1 (is_gemm1) or GEMM2 for `problem`, or why the config cannot run:
/// "gemm2.launch.swap_ab = true (decode kernels) takes tile.block_m = pairs per pass in 1, 2, 4,
/// 8, 16; saw 32".
core::Result<GemmGeometry> decode_geometry(core::MoeProblem const& problem,
                                           core::KernelConfig const& k, bool is_gemm1);

/// Whether the fused decode kernel (lever decode_fused) runs these decode geometries: its 512
/// threads have 128 registers each, so GEMM1's rows x halves x (pairs per pass + 4 x vectors)
/// plus the pairs' x pointers stay at most 72 (elsewhere the two decode launches run; at 80, S1's
/// gated 4-pair GEMM1 with 8 vectors per lane spilled at 128 registers).
bool decode_fused_fits(GemmGeometry const& g1);

/// NVRTC name expression of the fused decode kernel (lever decode_fused,
/// sm90_decode_fused_kernel.cuh) for two decode geometries: GEMM1's pairs per pass, rows and
/// vectors per lane, GEMM2's rows and vectors per lane.
std::string decode_fused_name_expr(GemmGeometry const& g1, GemmGeometry const& g2, int act_id);

}  // namespace moetune::kernels::cuda
