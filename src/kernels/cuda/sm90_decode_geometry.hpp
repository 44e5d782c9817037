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

/// The fused decode kernel's CTA (sm90_decode_fused_kernel.cuh kFusedWarps x 32) and the pairs it
/// takes at most (kFusedMaxPairs).
inline constexpr int kDecodeFusedThreads = 768;
inline constexpr int kDecodeFusedMaxPairs = 128;

/// Whether the fused decode kernel (lever decode_fused) compiles for this decode GEMM1: its 1024
/// threads have 64 registers each, so GEMM1's rows x halves x (pairs per pass + 4 x vectors)
/// plus the pairs' x pointers stay at most kDecodeFusedRegs (elsewhere the two decode launches
/// run).
inline constexpr int kDecodeFusedRegs = 32;
bool decode_fused_fits(GemmGeometry const& g1);

/// Whether a launch with lever decode_fused takes the fused kernel (else the two decode
/// launches): at most kDecodeFusedMaxPairs pairs, GEMM1 fits (decode_fused_fits), and each of
/// `ctas` CTAs holds in `smem_bytes` of dynamic shared memory its partial dots, h and its share of
/// GEMM2's w2 rows (ceil(K / ctas) columns of min(M x top_k, E) experts): GEMM2 then streams
/// during GEMM1 and runs from shared memory.
bool decode_fused_takes(core::MoeProblem const& p, GemmGeometry const& g1, int ctas,
                        int smem_bytes);

/// NVRTC name expression of the fused decode kernel (lever decode_fused,
/// sm90_decode_fused_kernel.cuh) for a decode GEMM1 geometry: pairs per pass, rows and vectors per
/// lane.
std::string decode_fused_name_expr(GemmGeometry const& g1, int act_id);
}  // namespace moetune::kernels::cuda
