// sm90_ws_schedule.cuh: the tile walk of the warp-specialised, persistent GEMMs. gridDim.x CTAs
// (<= SM count) walk the tiles of the device-side block count in the group_m raster, statically:
// CTA c takes tiles c, c + gridDim.x, ... (clusters: per pair of CTAs). Tile t covers k-part
// t % split of output tile t / split (GEMM2 split-K). cluster_m 2: the raster walks pairs of
// m-blocks, the CTA of rank r takes block 2j + r (a "ghost" past the last block loads and computes
// nothing but keeps the stage protocol with its peer); cluster_n 2: likewise over n-tiles. A
// GEMM1 under a GEMM2 of larger block_m (g.m_sub > 1) walks the sub-blocks align listed (those
// that hold pairs), each m-tile's first row read from g.sub_row0.
// NOTE: a walk that keeps tiles sharing operands on the SMs beside one L2 partition (tile ranges
// per side, two counters) gave the same bits and no gain on the H200: layer 0.99-1.05x at S1/S2/S3
// M=512-8192, L2 fabric sectors 0-8% fewer. A dynamic walk (a global tile counter, the next tile
// fetched a tile ahead) was within +-1.6% of this static one on the H200 and was removed.
// Covered by tests/kernels/cuda/sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"
#include "sm90_gather_kernel.cuh"

namespace moetune_dev {

/// Tile t of the (num_m x num_n) grid in the group_m raster (as Triton's GROUP_SIZE_M).
template <int kGroupM>
MOETUNE_DEVICE void ws_tile_coords(int t, int num_m, int num_n, int& pid_m, int& pid_n) {
  const int per_group = kGroupM * num_n;
  const int group = t / per_group;
  const int first_m = group * kGroupM;
  const int size_m = min(num_m - first_m, kGroupM);
  pid_m = first_m + (t % per_group) % size_m;
  pid_n = (t % per_group) / size_m;
}

/// One CTA's view of the walk (S: a WsShape).
template <class S>
struct WsTileWalk {
  const GemmParams* g;
  int num_m, num_n, num_mp, num_np, split, total, num_k, cta0, ctas, rank;

  /// gp: the GEMM's parameters; cta_rank: the CTA's rank in its cluster (0 without one).
  MOETUNE_DEVICE WsTileWalk(GemmParams const& gp, int cta_rank) : g(&gp), rank(cta_rank) {
    num_m = *gp.num_blocks;
    num_n = (gp.n_dim + S::kBlockN - 1) / S::kBlockN;
    split = S::kSplitK ? gp.split_k : 1;  // host-checked to divide k_dim / 64
    num_mp = (num_m + S::kClusterM - 1) / S::kClusterM;
    num_np = (num_n + S::kClusterN - 1) / S::kClusterN;
    total = num_mp * num_np * split;
    num_k = gp.k_dim / 64 / split;
    cta0 = blockIdx.x / S::kCluster;
    ctas = gridDim.x / S::kCluster;
  }
  MOETUNE_DEVICE int tile_row0(int pm) const {
    return g->m_sub > 1 ? g->sub_row0[pm] : pm * S::kBlockM;
  }
  MOETUNE_DEVICE int tile_expert(int pm, int row0) const {
    return g->block_expert[g->m_sub > 1 ? row0 / (S::kBlockM * g->m_sub) : pm];
  }
  /// GEMM1 with a biased activation: the b1 row of m-tile pm's expert (null elsewhere).
  MOETUNE_DEVICE const moe_bf16* bias_row(int pm) const {
    if (!(S::kIsGemm1 && act_biased(S::kAct))) return nullptr;
    return g->bias + (long long)tile_expert(pm, tile_row0(pm)) * g->b_rows_per_expert;
  }
  /// cluster_m 2: rank 0 multicasts the weight tile when both blocks of pair pm exist and share
  /// the expert.
  /// NOTE: pairing an expert's own blocks instead (align listing each pair's blocks, the odd last
  /// blocks paired with each other after all the experts' own pairs) was slower on the H200 where
  /// it changed the pairs, same bits: S2 M=4096 640 -> 694 us, S3 M=1024 1246 -> 1349, S3 2048 +3%;
  /// the likely cause is that an expert's odd last block then ran long after its other blocks, its
  /// weight tile back from DRAM.
  MOETUNE_DEVICE bool pair_shares_b(int pm) const {
    return S::kClusterM == 2 && pm * 2 + 1 < num_m &&
           g->block_expert[pm * 2] == g->block_expert[pm * 2 + 1];
  }
  /// Tile t's coordinates for this CTA (its rank's block or n-tile of the pair); false for a ghost.
  MOETUNE_DEVICE bool cta_tile(int t, int& pid_m, int& pid_n) const {
    ws_tile_coords<S::kGroupM>(t / split, num_mp, num_np, pid_m, pid_n);
    if (S::kClusterM == 2) pid_m = pid_m * 2 + rank;
    if (S::kClusterN == 2) pid_n = pid_n * 2 + rank;
    return !((S::kClusterM == 2 && pid_m >= num_m) || (S::kClusterN == 2 && pid_n >= num_n));
  }
};

}  // namespace moetune_dev
