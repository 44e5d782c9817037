// The fp8 regime of sm90_gather (problem quant fp8_tensor / fp8_block): how a KernelConfig maps
// onto moe_fp8_gemm_kernel's and moe_fp8_ws_kernel's template parameters, what can_implement
// accepts and why, the default rule and the search space. Host-only, no CUDA headers (CI checks
// configs without a GPU). Config fields: schedule cooperative (the cp.async loop,
// sm90_fp8_gemm_kernel.cuh) or tma_ws (sm90_fp8_ws_kernel.cuh); block_m 64 or 128 (one consumer
// warpgroup per 64 rows, so num_warps = block_m / 16; tma_ws at block_m 64 also 8: two warpgroups
// splitting the columns); block_n a multiple of 16 per warpgroup with the wgmma width (2 block_n
// for gated GEMM1) at most 256, and block-scaled at most 128 dividing 128; block_k 128 (one fp8
// swizzle atom, one scale block); num_stages 3..8 within shared memory; group_m >= 1; split_k 1; no
// clusters. GEMM1 and GEMM2 share block_m (the align step's padding). Or both GEMMs on the decode
// kernels (launch.swap_ab, schedule auto; sm90_decode_geometry.cpp: block_k / 512 vectors of 16
// e4m3 values per lane and step).
#pragma once

#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"

namespace moetune::kernels::cuda {

/// block_k of every fp8 config: 128 e4m3 values = one 128-byte swizzle row = one scale block.
inline constexpr int kFp8BlockK = 128;

/// The geometry of one fp8 GEMM (GemmGeometry::fp8 set), or why the config cannot run.
core::Result<GemmGeometry> fp8_gemm_geometry(core::MoeProblem const& p, core::KernelConfig const& k,
                                             bool is_gemm1);
/// can_implement of the fp8 regime for the whole layer (p.quant != kNone).
core::Status fp8_can_implement(core::MoeProblem const& p, core::MoeConfig const& c);
/// GEMM1 stores h already quantised for GEMM2, so no quant pass over h runs: the tma_ws GEMM1
/// per-tensor, and block-scaled when a consumer warpgroup holds whole 128-column groups of h
/// (sm90_fp8_ws_mma.cuh kOwnStore; sm90_fp8_epilogue.cuh).
bool fp8_gemm1_writes_hq(GemmGeometry const& g1);
/// NVRTC name expression of an fp8 GEMM kernel.
std::string fp8_gemm_name_expr(GemmGeometry const& g, int act_id, bool is_gemm1);
/// NVRTC name expression of the quantisation kernel of a problem's quant.
std::string fp8_quant_name_expr(core::Quant q);
/// Pairs per expert from which the default rule's tma_ws tiles are 128 rows, not 64.
inline constexpr double kFp8Ws128PairsPerExpert = 48;

/// The decode kernels (launch.swap_ab, sm90_fp8_decode_kernel.cuh) join the search space up to
/// this many tokens, at most kFp8DecodePairsPerExpert pairs per expert. The default rule does not
/// take them: on an H100 the best of them ran F2 M = 1 in 0.94-0.98x the time of tma_ws 64, F3
/// M = 1 in 0.99x, F4 M = 1 in 1.14-1.22x and F2 / F4 M = 4 in 1.18-1.34x (docs/kernels.md).
inline constexpr int64_t kFp8DecodeMaxTokens = 4;
inline constexpr double kFp8DecodePairsPerExpert = 0.5;

/// The default rule (fitted on the F2-F4 shapes of bench/fp8_bench.py at M = 1..16384 on an
/// H100): both GEMMs on tma_ws (a TMA producer warpgroup, persistent), at every M. Below
/// kFp8Ws128PairsPerExpert pairs per expert, block_m 64 with two consumer warpgroups splitting
/// the columns; from there block_m 128 (two consumers of 64 rows). block_n 128 (block-scaled
/// gated GEMM1 at 64 rows: 64), GEMM2 block-scaled 128 / per-tensor 256; a block-scaled GEMM2
/// at block_m 128 6 stages, else 4; group_m 8. The cp.async loop stays in the search space: it
/// was 2-12% slower than tma_ws 64 at 0.03-32 pairs per expert.
core::MoeConfig fp8_default_config(core::MoeProblem const& p);
/// Every config of the regime the tuner may try (before can_implement prunes it).
std::vector<core::MoeConfig> fp8_search_space(core::MoeProblem const& p);

}  // namespace moetune::kernels::cuda
