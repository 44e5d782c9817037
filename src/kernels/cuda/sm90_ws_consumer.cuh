// sm90_ws_consumer.cuh: the consumer warpgroups of the warp-specialised GEMMs, over any MMA
// policy (Acc: sm90_ws_mma.cuh for bf16, sm90_fp8_ws_mma.cuh for fp8).
//   - Cooperative (schedule tma_ws): warpgroups 1.. share each tile: each multiplies 64 rows x
//     (kBlockN / kSplitN) columns (block_m 128: the two split M; block_m 64 with kSplitN = 2: they
//     split N, so a 64-row tile, which wastes less padding at mid M, still keeps two warpgroups
//     busy), releases a stage to the producer as soon as the wgmma that read it retired, and
//     stores its rows with the shared epilogue (sm90_moe_epilogue.cuh). block_m 256: each
//     warpgroup takes 128 rows as two m64 halves and issues only the halves that hold real rows
//     (align pads an expert's rows at the end of its last block), none at all when its 128 rows
//     are padding (it keeps the stage protocol). block_m 192: three warpgroups of 64 rows each; a
//     warpgroup whose rows are all padding idles through the stages (mid M: 128 +- 11 pairs per
//     expert at S2 M=2048 and S3 M=512, where 128-row tiles load about half the experts' weight
//     tiles twice).
//   - Pingpong: warpgroups 1 and 2 take alternate tiles, each the whole kBlockM x kBlockN tile
//     (block_m 128: two m64 wgmma per k-step), so one warpgroup's epilogue runs under the other's
//     main loop (what short-K GEMMs such as S2's GEMM2, K = 768, lose in tma_ws). A 128-row tile
//     whose rows 64..127 are all padding (an expert's last block) runs one m64 wgmma per step.
//     Stage and phase follow a running k-tile count: warpgroup c owns counts of the CTA's tiles
//     c, c + 2, ...; every stage has one consumer. A warpgroup starts waiting on tile i's stages
//     only after the other one has waited on all of tile i - 1's (named barriers 1 and 2): a
//     parity wait can only tell the current phase from the one before, so waiting further ahead
//     would pass on a stage not yet filled.
// Both issue the same wgmma sequence per 64-row half as schedule cooperative, so the three give
// identical bits for the same wgmma width.
// Covered by tests/kernels/cuda/sm90_gather_test.cpp and tests/python/test_fp8_gpu.py.
#pragma once

#include "sm90_common.cuh"
#include "sm90_moe_epilogue.cuh"
#include "sm90_tma.cuh"
#include "sm90_ws_pipeline.cuh"
#include "sm90_ws_schedule.cuh"

namespace moetune_dev {

template <class S, class Acc>
struct WsCooperativeConsumer {
  WsRing<S::kStages>& ring;
  WsTileWalk<S> const& walk;
  char* smem;
  int wg, tid;  // warpgroup (1..) and thread in it
  WsCursor<S::kStages> cur{};

  /// A consumed stage goes back to this CTA's producer and, in a cluster, to the peer's.
  MOETUNE_DEVICE void release(int s) {
    if (tid != 0) return;
    mbar_arrive(ring.empty_bar(s));
    if (S::kCluster == 2) mbar_arrive_cluster(ring.empty_bar(s), walk.rank ^ 1);
  }
  /// A tile without rows for this warpgroup (cluster ghost, or block_m 192 / 256 rows of
  /// padding): every stage consumed without MMA. NOTE: the warpgroup syncs before each release
  /// (the MMA path gets that from wgmma), so no warp can fall two phases behind.
  MOETUNE_DEVICE void idle_tile() {
    for (int kt = 0; kt < walk.num_k; ++kt) {
      mbar_wait(ring.full_bar(cur.stage), cur.phase);
      named_bar_sync(3 + (wg - 1), 128);
      release(cur.stage);
      cur.advance();
    }
  }
  /// The k loop of a tile over the warpgroup's first kH 64-row halves: per k-tile, wait for its
  /// stage, run the policy's MMA, then release the stage it retired (the previous one, or this
  /// one with kRetiresAll); the last after every wgmma retired.
  template <int kH>
  MOETUNE_DEVICE void mainloop(Acc& ml, int cm, int cn, int k0) {
    int prev = -1;
    for (int kt = 0; kt < walk.num_k; ++kt) {
      mbar_wait(ring.full_bar(cur.stage), cur.phase);
      // NOTE: GEMM1's A rows were written by cp.async (generic proxy); wgmma reads through the
      // async proxy.
      if (S::kGather) fence_proxy_async();
      const moe_u32 base = smem_u32(smem + cur.stage * S::kStageBytes);
      ml.template mma_k_tile<kH>(base + cm * S::kHalves * 64 * 128,
                                 base + S::kABytes + cn * S::kWgBRows * 128, k0 + kt);
      if (Acc::kRetiresAll) {
        release(cur.stage);
      } else {
        if (prev >= 0) release(prev);
        prev = cur.stage;
      }
      cur.advance();
    }
    wgmma_wait<0>();
    ml.fence_all();
    if (prev >= 0) release(prev);
  }

  MOETUNE_DEVICE void run(GemmParams const& g, Acc& ml) {
    if (S::kConsumers >= 2) warpgroup_reg_alloc<S::kConsumerRegs>();
    const int cm = (wg - 1) / S::kSplitN;  // row part: rows [64 kHalves cm, +64 kHalves)
    const int cn = (wg - 1) % S::kSplitN;  // column part of the tile
    for (int t = walk.cta0; t < walk.total; t += walk.ctas) {
      int pid_m, pid_n;
      if (!walk.cta_tile(t, pid_m, pid_n)) {
        idle_tile();
        continue;
      }
      float* partial = S::kSplitK ? reinterpret_cast<float*>(g.out) +
                                        (long long)(t % walk.split) * g.num_pairs * g.n_dim
                                  : nullptr;
      // The warpgroup's first row; its halves that start on padding are all padding.
      const long long row0 = (long long)walk.tile_row0(pid_m) + cm * S::kHalves * 64;
      // The epilogue's row loads go out now and have arrived by the end of the main loop (read at
      // the store instead, their round trip to L2 held both warpgroups' tensor cores idle once
      // per tile).
      // NOTE: loading the pair ids at tile start and the routing weights topk_weights[pair] after
      // the first wgmma, which waits there on the pair id, made GEMM2 2-3% slower across calls.
      // The loads here depend on nothing.
      const auto rows =
          load_epilogue_rows<Acc, S::kIsGemm1>(g.sorted_pairs + row0, g.sorted_weights + row0, tid);
      const bool half1 = S::kHalves == 2 && g.sorted_pairs[row0 + 64] >= 0;
      // block_m 192 / 256: a warpgroup whose first row is padding has no rows in this tile.
      if ((S::kHalves == 2 || S::kBlockM == 192) && g.sorted_pairs[row0] < 0) {
        idle_tile();
        continue;
      }
      const int n0 = pid_n * S::kBlockN + cn * S::kWgN;
      ml.begin_tile(walk, pid_m, n0, row0);
      if (S::kHalves == 1 || half1) {
        mainloop<S::kHalves>(ml, cm, cn, (t % walk.split) * walk.num_k);
      } else {
        mainloop<1>(ml, cm, cn, (t % walk.split) * walk.num_k);
      }
      ml.end_tile();
      if constexpr (Acc::kOwnStore) {
        ml.template store<S::kAct>(tid, rows, g, row0, n0, walk.bias_row(pid_m));
      } else {
        moe_epilogue_store<Acc, S::kAct, S::kIsGemm1, Acc::kOutE4m3>(
            ml, tid, rows, g.out, row0, n0, g.n_dim, partial, walk.bias_row(pid_m), ml.out_scale());
      }
    }
  }
};

template <class S, class Acc>
struct WsPingpongConsumer {
  WsRing<S::kStages>& ring;
  WsTileWalk<S> const& walk;
  char* smem;
  int wg, tid;
  unsigned it = 0;  // running k-tile count of the CTA's tile sequence (the producer's stage order)

  /// The k loop over the tile's first kH 64-row halves, stage and phase from the running count.
  /// next_tile: the CTA has a tile after this one (the other warpgroup's), which may start once
  /// this one's stages have all been waited on.
  template <int kH>
  MOETUNE_DEVICE void mainloop(Acc& ml, bool next_tile) {
    const int c = wg - 1;
    int prev = -1;
    for (int kt = 0; kt < walk.num_k; ++kt, ++it) {
      const int stage = static_cast<int>(it % S::kStages);
      mbar_wait(ring.full_bar(stage), static_cast<int>((it / S::kStages) & 1));
      if (S::kGather) fence_proxy_async();  // A rows written by cp.async (generic proxy)
      const moe_u32 a_base = smem_u32(smem + stage * S::kStageBytes);
      ml.template mma_k_tile<kH>(a_base, a_base + S::kABytes, kt);
      if (prev >= 0 && tid == 0) mbar_arrive(ring.empty_bar(prev));
      prev = stage;
    }
    if (next_tile) named_bar_arrive(2 - c, 256);  // the other warpgroup waits on 1 + (1 - c)
    wgmma_wait<0>();
    ml.fence_all();
    if (prev >= 0 && tid == 0) mbar_arrive(ring.empty_bar(prev));
  }

  MOETUNE_DEVICE void run(GemmParams const& g, Acc& ml) {
    static_assert(!Acc::kRetiresAll, "pingpong: the policy keeps one k-tile in flight");
    static_assert(!Acc::kOwnStore, "pingpong: the shared epilogue only");
    warpgroup_reg_alloc<S::kConsumerRegs>();
    const int c = wg - 1;
    const int step = static_cast<int>(gridDim.x);
    it = static_cast<unsigned>(c * walk.num_k);  // this warpgroup's tiles: the CTA's c, c + 2, ..
    for (int t = blockIdx.x + c * step; t < walk.total; t += 2 * step, it += walk.num_k) {
      int pid_m, pid_n;
      ws_tile_coords<S::kGroupM>(t, walk.num_m, walk.num_n, pid_m, pid_n);
      const long long row0 = (long long)pid_m * S::kBlockM;
      // The tile's row loads go out before the wait for the other warpgroup, so they arrive
      // while it finishes its main loop.
      const auto rows =
          load_epilogue_rows<Acc, S::kIsGemm1>(g.sorted_pairs + row0, g.sorted_weights + row0, tid);
      // align pads each expert's rows at the end of its last block: when row 64 is padding, so
      // is the whole second half, and one m64 wgmma per step covers the tile (same bits).
      const bool half1 = S::kHalves == 1 || g.sorted_pairs[row0 + 64] >= 0;
      ml.begin_tile(walk, pid_m, pid_n * S::kBlockN, row0);
      const bool next_tile = t + step < walk.total;
      if (t >= step) named_bar_sync(1 + c, 256);  // not the CTA's first tile
      if (half1) {
        mainloop<S::kHalves>(ml, next_tile);
      } else {
        mainloop<1>(ml, next_tile);
      }
      ml.end_tile();
      moe_epilogue_store<Acc, S::kAct, S::kIsGemm1, Acc::kOutE4m3>(
          ml, tid, rows, g.out, row0, pid_n * S::kBlockN, g.n_dim, nullptr, walk.bias_row(pid_m),
          ml.out_scale());
    }
  }
};

}  // namespace moetune_dev
