// sm90_ws_shape.cuh: what the template parameters of a warp-specialised, persistent GEMM kernel
// imply (tile bytes, warpgroups, how A arrives, register split), checked once, for the
// collectives that make up the kernel (sm90_ws_pipeline.cuh, sm90_ws_schedule.cuh,
// sm90_ws_producer.cuh, sm90_ws_consumer.cuh). A stage holds kBlockM A rows and kBRows B rows of
// 128 bytes each (64 bf16 or 128 e4m3 values: one 128-byte swizzle row), so the producer and the
// pipeline are the same for bf16 and fp8; only the MMA policy differs.
// Covered by tests/kernels/cuda/sm90_gather_test.cpp and tests/python/test_fp8_gpu.py.
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

/// Consumer warpgroups of a tma_ws / pingpong kernel (block_m 256: two, of 128 rows each;
/// block_m 192: three, of 64 rows each).
template <int kBlockM, int kSplitN, bool kPingpong>
constexpr int ws_consumers() {
  return kPingpong || kBlockM == 256 ? 2 : kBlockM / 64 * kSplitN;
}

template <int kBlockM_, int kBlockN_, int kStages_, int kGroupM_, int kAct_, bool kIsGemm1_,
          int kSplitN_, bool kSplitK_, bool kPingpong_, int kClusterM_, int kClusterN_>
struct WsShape {
  static constexpr int kBlockM = kBlockM_, kBlockN = kBlockN_, kStages = kStages_;
  static constexpr int kGroupM = kGroupM_, kAct = kAct_, kSplitN = kSplitN_;
  static constexpr int kClusterM = kClusterM_, kClusterN = kClusterN_;
  static constexpr bool kIsGemm1 = kIsGemm1_, kSplitK = kSplitK_, kPingpong = kPingpong_;
  static constexpr bool kGated = kIsGemm1 && act_gated(kAct);
  // GEMM1 gathers its x rows with cp.async in the producer warpgroup, except at block_m 192 and
  // 256, where they come by TMA from the copy of x in sorted-row order that moe_permute_rows_kernel
  // wrote (g.a; 256 gathered rows per stage starved the consumers under ncu; at 192 the gather made
  // GEMM1 1.3-1.85x slower than 128-row tiles on the H200, S3 M=512 794 vs 612 us).
  // NOTE: at block_m 128, A by TMA from that copy was slower or equal at every benchmark point,
  // equal at S3 M=16384 where the pass is under 1% of GEMM1 (12379 vs 12362 us): the gather does
  // not limit this GEMM. GEMM2's A (h rows) is always loaded by TMA.
  static constexpr bool kGather = kIsGemm1 && kBlockM != 256 && kBlockM != 192;
  // A by TMA in 64-row granules, only those that hold pairs, at block_m 192 and 256 (not on 1x2
  // clusters: multicast). NOTE: at block_m 128 too it made S2's pingpong GEMM2 slower on the H200
  // (M=4096 236 vs 228 us), where a 128-row tile saves at most one granule and the producer reads
  // two pair ids per tile for it.
  static constexpr bool kGranules =
      !kGather && kClusterN == 1 && (kBlockM == 256 || kBlockM == 192);
  static constexpr int kConsumers = ws_consumers<kBlockM, kSplitN, kPingpong>();
  static constexpr int kThreads = (kConsumers + 1) * 128;
  static constexpr int kCluster = kClusterM * kClusterN;  // CTAs per cluster: 1 or 2
  // m64 wgmma per k-step and warpgroup (at most: halves of padding are skipped)
  static constexpr int kHalves =
      kPingpong || kBlockM == 256 ? kBlockM / 64 / (kPingpong ? 1 : 2) : 1;
  static constexpr int kWgN = kBlockN / kSplitN;             // columns per consumer warpgroup
  static constexpr int kWgBRows = kGated ? 2 * kWgN : kWgN;  // its B rows: [gate | up] or plain
  static constexpr int kBRows = kSplitN * kWgBRows;
  static constexpr int kABytes = kBlockM * 128;  // 128 bytes per row and stage
  static constexpr int kBBytes = kBRows * 128;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + alignment slack
  static constexpr int kRowsPerWarp = kBlockM / 4;  // GEMM1 gather: producer warp w owns these rows
  // ... of which lane l keeps the x offsets of rows l + 32 j (j < kOffsPerLane), l < 32 (16 at
  // block_m 64)
  static constexpr int kOffsPerLane = kRowsPerWarp > 32 ? kRowsPerWarp / 32 : 1;
  static constexpr int kOffLanes = kRowsPerWarp < 32 ? kRowsPerWarp : 32;
  // The gathering producer (GEMM1) needs more registers than the TMA-only one.
  // Three consumers (block_m 192, 512 threads): 128 x 40 + 384 x 152 <= 64 K.
  static constexpr int kProducerRegs = kGather ? 56 : 40;
  static constexpr int kConsumerRegs = kConsumers == 3 ? 152 : kGather ? 224 : 232;

  static_assert(kBlockM == 64 || kBlockM == 128 ||
                    ((kBlockM == 256 || kBlockM == 192) && !kPingpong && kSplitN == 1),
                "tma_ws: block_m must be 64 or 128 (192 or 256 without pingpong or split N)");
  static_assert(kBlockM != 192 ||
                    (!kSplitK && kClusterM == 1 && kClusterN == 1 && kWgBRows / 2 <= 96),
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
  static_assert(kClusterN == 1 ||
                    (kClusterN == 2 && kClusterM == 1 && !kIsGemm1 && !kPingpong && !kSplitK),
                "cluster_n 2: tma_ws GEMM2 without split-K or cluster_m");
  static_assert(kABytes % 1024 == 0 && kStageBytes % 1024 == 0,
                "128-byte swizzle needs 1024-byte aligned tiles");
  static_assert(kGroupM >= 1, "group_m must be >= 1");
};

}  // namespace moetune_dev
