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

/// The fused decode kernel's CTA (sm90_decode_fused_kernel.cuh kFusedWarps x 32: four consumer
/// warps and a producer warp), its ring slots (kFusedSlots) and the pairs it takes at most
/// (kFusedMaxPairs).
inline constexpr int kDecodeFusedThreads = 160;
inline constexpr int kDecodeFusedSlots = 8;
inline constexpr int kDecodeFusedMaxPairs = 128;

/// Whether the fused decode kernel (lever decode_fused) exists for this GEMM1 config: a decode
/// config (its block_m, pairs per pass, sizes the kernel's accumulators; every decode block_m,
/// at most 16, fits).
bool decode_fused_fits(GemmGeometry const& g1);

/// Whether a launch with lever decode_fused takes the fused kernel (else the two decode
/// launches): at most kDecodeFusedMaxPairs pairs, a decode GEMM1 (decode_fused_fits), and in
/// `smem_bytes` of dynamic shared memory, beside GEMM2's partial dots (ceil(K / ctas) columns x
/// M x top_k floats) and the larger of x [M, K] and h [M x top_k, I] (bf16), kDecodeFusedSlots
/// slots that each hold a GEMM1 column (a w1 row; gate and up for silu) and a w2 row, as the
/// kernel lays them out.
bool decode_fused_takes(core::MoeProblem const& p, GemmGeometry const& g1, int ctas,
                        int smem_bytes);

/// NVRTC name expression of the fused decode kernel (lever decode_fused,
/// sm90_decode_fused_kernel.cuh) for a decode GEMM1 geometry: its activation and pairs per pass.
std::string decode_fused_name_expr(GemmGeometry const& g1, int act_id);
}  // namespace moetune::kernels::cuda
