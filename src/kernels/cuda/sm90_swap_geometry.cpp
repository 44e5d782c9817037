// Geometry of the sm90_gather family's swap-AB kernel (sm90_swap_geometry.hpp).
#include "kernels/cuda/sm90_swap_geometry.hpp"

#include <string>
#include <string_view>
#include <utility>

namespace moetune::kernels::cuda {
namespace {

constexpr std::string_view kPre = "launch.swap_ab = true with schedule tma_ws (swap-AB wgmma) ";

core::Error reject(std::string_view gemm, std::string msg) {
  return geometry_error(gemm, std::string(kPre) + std::move(msg));
}

/// The static shared memory beside the stages (sm90_swap_kernel.cuh): two barriers and a pair
/// count per stage, GEMM1's token list at block_m 64 (it gathers x), GEMM2's pair ids and weights
/// per consumer warpgroup, and each consumer warpgroup's epilogue buffer (SwapEpilogue: 32 token
/// rows of its 64 output columns, 32 gated); ptxas reserves it in whole KB.
int swap_static_smem(int stages, int consumers, int block_m, bool is_gemm1, bool gated) {
  const int epilogue = consumers * 32 * (gated ? 32 : 64) * 2;
  const int bytes = stages * 20 + epilogue +
                    (is_gemm1 ? (block_m == 64 ? 4 * block_m : 4) + 8 : consumers * block_m * 8);
  return (bytes + 1023) / 1024 * 1024;
}

}  // namespace

int swap_block_n(int num_warps, bool gated) {
  const int weight_rows = num_warps / 4 * 64;
  return gated ? weight_rows / 2 : weight_rows;
}

namespace {

/// The tile knobs: warps (two or three consumer warpgroups), block_m, block_n, block_k.
core::Status check_swap_tile(core::KernelConfig const& k, std::string_view gemm, bool gated) {
  const auto& t = k.tile;
  const int warps = k.pipeline.num_warps;
  if (warps != 8 && warps != 12) {
    return reject(gemm,
                  "takes pipeline.num_warps = 8 or 12 (two or three consumer warpgroups "
                  "of 64 weight rows; the producer warpgroup is not counted); saw " +
                      std::to_string(warps));
  }
  const int consumers = warps / 4;
  const int max_m = consumers == 3 ? 192 : 256;
  if (t.block_m < 64 || t.block_m > max_m || t.block_m % 64 != 0) {
    return reject(gemm, "takes tile.block_m = pairs per tile (wgmma N at most) in 64, 128, 192" +
                            std::string(consumers == 2 ? ", 256" : "") + " with " +
                            std::to_string(warps) + " warps (" + std::to_string(max_m / 2) +
                            " accumulator registers at most); saw " + std::to_string(t.block_m));
  }
  const int bn = swap_block_n(warps, gated);
  if (t.block_n != bn) {
    return reject(gemm, "takes tile.block_n = " + std::to_string(bn) + " with " +
                            std::to_string(warps) + " warps (64 weight rows per consumer " +
                            "warpgroup" + (gated ? ", gate and up rows of 32 output columns" : "") +
                            "); saw " + std::to_string(t.block_n));
  }
  if (t.block_k != 64) {
    return reject(gemm, "takes tile.block_k = 64 (one 128-byte swizzle atom); saw " +
                            std::to_string(t.block_k));
  }
  return core::Status::Ok();
}

/// The problem's sizes, group_m, and the knobs the kernel does not have (split-K, clusters,
/// thread count), and the stage count.
core::Status check_swap_rest(core::MoeProblem const& p, core::KernelConfig const& k,
                             std::string_view gemm, bool is_gemm1) {
  const auto& pl = k.pipeline;
  const auto& l = k.launch;
  const int64_t k_dim = is_gemm1 ? p.hidden_size : p.intermediate_size;
  const int64_t n_dim = is_gemm1 ? p.intermediate_size : p.hidden_size;
  if (k_dim % 64 != 0 || n_dim % 8 != 0) {
    return reject(gemm, std::string("needs ") + (is_gemm1 ? "K" : "I") +
                            " a multiple of 64 and the output width a multiple of 8; saw K = " +
                            std::to_string(p.hidden_size) +
                            ", I = " + std::to_string(p.intermediate_size));
  }
  if (k.tile.group_m < 1 || k.tile.group_m > 64) {
    return reject(gemm, "takes tile.group_m in 1..64; saw " + std::to_string(k.tile.group_m));
  }
  if (pl.split_k != 1 || l.cluster_m != 1 || l.cluster_n != 1 || l.num_threads != 0) {
    return reject(gemm,
                  "has no split-K, clusters or thread count; use split_k 1, cluster 1x1 and "
                  "num_threads 0; saw split_k " +
                      std::to_string(pl.split_k) + ", cluster " + std::to_string(l.cluster_m) +
                      "x" + std::to_string(l.cluster_n) + ", num_threads " +
                      std::to_string(l.num_threads));
  }
  if (pl.num_stages < 2 || pl.num_stages > 8) {
    return reject(gemm, "takes pipeline.num_stages in 2..8; saw " + std::to_string(pl.num_stages));
  }
  return core::Status::Ok();
}

}  // namespace

core::Result<GemmGeometry> swap_geometry(core::MoeProblem const& p, core::KernelConfig const& k,
                                         bool is_gemm1) {
  const std::string_view gemm = is_gemm1 ? "gemm1" : "gemm2";
  const bool gated = is_gemm1 && core::is_gated(p.activation);
  MOETUNE_RETURN_IF_ERROR(check_swap_tile(k, gemm, gated));
  MOETUNE_RETURN_IF_ERROR(check_swap_rest(p, k, gemm, is_gemm1));
  GemmGeometry g;
  g.block_m = k.tile.block_m;
  g.block_n = swap_block_n(k.pipeline.num_warps, gated);
  g.block_k = 64;
  g.warps_m = k.pipeline.num_warps;
  g.warps_n = 1;
  g.stages = k.pipeline.num_stages;
  g.group_m = k.tile.group_m;
  g.gated = gated;
  g.mma = 2;
  g.swap = true;
  const int consumers = k.pipeline.num_warps / 4;
  const int smem =
      g.smem_bytes() + swap_static_smem(g.stages, consumers, g.block_m, is_gemm1, gated);
  if (smem > kSm90MaxSmemBytes) {
    return reject(gemm, "needs " + std::to_string(smem) + " bytes of shared memory (" +
                            std::to_string(g.stages) + " stages of " +
                            std::to_string((g.block_m + g.b_rows()) * 128) +
                            " bytes), over the sm_90 limit of " +
                            std::to_string(kSm90MaxSmemBytes) + "; use fewer stages");
  }
  return g;
}

}  // namespace moetune::kernels::cuda
