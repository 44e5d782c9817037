// sm90_ws_kernel.cuh: the warp-specialised, persistent GEMM kernel of the sm90_gather family
// (schedules tma_ws and pingpong), for the compute-bound regime.
//   - Warpgroup 0 is the producer (registers given back with setmaxnreg): one thread issues TMA
//     loads of the expert's weight tile (two boxes for gated GEMM1: gate rows and up rows) and,
//     for GEMM2, of the expert-sorted h rows; for GEMM1 the 128 producer threads gather the token
//     rows of x with cp.async (TMA cannot address a row list on sm_90), each thread's copies
//     arriving on the stage's barrier (.noinc), except at block_m 192 and 256, where x was copied
//     into sorted-row order first (moe_permute_rows_kernel) and TMA loads it like GEMM2's h.
//   - tma_ws (cooperative): warpgroups 1..2 share each tile: each multiplies 64 rows x
//     (kBlockN / kSplitN) columns (block_m 128: the two split M; block_m 64 with kSplitN = 2: they
//     split N, so a 64-row tile, which wastes less padding at mid M, still keeps two warpgroups
//     busy) with m64 x N x k16 wgmma straight from the 128-byte-swizzled stages, releases a stage
//     to the producer as soon as the wgmma that read it retired (wait<1>), and stores its rows
//     with the shared epilogue (sm90_moe_epilogue.cuh). block_m 256: each warpgroup takes 128
//     rows as two m64 halves and issues only the halves that hold real rows (align pads an
//     expert's rows at the end of its last block), none at all when its 128 rows are padding
//     (it keeps the stage protocol). An expert of up to 256 pairs is then one tile per n-tile:
//     its weight tile is loaded once, and only 64-row granules of padding are multiplied.
//     block_m 192: three warpgroups of 64 rows each (num_warps 12), a warpgroup whose rows are
//     all padding idles through the stages; an expert of up to 192 pairs is one tile per n-tile
//     (mid M: 128 +- 11 pairs per expert at S2 M=2048 and S3 M=512, where 128-row tiles load
//     about half the experts' weight tiles twice). 384 consumer threads share the register file
//     at 152 registers each (producer 40), so a warpgroup's accumulators stay at <= 96. GEMM1
//     reads x by TMA from its copy in sorted-row order, as at 256.
//   - pingpong: warpgroups 1 and 2 take alternate tiles, each the whole kBlockM x kBlockN tile
//     (block_m 128: two m64 wgmma per k16 step), so one warpgroup's epilogue runs under the other's
//     main loop (what short-K GEMMs such as S2's GEMM2, K = 768, lose in tma_ws). A 128-row tile
//     whose rows 64..127 are all padding (an expert's last block) runs one m64 wgmma per step.
//     Stage and phase follow a running k-tile count: warpgroup c owns counts of the CTA's tiles
//     c, c + 2, ...; every stage has one consumer. A warpgroup starts waiting on tile i's stages
//     only after the other one has waited on all of tile i - 1's (named barriers 1 and 2): a
//     parity wait can only tell the current phase from the one before, so waiting further ahead
//     would pass on a stage not yet filled.
//   - Persistent: gridDim.x CTAs (<= SM count) walk the tiles of the device-side block count in
//     the group_m raster; the producer runs ahead into the next tile while consumers store.
//     Static walk: CTA c takes tiles c, c + gridDim.x, ... Lever dynamic_tiles (tma_ws without
//     clusters): after its first tile a CTA takes the next one from a global counter (fetched a
//     tile ahead by the producer, handed to the consumers in the stage it fills first), so the
//     tiles in flight stay a window of consecutive raster tiles however long each one runs (off:
//     within +-1.6% of the static walk on the H200). A
//     GEMM1 under a GEMM2 of larger block_m (g.m_sub > 1) walks the sub-blocks align listed
//     (those that hold pairs), each m-tile's first row read from g.sub_row0.
//   - NOTE: a walk that keeps tiles sharing operands on the SMs beside one L2 partition (tile
//     ranges per side, two counters, this and the swap-AB kernel's dynamic walks) gave the same
//     bits and no gain on the H200: layer 0.99-1.05x at S1/S2/S3 M=512-8192, L2 fabric sectors
//     0-8% fewer. So the mid-M GEMMs' fabric traffic is not the two sides reading the same lines.
// Full barrier of a stage: 1 arrival (expect_tx) + 128 cp.async arrivals for GEMM1, 1 otherwise.
// Empty barrier: one arrival per consumer warpgroup of the tile. Phases flip every kStages
// k-tiles. Same wgmma sequence per 64-row half as schedule cooperative, so the three give
// identical bits for the same wgmma width.
// Covered by tests/kernels/cuda/sm90_gather_test.cpp (configs with schedule tma_ws / pingpong).
#pragma once

#include "sm90_common.cuh"
#include "sm90_gather_kernel.cuh"
#include "sm90_moe_epilogue.cuh"
#include "sm90_tma.cuh"
#include "sm90_wgmma_ops.cuh"

namespace moetune_dev {

struct WsGemmParams {
  TmaDescriptor tma_a;  // GEMM2: h as [max_blocks * block_m rows, I]; unused by GEMM1
  TmaDescriptor tma_b;  // GEMM1: w1 as [E * N1 rows, K]; GEMM2: w2 as [E * K rows, I]
  GemmParams g;
  // Lever dynamic_tiles (tma_ws cooperative, no clusters; null: the static walk): [0] the next
  // tile to hand out past the first wave, [1] CTAs done with it; align zeroes both, and the last
  // CTA to finish zeroes them again, so a GEMM replayed alone starts from zero too.
  int* sched;
  int half_skip;   // lever half_tile_skip (tma_ws block_m 128): see the consumer loop
  int tail_split;  // lever tail_split (tma_ws block_m 128): see the consumer loop
  // Swap-AB (sm90_swap_kernel.cuh): the token rows of tma_a in 64-row boxes (tma_a: 16-row).
  // NOTE: new fields go after it: this struct's maps are 64-byte aligned and the host's 128, so a
  // field before it can move it on one side only (sm90_gather_launch.cpp asserts the host's
  // offsets, which must be these; NVRTC has no offsetof to assert them here).
  TmaDescriptor tma_a_wide;
};

/// The end of a dynamic tile walk (lever dynamic_tiles here, the swap-AB kernel's own walk), by
/// one thread per CTA after its last fetch from sched[0]: counts the CTA done in sched[1], and
/// the last CTA zeroes both for the next launch (every CTA fetched its last tile before it counts
/// itself done, so no fetch follows the reset).
MOETUNE_DEVICE void walk_counters_done(int* sched) {
  if (atomicAdd(sched + 1, 1) == static_cast<int>(gridDim.x) - 1) {
    atomicExch(sched, 0);
    atomicExch(sched + 1, 0);
  }
}

/// Accumulators of one consumer warpgroup, with the epilogue's accessor (every warp owns 16 rows
/// of each of kHalves 64-row halves and all kBlockN columns as n8 fragments; gated: gate
/// fragments first, then up; half mm's registers follow half mm - 1's).
template <int kBlockN, bool kGated, int kHalves = 1>
struct WsAccumulators : WgmmaEpilogueLayout<kBlockN, kGated, kHalves, 64> {
  using Layout = WgmmaEpilogueLayout<kBlockN, kGated, kHalves, 64>;
  static constexpr int kNumAcc = Layout::kNumAcc;
  static constexpr int kWidth = kNumAcc * kBlockN;
  static constexpr int kHalfRegs = kWidth / 2;  // registers of one m64 wgmma accumulator
  float acc[kHalves * kHalfRegs];
  MOETUNE_DEVICE float acc_at(int h, int mm, int nn, int i) const {
    return acc[mm * kHalfRegs + (h * (kBlockN / 8) + nn) * 4 + i];
  }
  MOETUNE_DEVICE void fence_all() {
#pragma unroll
    for (int i = 0; i < kHalves * kHalfRegs; ++i) fence_operand(acc[i]);
  }
  /// One 64-deep k-tile on the first kH halves, the same for every consumer schedule: per k16
  /// step an m64 wgmma per half (A half h at a_base + h * 64 rows of 128 bytes, the B rows at
  /// b_base), committed; returns once the previous k-tile's wgmma retired, so that k-tile's stage
  /// may be released.
  template <int kH>
  MOETUNE_DEVICE void mma_k_tile(moe_u32 a_base, moe_u32 b_base) {
    fence_all();
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        Wgmma<kWidth>::mma(acc + h * kHalfRegs, wgmma_desc_sw128(a_base + h * 64 * 128 + kk * 32),
                           wgmma_desc_sw128(b_base + kk * 32), 1);
      }
    }
    wgmma_commit();
    fence_all();
    wgmma_wait<1>();
    fence_all();
  }
};

/// The epilogue's view of the first kNumAcc * kN / 2 registers of a warpgroup's accumulators,
/// laid out as WsAccumulators<kN, kGated> (lever tail_split: a tail tile's narrower wgmma results).
template <int kN, bool kGated>
struct WsAccumulatorView : WgmmaEpilogueLayout<kN, kGated, 1, 64> {
  const float* acc;
  MOETUNE_DEVICE float acc_at(int h, int, int nn, int i) const {
    return acc[(h * (kN / 8) + nn) * 4 + i];
  }
};

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

/// Consumer warpgroups of a tma_ws / pingpong kernel (block_m 256: two, of 128 rows each;
/// block_m 192: three, of 64 rows each).
template <int kBlockM, int kSplitN, bool kPingpong>
constexpr int ws_consumers() {
  return kPingpong || kBlockM == 256 ? 2 : kBlockM / 64 * kSplitN;
}

/// kSplitK: GEMM2 split over K (g.split_k parts, fp32 partials); a separate instantiation so the
/// unsplit kernels carry no split arithmetic or epilogue branch. kPingpong: schedule pingpong (two
/// consumer warpgroups on alternate whole tiles; kSplitN 1, no split-K). kClusterM 2:
/// launch.cluster_m = 2 (tma_ws only): a pair of CTAs takes m-blocks 2j and 2j+1 of one n-tile;
/// when both belong to one expert, rank 0 loads the weight tile once for both (TMA multicast).
/// kClusterN 2: launch.cluster_n = 2 (tma_ws GEMM2 only): a pair of CTAs takes n-tiles 2i and
/// 2i + 1 of one m-block, and rank 0 loads the h rows once for both (TMA multicast), which cuts
/// the L2-to-SM traffic of a tile by its A share (a third at 128 x 256, two thirds at 256 x 128).
/// On the H200 it was slower or equal in the layer, so no table or search space uses it.
template <int kBlockM, int kBlockN, int kStages, int kGroupM, int kAct, bool kIsGemm1, int kSplitN,
          bool kSplitK, bool kPingpong = false, int kClusterM = 1, int kClusterN = 1>
__global__ void __launch_bounds__((ws_consumers<kBlockM, kSplitN, kPingpong>() + 1) * 128, 1)
    moe_ws_gemm_kernel(const __grid_constant__ WsGemmParams p) {
  constexpr bool kGated = kIsGemm1 && act_gated(kAct);
  // GEMM1 gathers its x rows with cp.async in the producer warpgroup, except at block_m 192 and
  // 256, where they come by TMA from the copy of x in sorted-row order that moe_permute_rows_kernel
  // wrote (g.a; 256 gathered rows per stage starved the consumers under ncu; at 192 the gather made
  // GEMM1 1.3-1.85x slower than 128-row tiles on the H200, S3 M=512 794 vs 612 us).
  // NOTE: at block_m 128, A by TMA from that copy was slower or equal at every benchmark point,
  // equal at S3 M=16384 where the pass is under 1% of GEMM1 (12379 vs 12362 us): the gather does
  // not limit this GEMM.
  // GEMM2's A (h rows) is always loaded by TMA.
  constexpr bool kGather = kIsGemm1 && kBlockM != 256 && kBlockM != 192;
  // A by TMA in 64-row granules, only those that hold pairs, at block_m 192 and 256 (not on 1x2
  // clusters: multicast). NOTE: at block_m 128 too it made S2's pingpong GEMM2 slower on the H200
  // (M=4096 236 vs 228 us), where a 128-row tile saves at most one granule and the producer reads
  // two pair ids per tile for it.
  constexpr bool kGranules = !kGather && kClusterN == 1 && (kBlockM == 256 || kBlockM == 192);
  constexpr int kConsumers = ws_consumers<kBlockM, kSplitN, kPingpong>();
  constexpr int kCluster = kClusterM * kClusterN;  // CTAs per cluster: 1 or 2
  // m64 wgmma per k16 step and warpgroup (at most: halves of padding are skipped)
  constexpr int kHalves = kPingpong || kBlockM == 256 ? kBlockM / 64 / (kPingpong ? 1 : 2) : 1;
  constexpr int kWgN = kBlockN / kSplitN;             // columns per consumer warpgroup
  constexpr int kWgBRows = kGated ? 2 * kWgN : kWgN;  // its B rows: [gate | up] or plain
  constexpr int kBRows = kSplitN * kWgBRows;
  constexpr int kABytes = kBlockM * 128;  // kBlockK = 64 bf16 = 128 bytes per row
  constexpr int kBBytes = kBRows * 128;
  constexpr int kStageBytes = kABytes + kBBytes;
  constexpr int kRowsPerWarp = kBlockM / 4;  // GEMM1 gather: producer warp w owns these rows
  // ... of which lane l keeps the x offsets of rows l + 32 j (j < kOffsPerLane), l < 32 (16 at
  // block_m 64)
  constexpr int kOffsPerLane = kRowsPerWarp > 32 ? kRowsPerWarp / 32 : 1;
  constexpr int kOffLanes = kRowsPerWarp < 32 ? kRowsPerWarp : 32;
  // The gathering producer (GEMM1) needs more registers than the TMA-only one.
  // Three consumers (block_m 192, 512 threads): 128 x 40 + 384 x 152 <= 64 K.
  constexpr int kProducerRegs = kGather ? 56 : 40;
  constexpr int kConsumerRegs = kConsumers == 3 ? 152 : kGather ? 224 : 232;
  // Lever half_tile_skip's path, where it leaves the kernel spill-free: not beside the exact-gelu
  // epilogue (erf) with 128 accumulator registers, which it pushed over the 168-register cap that
  // ptxas allocates under (a 4-byte spill; the compile test refuses any).
  constexpr bool kHalfSkip = kBlockM == 128 && !kPingpong && kSplitN == 1 &&
                             !(kIsGemm1 && act_base(kAct) == kActGelu && kWgBRows / 2 >= 128);
  // Lever tail_split's path (same exclusion): a tile of <= 64 rows runs as 64 rows x kTailN0
  // columns on warpgroup 1 and 64 x (kBlockN - kTailN0) on warpgroup 2 (multiples of 8, >= 32).
  constexpr bool kTailSplit = kHalfSkip && kBlockN >= 64;
  constexpr int kTailN0 = 8 * ((kBlockN / 8 + 1) / 2);
  static_assert(kBlockM == 64 || kBlockM == 128 ||
                    ((kBlockM == 256 || kBlockM == 192) && !kPingpong && kSplitN == 1),
                "tma_ws: block_m must be 64 or 128 (192 or 256 without pingpong or split N)");
  static_assert(
      kBlockM != 192 || (!kSplitK && kClusterM == 1 && kClusterN == 1 && kWgBRows / 2 <= 96),
      "tma_ws block_m 192: no split-K or clusters, <= 96 accumulator registers");
  static_assert(kSplitN == 1 || (kSplitN == 2 && kBlockM == 64),
                "tma_ws: two consumer warpgroups at most (split N only at block_m 64)");
  static_assert(kBlockM != 256 || (!kSplitK && kClusterM == 1 && kHalves * kWgBRows / 2 <= 128),
                "tma_ws block_m 256: no split-K or cluster_m, <= 128 accumulator registers");
  static_assert(kBlockN % (8 * kSplitN) == 0 && kWgBRows <= 256,
                "tma_ws: wgmma N is a multiple of 8, <= 256 per warpgroup");
  static_assert(kStages >= 2, "tma_ws: at least two stages");
  static_assert(!(kSplitK && kIsGemm1), "tma_ws: split-K is for GEMM2 only");
  static_assert(!kPingpong || (kSplitN == 1 && !kSplitK && kHalves * kWgBRows / 2 <= 128),
                "pingpong: whole tiles per warpgroup (no split-N or split-K), <= 128 "
                "accumulator registers");
  static_assert(kClusterM == 1 || (kClusterM == 2 && !kPingpong && !kSplitK),
                "cluster_m 2: tma_ws without split-K");
  static_assert(
      kClusterN == 1 || (kClusterN == 2 && kClusterM == 1 && !kIsGemm1 && !kPingpong && !kSplitK),
      "cluster_n 2: tma_ws GEMM2 without split-K or cluster_m");
  static_assert(kABytes % 1024 == 0 && kStageBytes % 1024 == 0,
                "128-byte swizzle needs 1024-byte aligned tiles");

  extern __shared__ __align__(1024) char smem_raw[];
  __shared__ __align__(8) moe_u64 full_bar[kStages];
  __shared__ __align__(8) moe_u64 empty_bar[kStages];
  // Lever dynamic_tiles: the tile whose first k-tile a stage holds (the producer writes it before
  // its arrival on the stage's full barrier, the consumers read it after their wait), and the
  // gathering producer's broadcast of its next tile (double-buffered by tile parity).
  __shared__ int stage_tile[kStages];
  __shared__ int producer_next[2];
  char* smem =
      reinterpret_cast<char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  const int wg = threadIdx.x >> 7;
  const int tid = threadIdx.x & 127;

  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(&p.tma_b);
    if (!kGather) tma_prefetch_descriptor(&p.tma_a);
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full_bar[s]), kGather ? 1 + 128 : 1);
      // Clusters: a stage is free once the consumers of both CTAs released it (the peer's
      // multicast writes into it).
      mbar_init(smem_u32(&empty_bar[s]), kPingpong ? 1 : kConsumers * kCluster);
    }
    mbar_init_fence();
  }
  // Clusters: the peer's barriers are initialised before any multicast or remote arrival.
  if constexpr (kCluster == 2) {
    cluster_sync();
  } else {
    __syncthreads();
  }
  const int rank = kCluster == 2 ? cluster_cta_rank() : 0;
  pdl_launch_dependents();
  pdl_wait();  // NOTE: align / GEMM1 outputs are visible only after this

  const GemmParams& g = p.g;
  // GEMM1 under a GEMM2 of larger block_m (g.m_sub > 1): m-tile pm is the sub-block that starts
  // at row g.sub_row0[pm] (num_blocks counts those that hold pairs; align lists them in order).
  const int num_m = *g.num_blocks;
  auto tile_row0 = [&](int pm) { return g.m_sub > 1 ? g.sub_row0[pm] : pm * kBlockM; };
  auto tile_expert = [&](int pm, int row0) {
    return g.block_expert[g.m_sub > 1 ? row0 / (kBlockM * g.m_sub) : pm];
  };
  // GEMM1 with kActBias: the b1 row of m-tile pm's expert (null elsewhere).
  auto bias_row = [&](int pm) -> const moe_bf16* {
    if (!(kIsGemm1 && act_biased(kAct))) return nullptr;
    return g.bias + (long long)tile_expert(pm, tile_row0(pm)) * g.b_rows_per_expert;
  };
  const int num_n = (g.n_dim + kBlockN - 1) / kBlockN;
  // GEMM2 may split K (g.split_k parts, host-checked to divide k_dim / 64): tile t covers the
  // k-part t % split of output tile t / split.
  const int split = kSplitK ? g.split_k : 1;
  // cluster_m 2: the raster walks pairs of m-blocks; the CTA of rank r takes block 2j + r (a
  // "ghost" when that is past the last block: it loads and computes nothing, but keeps the stage
  // protocol with its peer). cluster_n 2: likewise over pairs of n-tiles (tile 2i + r).
  const int num_mp = (num_m + kClusterM - 1) / kClusterM;
  const int num_np = (num_n + kClusterN - 1) / kClusterN;
  const int total = num_mp * num_np * split;
  const int num_k = g.k_dim / 64 / split;
  const int cta0 = blockIdx.x / kCluster;
  const int ctas = gridDim.x / kCluster;
  int* const sched = kCluster == 1 && !kPingpong ? p.sched : nullptr;  // lever dynamic_tiles
  // Rank 0 multicasts the weight tile when both blocks of the pair exist and share the expert.
  // NOTE: pairing an expert's own blocks instead (align listing each pair's blocks, the odd last
  // blocks paired with each other after all the experts' own pairs) was slower on the H200 where it
  // changed the pairs, same bits: S2 M=4096 640 -> 694 us, S3 M=1024 1246 -> 1349, S3 2048 +3%; the
  // likely cause is that an expert's odd last block then ran long after its other blocks, its
  // weight tile back from DRAM.
  auto pair_shares_b = [&](int pm) {
    return kClusterM == 2 && pm * 2 + 1 < num_m &&
           g.block_expert[pm * 2] == g.block_expert[pm * 2 + 1];
  };
  // Tile t's coordinates for this CTA (its rank's block or n-tile of the pair); false for a ghost.
  auto cta_tile = [&](int t, int& pid_m, int& pid_n) {
    ws_tile_coords<kGroupM>(t / split, num_mp, num_np, pid_m, pid_n);
    if (kClusterM == 2) pid_m = pid_m * 2 + rank;
    if (kClusterN == 2) pid_n = pid_n * 2 + rank;
    return !((kClusterM == 2 && pid_m >= num_m) || (kClusterN == 2 && pid_n >= num_n));
  };

  if (wg == 0) {
    // ---------------------------------------------------------------- producer warpgroup
    // Producer / consumer registers: 128 x kProducerRegs + 128 kConsumers x kConsumerRegs <= 64 K.
    if (kConsumers >= 2) warpgroup_reg_dealloc<kProducerRegs>();
    const int warp = tid >> 5;
    const int lane = tid & 31;
    int stage = 0, phase = 0;
    // GEMM2 needs one issuing thread; the others leave (a waiting thread that does not arrive
    // anywhere could fall two phases behind and then wait on the wrong parity forever).
    const int producer_end = kGather || tid == 0 ? total : 0;
    for (int t = cta0, parity = 0; t < producer_end; parity ^= 1) {
      // dynamic_tiles: the tile after this one, its round trip under this one's loads
      int fetched = 0;
      if (sched != nullptr && tid == 0) fetched = atomicAdd(sched, 1) + ctas;
      int pid_m, pid_n;
      ws_tile_coords<kGroupM>(t / split, num_mp, num_np, pid_m, pid_n);
      const bool shares_b = pair_shares_b(pid_m);
      // Rank 0 multicasts the h rows when both n-tiles of the pair exist.
      const bool shares_a = kClusterN == 2 && pid_n * 2 + 1 < num_n;
      const bool ghost = !cta_tile(t, pid_m, pid_n);
      const int k0 = (t % split) * num_k;
      const int row0 = ghost ? 0 : tile_row0(pid_m);
      const int b_row =
          ghost ? 0 : tile_expert(pid_m, row0) * g.b_rows_per_expert + pid_n * kBlockN;
      // kGranules (A by TMA at block_m 256): only the 64-row granules that hold pairs. align
      // pads an expert's rows at the end of its block, so those granules are a prefix; a half
      // of padding is skipped by its warpgroup, so no MMA reads a granule not loaded.
      int a_granules = kBlockM / 64;
      if (kGranules && !ghost) {
        a_granules = 1;
#pragma unroll
        for (int gi = 1; gi < kBlockM / 64; ++gi) {
          a_granules += g.sorted_pairs[row0 + 64 * gi] >= 0 ? 1 : 0;
        }
      }
      // GEMM1: x offset of row warp * kRowsPerWarp + 32 j + lane % kOffLanes (-1: padding)
      long long my_off[kOffsPerLane];
#pragma unroll
      for (int j = 0; j < kOffsPerLane; ++j) {
        my_off[j] = -1;
        if (kGather && !ghost) {
          const int pair = g.sorted_pairs[row0 + warp * kRowsPerWarp + 32 * j + lane % kOffLanes];
          my_off[j] = pair >= 0 ? (long long)(pair / g.top_k) * g.k_dim : -1;
        }
      }
      for (int kt = 0; kt < num_k; ++kt) {
        const moe_u32 fb = smem_u32(&full_bar[stage]);
        mbar_wait(smem_u32(&empty_bar[stage]), phase ^ 1);
        const moe_u32 sa = smem_u32(smem + stage * kStageBytes);
        const moe_u32 sb = sa + kABytes;
        // dynamic_tiles: the tile, before the arrival that releases the stage to the consumers
        if (sched != nullptr && tid == 0 && kt == 0) stage_tile[stage] = t;
        if (tid == 0 && ghost) {
          mbar_arrive(fb);  // nothing lands here (its peer's pair shares no weight tile)
        } else if (tid == 0) {
          mbar_arrive_expect_tx(fb, kBBytes + (kGather     ? 0
                                               : kGranules ? a_granules * 64 * 128
                                                           : kABytes));
          if (!shares_b || rank == 0) {
#pragma unroll
            for (int cn = 0; cn < kSplitN; ++cn) {  // box = kWgN rows (the host's tensor map)
              const moe_u32 dst = sb + cn * kWgBRows * 128;
              const int col = (k0 + kt) * 64;
              if (shares_b) {
                tma_load_2d_multicast<kTmaWeightL2>(dst, &p.tma_b, fb, col, b_row + cn * kWgN, 3);
                if (kGated)
                  tma_load_2d_multicast<kTmaWeightL2>(dst + kWgN * 128, &p.tma_b, fb, col,
                                                      b_row + g.n_dim + cn * kWgN, 3);
              } else {
                tma_load_2d<kTmaWeightL2>(dst, &p.tma_b, fb, col, b_row + cn * kWgN);
                if (kGated)
                  tma_load_2d<kTmaWeightL2>(dst + kWgN * 128, &p.tma_b, fb, col,
                                            b_row + g.n_dim + cn * kWgN);
              }
            }
          }
          if (kGranules) {
            for (int gi = 0; gi < a_granules; ++gi) {
              tma_load_2d<kTmaActL2>(sa + gi * 64 * 128, &p.tma_a, fb, (k0 + kt) * 64,
                                     row0 + 64 * gi);
            }
          } else if (!kGather && !shares_a) {
            tma_load_2d<kTmaActL2>(sa, &p.tma_a, fb, (k0 + kt) * 64, row0);
          } else if (!kGather && rank == 0) {
            tma_load_2d_multicast<kTmaActL2>(sa, &p.tma_a, fb, (k0 + kt) * 64, row0, 3);
          }
        }
        if (kGather) {
          // 8 lanes per row (one 16-byte chunk each): every warp instruction reads 4 whole
          // 128-byte row segments. Padding rows (-1) get zeros stored directly (no request);
          // whatever such a row holds reaches only h's padding rows, whose GEMM2 rows no
          // epilogue stores.
          const int chunk = lane & 7;
#pragma unroll
          for (int i = 0; i < kRowsPerWarp / 4; ++i) {
            const int lr = (lane >> 3) + 4 * i;  // row lr is lane lr % 32's offset i / 8
            const long long off = __shfl_sync(0xffffffffu, my_off[i / 8], lr % 32);
            const moe_bf16* src = off >= 0 ? g.a + off + (k0 + kt) * 64 + chunk * 8 : g.a;
            cp_async_16_or_zero_l2<kTmaActL2>(
                sa + swizzled_offset<64>(warp * kRowsPerWarp + lr, chunk), src, off >= 0);
          }
          cp_async_mbar_arrive_noinc(fb);
        }
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
      if (sched == nullptr) {
        t += ctas;
      } else if (!kGather) {
        t = fetched;
      } else {  // every gathering thread needs the tile: thread 0 broadcasts it
        if (tid == 0) producer_next[parity] = fetched;
        named_bar_sync(8, 128);
        t = producer_next[parity];
      }
    }
    if (sched != nullptr && producer_end > 0) {
      // The end, in the stage the next tile would have filled: stage_tile = total, an arrival
      // without bytes (and, gathering, one per thread for the cp.async arrivals it counts).
      mbar_wait(smem_u32(&empty_bar[stage]), phase ^ 1);
      if (tid == 0) {
        stage_tile[stage] = total;
        mbar_arrive(smem_u32(&full_bar[stage]));
      }
      if (kGather) mbar_arrive(smem_u32(&full_bar[stage]));
      if (tid == 0) walk_counters_done(sched);
    }
    if (kGather) cp_async_wait<0>();
  } else if (kPingpong) {
    // ---------------------------------------------------------------- pingpong consumers
    warpgroup_reg_alloc<kConsumerRegs>();
    const int c = wg - 1;
    using Acc = WsAccumulators<kWgN, kGated, kHalves>;
    Acc ml;
    // Running k-tile count of the CTA's tile sequence (the producer's stage order): this
    // warpgroup's tiles are the CTA's tiles c, c + 2, ...
    unsigned it = static_cast<unsigned>(c * num_k);
    // k loop over the tile's first kH 64-row halves, stage and phase from the running count.
    // next_tile: the CTA has a tile after this one (the other warpgroup's), which may start
    // once this one's stages have all been waited on.
    auto mainloop = [&](auto halves, bool next_tile) {
      constexpr int kH = decltype(halves)::value;
      int prev = -1;
      for (int kt = 0; kt < num_k; ++kt, ++it) {
        const int stage = static_cast<int>(it % kStages);
        mbar_wait(smem_u32(&full_bar[stage]), static_cast<int>((it / kStages) & 1));
        if (kGather) fence_proxy_async();  // A rows written by cp.async (generic proxy)
        const moe_u32 a_base = smem_u32(smem + stage * kStageBytes);
        ml.template mma_k_tile<kH>(a_base, a_base + kABytes);
        if (prev >= 0 && tid == 0) mbar_arrive(smem_u32(&empty_bar[prev]));
        prev = stage;
      }
      if (next_tile) named_bar_arrive(2 - c, 256);  // the other warpgroup waits on 1 + (1 - c)
      wgmma_wait<0>();
      ml.fence_all();
      if (prev >= 0 && tid == 0) mbar_arrive(smem_u32(&empty_bar[prev]));
    };
    for (int t = blockIdx.x + c * gridDim.x; t < total; t += 2 * gridDim.x, it += num_k) {
      int pid_m, pid_n;
      ws_tile_coords<kGroupM>(t, num_m, num_n, pid_m, pid_n);
      const long long row0 = (long long)pid_m * kBlockM;
      // The tile's row loads go out before the wait for the other warpgroup, so they arrive
      // while it finishes its main loop.
      const auto rows =
          load_epilogue_rows<Acc, kIsGemm1>(g.sorted_pairs + row0, g.sorted_weights + row0, tid);
      // align pads each expert's rows at the end of its last block: when row 64 is padding, so
      // is the whole second half, and one m64 wgmma per step covers the tile (same bits).
      const bool half1 = kHalves == 1 || g.sorted_pairs[row0 + 64] >= 0;
#pragma unroll
      for (int i = 0; i < kHalves * Acc::kHalfRegs; ++i) ml.acc[i] = 0.0f;
      const bool next_tile = t + static_cast<int>(gridDim.x) < total;
      if (t >= static_cast<int>(gridDim.x)) named_bar_sync(1 + c, 256);  // not the CTA's first
      if (half1) {
        mainloop(IntConst<kHalves>{}, next_tile);
      } else {
        mainloop(IntConst<1>{}, next_tile);
      }
      moe_epilogue_store<Acc, kAct, kIsGemm1>(ml, tid, rows, g.out, row0, pid_n * kBlockN, g.n_dim,
                                              nullptr, bias_row(pid_m));
    }
  } else {
    // ---------------------------------------------------------------- consumer warpgroups
    if (kConsumers >= 2) warpgroup_reg_alloc<kConsumerRegs>();
    const int cm = (wg - 1) / kSplitN;  // row part of the tile: rows [64 kHalves cm, +64 kHalves)
    const int cn = (wg - 1) % kSplitN;  // column part of the tile
    using Acc = WsAccumulators<kWgN, kGated, kHalves>;
    Acc ml;
    int stage = 0, phase = 0;
    // A consumed stage is released to this CTA's producer and, in a cluster, to the peer's.
    auto release = [&](int s) {
      if (tid != 0) return;
      mbar_arrive(smem_u32(&empty_bar[s]));
      if (kCluster == 2) mbar_arrive_cluster(smem_u32(&empty_bar[s]), rank ^ 1);
    };
    auto advance = [&]() {
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    };
    // A tile without rows for this warpgroup (cluster ghost, or block_m 192 / 256 rows of
    // padding): consume every stage without MMA. NOTE: the warpgroup syncs before each release (the
    // MMA path gets that from wgmma), so no warp can fall two phases behind.
    auto idle_tile = [&]() {
      for (int kt = 0; kt < num_k; ++kt) {
        mbar_wait(smem_u32(&full_bar[stage]), phase);
        named_bar_sync(3 + (wg - 1), 128);
        release(stage);
        advance();
      }
    };
    // The k loop of a tile: per k-tile, wait for its stage, `mma(stage base)` (which returns once
    // the previous k-tile's wgmma retired), then release the previous stage; the last one after
    // all wgmma retired.
    auto k_loop = [&](auto&& mma) {
      int prev = -1;
      for (int kt = 0; kt < num_k; ++kt) {
        mbar_wait(smem_u32(&full_bar[stage]), phase);
        // NOTE: GEMM1's A rows were written by cp.async (generic proxy); wgmma reads through the
        // async proxy.
        if (kGather) fence_proxy_async();
        mma(smem_u32(smem + stage * kStageBytes));
        if (prev >= 0) release(prev);
        prev = stage;
        advance();
      }
      wgmma_wait<0>();
      ml.fence_all();
      if (prev >= 0) release(prev);
    };
    // k loop over the warpgroup's first kH 64-row halves.
    auto mainloop = [&](auto halves) {
      constexpr int kH = decltype(halves)::value;
      k_loop([&](moe_u32 base) {
        ml.template mma_k_tile<kH>(base + cm * kHalves * 64 * 128,
                                   base + kABytes + cn * kWgBRows * 128);
      });
    };
    // Lever tail_split: the tile (first row trow0) holds <= 64 rows; this warpgroup multiplies
    // them by its kNc columns from c0 (gate and up rows of those columns when gated) with the
    // same stages, barriers and k16 sequence as a full tile (so the same bits per element) and
    // stores them.
    auto tail_tile = [&](auto nc, int c0, long long trow0, int pid_n, float* partial,
                         const moe_bf16* bias) {
      constexpr int kNc = decltype(nc)::value;
      using View = WsAccumulatorView<kNc, kGated>;
      const auto rows =
          load_epilogue_rows<View, kIsGemm1>(g.sorted_pairs + trow0, g.sorted_weights + trow0, tid);
#pragma unroll
      for (int i = 0; i < Acc::kHalfRegs; ++i) ml.acc[i] = 0.0f;
      k_loop([&](moe_u32 a_base) {
        const moe_u32 b_base = a_base + kABytes + c0 * 128;
        ml.fence_all();
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          Wgmma<kNc>::mma(ml.acc, wgmma_desc_sw128(a_base + kk * 32),
                          wgmma_desc_sw128(b_base + kk * 32), 1);
          if (kGated) {  // the up rows of the same columns, kBlockN rows further
            Wgmma<kNc>::mma(ml.acc + kNc / 2, wgmma_desc_sw128(a_base + kk * 32),
                            wgmma_desc_sw128(b_base + kBlockN * 128 + kk * 32), 1);
          }
        }
        wgmma_commit();
        ml.fence_all();
        wgmma_wait<1>();
        ml.fence_all();
      });
      moe_epilogue_store<View, kAct, kIsGemm1>(View{{}, ml.acc}, tid, rows, g.out, trow0,
                                               pid_n * kBlockN + c0, g.n_dim, partial, bias);
    };
    // The CTA's next tile: the static walk's, or (dynamic_tiles) the one the producer put in the
    // stage that tile's first k-tile fills (the main loop's wait on it then passes at once).
    auto next_tile = [&](int t) {
      if (sched == nullptr) return t + ctas;
      mbar_wait(smem_u32(&full_bar[stage]), phase);
      return stage_tile[stage];
    };
    for (int t = sched == nullptr ? cta0 : next_tile(0); t < total; t = next_tile(t)) {
      int pid_m, pid_n;
      if (!cta_tile(t, pid_m, pid_n)) {
        idle_tile();
        continue;
      }
      float* partial =
          kSplitK ? reinterpret_cast<float*>(g.out) + (long long)(t % split) * g.num_pairs * g.n_dim
                  : nullptr;
      if constexpr (kTailSplit) {
        // Lever tail_split: an expert's last block with <= 64 rows (align pads at its end, so
        // row 64 tells) runs on both warpgroups, each on half the columns: the padding half costs
        // no MMA and neither warpgroup idles (half_tile_skip, if also on, is not reached).
        const long long trow0 = tile_row0(pid_m);
        if (p.tail_split != 0 && g.sorted_pairs[trow0 + 64] < 0) {
          if (cm == 0) {
            tail_tile(IntConst<kTailN0>{}, 0, trow0, pid_n, partial, bias_row(pid_m));
          } else {
            tail_tile(IntConst<kBlockN - kTailN0>{}, kTailN0, trow0, pid_n, partial,
                      bias_row(pid_m));
          }
          continue;
        }
      }
      // The warpgroup's first row; its halves that start on padding are all padding.
      const long long row0 = (long long)tile_row0(pid_m) + cm * kHalves * 64;
      // The epilogue's row loads go out now and have arrived by the end of the main loop (read at
      // the store instead, their round trip to L2 held both warpgroups' tensor cores idle once
      // per tile).
      const auto rows =
          load_epilogue_rows<Acc, kIsGemm1>(g.sorted_pairs + row0, g.sorted_weights + row0, tid);
      const bool half1 = kHalves == 2 && g.sorted_pairs[row0 + 64] >= 0;
      // block_m 192 / 256: a warpgroup whose first row is padding has no rows in this tile; at
      // block_m 128 likewise with lever half_tile_skip (only the second warpgroup's first row
      // can be padding: align pads an expert's rows at the end of its last block).
      if ((kHalves == 2 || kBlockM == 192 || (kHalfSkip && p.half_skip != 0)) &&
          g.sorted_pairs[row0] < 0) {
        idle_tile();
        continue;
      }
      // NOTE: lever half_tile_skip (above) is off: in one call on the H200 (moetune ab, 3 rounds x
      // 20 repeats) it was slower under the static walk (S1 M=4096 1193 vs 1029 us), and with
      // dynamic_tiles, which removes that loss (1042 us), still no faster: the MMA it saves moves
      // GEMM1 onto L2 throughput (ncu at S1 M=4096: SM 76% -> 62%, L2 84% -> 93%).
      // NOTE: lever tail_split (above) is off: beside dynamic_tiles ~1% faster at S1 M=2048/4096
      // but ~1% slower at S2 M=2048 and S3 M=1024, and 6-14% slower alone at S1 M=4096/8192. Its
      // first version (no lever) was correct but slower in the layer on H200: S3 M=512 1019/1024 ->
      // 1068/1065 us, GEMM1 623 -> 688 us, S2 2048-4096 +1-2% (A B A B in one call): at mid M the
      // tile's cost is its weight-tile load, not its MMA.
      // NOTE: loading the pair ids at tile start and the routing weights topk_weights[pair] after
      // the first wgmma, which waits there on the pair id, made GEMM2 2-3% slower across calls. The
      // loads above depend on nothing.
#pragma unroll
      for (int i = 0; i < kHalves * Acc::kHalfRegs; ++i) ml.acc[i] = 0.0f;
      if (kHalves == 1 || half1) {
        mainloop(IntConst<kHalves>{});
      } else {
        mainloop(IntConst<1>{});
      }
      moe_epilogue_store<Acc, kAct, kIsGemm1>(ml, tid, rows, g.out, row0,
                                              pid_n * kBlockN + cn * kWgN, g.n_dim, partial,
                                              bias_row(pid_m));
    }
  }
  // Clusters: neither CTA leaves while its peer may still multicast into its shared memory or
  // arrive on its barriers.
  if constexpr (kCluster == 2) cluster_sync();
}

}  // namespace moetune_dev
