// Geometry of the sm90_gather family: how a KernelConfig maps onto the kernel's template
// parameters (warp layout, shared memory), and every rule can_implement enforces. Host-only,
// no CUDA headers, so CI can check any table's configs without a GPU.
#pragma once

#include <algorithm>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels::cuda {

inline constexpr const char* kSm90GatherFamily = "sm90_gather";
inline constexpr int kSm90GatherVersion = 1;
/// Opt-in shared memory per block on sm_90 (227 KB).
inline constexpr int kSm90MaxSmemBytes = 232448;

/// Template parameters of one GEMM kernel.
struct GemmGeometry {
  int block_m = 64, block_n = 64, block_k = 64;
  int warps_m = 2, warps_n = 2;
  int stages = 3, group_m = 1;
  bool gated = false;  ///< GEMM1 with gate and up halves
  /// 0 = mma.sync main loop (schedule auto), 1 = cp.async + wgmma (schedule cooperative),
  /// 2 = TMA + warp-specialised persistent wgmma (schedules tma_ws and pingpong).
  int mma = 0;
  /// Schedule pingpong (mma 2): two consumer warpgroups on alternate whole tiles; warps_m x
  /// warps_n = 4 x 1 is one warpgroup's layout (each warp: 16 rows of every 64-row half).
  bool pingpong = false;
  /// launch.cluster_m (tma_ws): 2 = CTA pairs over m-blocks, the weight tile multicast when the
  /// pair's blocks share an expert.
  int cluster_m = 1;
  /// launch.cluster_n (tma_ws GEMM2): 2 = CTA pairs over n-tiles of one m-block, the h rows
  /// multicast to both.
  int cluster_n = 1;
  /// launch.swap_ab: the decode kernels (sm90_decode_kernel.cuh): no align, no combine launch;
  /// block_m = pairs per pass, block_n = columns per CTA, warps_m = warps, stages = rows each warp
  /// streams at once, block_k / 256 (fp8: / 512) = 16-byte vectors per lane per row and step.
  bool decode = false;
  /// launch.swap_ab with schedule tma_ws (mma 2): the swap-AB kernel (sm90_swap_kernel.cuh):
  /// weights on wgmma's M side, block_m = pairs per tile (wgmma N at most, chosen per tile),
  /// warps_m = consumer warps (64 weight rows per warpgroup), block_n = output columns per tile.
  bool swap = false;
  /// GEMM2 with schedule tma_ws: K split into this many parts (fp32 partials, summed by combine).
  int split_k = 1;
  /// decode: dynamic shared memory (GEMM2's top_k x block_n fp32 partial dots; fp8 also the
  /// quantised x rows of GEMM1's pass and GEMM2's h rows: sm90_decode_geometry.cpp)
  int decode_smem = 0;
  /// The fp8 regime (problem quant; sm90_fp8_gemm_kernel.cuh): 1 per-tensor, 2 block-scaled;
  /// 0 = bf16. block_k then counts fp8 elements, one byte each.
  int fp8 = 0;

  /// Threads per CTA: the MMA warps (two warpgroups for pingpong), plus the producer warpgroup of
  /// schedules tma_ws and pingpong.
  int threads() const { return (pingpong ? 256 : warps_m * warps_n * 32) + (mma == 2 ? 128 : 0); }
  int b_rows() const { return gated ? 2 * block_n : block_n; }
  /// Dynamic shared memory: stages x (A tile + B tile), bf16 or fp8 (+1 KB alignment slack for
  /// wgmma).
  int smem_bytes() const {
    if (decode) return decode_smem;
    return stages * (block_m + b_rows()) * block_k * (fp8 ? 1 : 2) + (mma ? 1024 : 0);
  }
  /// CTAs per cluster (1: no cluster).
  int cluster_size() const { return cluster_m * cluster_n; }
  /// Persistent kernels launch at most one CTA per SM and loop over tiles.
  bool persistent() const { return mma == 2; }
  /// fp32 accumulator registers per thread.
  int acc_registers() const {
    if (swap) return block_m / 2;
    return (gated ? 2 : 1) * (block_m / warps_m) * (block_n / warps_n) / 32;
  }
};

/// GemmGeometry::fp8 of a problem's quant: 2 block-scaled, 1 per-tensor, 0 bf16.
inline int fp8_mode(core::Quant q) {
  return q == core::Quant::kFp8Block ? 2 : q == core::Quant::kFp8Tensor ? 1 : 0;
}

/// The error every geometry rule returns: kUnsupported, where "sm90_gather", what
/// "<gemm>.<msg>" (gemm is "gemm1" or "gemm2"; msg names the field, the value seen and what to
/// use).
core::Error geometry_error(std::string_view gemm, std::string msg);

/// Derives the geometry of GEMM1 (is_gemm1) or GEMM2 for `problem`, or says why the config
/// cannot run: "gemm1.tile.block_k = 128 does not divide K = 2688; use 32 or 64".
core::Result<GemmGeometry> gemm_geometry(core::MoeProblem const& problem,
                                         core::KernelConfig const& k, bool is_gemm1);

/// can_implement of the family for the whole layer (configs needing a fast path that is off are
/// refused, naming the lever).
core::Status sm90_can_implement(core::MoeProblem const& problem, core::MoeConfig const& c,
                                FastPaths const& fast_paths = {});

/// NVRTC name expression of a GEMM kernel instantiation.
std::string gemm_name_expr(GemmGeometry const& g, int act_id, bool is_gemm1);
/// Activation id shared with the device code (sm90_common.cuh ActId).
int act_id(core::Activation a);
/// The bit a GEMM1 kernel's activation id carries when it adds b1 (sm90_common.cuh kActBias).
inline constexpr int kActBiasBit = 8;

/// Token-expert pairs per expert, M * top_k / E (0 when E = 0): what picks the regime.
double pairs_per_expert(core::MoeProblem const& problem);
/// block_m of the decode kernels (pairs per pass): M rounded up to a power of two, at most 8.
int decode_block_m(core::MoeProblem const& problem);

/// Upper bound of kBlockM-row blocks after padding each expert: ceil(P / BM) + min(E, P).
int64_t max_blocks(int64_t num_pairs, int64_t num_experts, int block_m);

/// Rows align pads each expert to: GEMM2's block_m. GEMM1 may walk it in smaller tma_ws tiles
/// (block_m 128 under a GEMM2 of 256: its tiles are sub-blocks, all-padding ones skipped).
inline int align_block_m(GemmGeometry const& g1, GemmGeometry const& g2) {
  return std::max(g1.block_m, g2.block_m);
}

}  // namespace moetune::kernels::cuda
