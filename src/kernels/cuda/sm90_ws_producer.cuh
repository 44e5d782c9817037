// sm90_ws_producer.cuh: the producer warpgroup of the warp-specialised GEMMs (registers given
// back with setmaxnreg). Per k-tile of the CTA's walk it waits for the stage to be empty, then
// one thread issues the TMA loads of the expert's weight tile (two boxes per consumer column part
// for gated GEMM1: gate rows and up rows) and, where A comes by TMA, of the sorted A rows (GEMM2's
// h; GEMM1's sorted copy of x at block_m 192 and 256, only its 64-row granules that hold pairs).
// GEMM1 at block_m 64 and 128 gathers the token rows of x with cp.async from all 128 threads (TMA
// cannot address a row list on sm_90), each thread's copies arriving on the stage's barrier
// (.noinc). Clusters: rank 0 multicasts what both CTAs of the pair read (the weight tile of two
// blocks of one expert, or GEMM2's h rows of two n-tiles). The bytes are those of 128-byte rows,
// whatever the element type (S::kABytes, S::kBBytes).
// Covered by tests/kernels/cuda/sm90_gather_test.cpp and tests/python/test_fp8_gpu.py.
#pragma once

#include "sm90_common.cuh"
#include "sm90_tma.cuh"
#include "sm90_ws_params.cuh"
#include "sm90_ws_pipeline.cuh"
#include "sm90_ws_schedule.cuh"

namespace moetune_dev {

template <class S>
struct WsProducer {
  /// One tile's loads: where its rows start, its weight rows, what its pair shares.
  struct Tile {
    bool ghost, shares_a, shares_b;
    int k0, row0, b_row, a_granules;
  };

  MOETUNE_DEVICE static Tile tile_at(WsTileWalk<S> const& walk, int t) {
    GemmParams const& g = *walk.g;
    Tile tl;
    int pid_m, pid_n;
    ws_tile_coords<S::kGroupM>(t / walk.split, walk.num_mp, walk.num_np, pid_m, pid_n);
    tl.shares_b = walk.pair_shares_b(pid_m);
    // Rank 0 multicasts the h rows when both n-tiles of the pair exist.
    tl.shares_a = S::kClusterN == 2 && pid_n * 2 + 1 < walk.num_n;
    tl.ghost = !walk.cta_tile(t, pid_m, pid_n);
    tl.k0 = (t % walk.split) * walk.num_k;
    tl.row0 = tl.ghost ? 0 : walk.tile_row0(pid_m);
    tl.b_row =
        tl.ghost ? 0 : walk.tile_expert(pid_m, tl.row0) * g.b_rows_per_expert + pid_n * S::kBlockN;
    // kGranules: only the 64-row granules that hold pairs. align pads an expert's rows at the end
    // of its block, so those granules are a prefix; a half of padding is skipped by its
    // warpgroup, so no MMA reads a granule not loaded.
    tl.a_granules = S::kBlockM / 64;
    if (S::kGranules && !tl.ghost) {
      tl.a_granules = 1;
#pragma unroll
      for (int gi = 1; gi < S::kBlockM / 64; ++gi) {
        tl.a_granules += g.sorted_pairs[tl.row0 + 64 * gi] >= 0 ? 1 : 0;
      }
    }
    return tl;
  }

  /// Thread 0: the stage's expected bytes and its TMA loads (a ghost only arrives).
  MOETUNE_DEVICE static void issue_tma(WsGemmParams const& p, Tile const& tl, int kt, int rank,
                                       moe_u32 sa, moe_u32 fb) {
    constexpr int kABytes = S::kABytes;
    if (tl.ghost) {
      mbar_arrive(fb);  // nothing lands here (its peer's pair shares no weight tile)
      return;
    }
    mbar_arrive_expect_tx(fb, S::kBBytes + (S::kGather     ? 0
                                            : S::kGranules ? tl.a_granules * 64 * 128
                                                           : kABytes));
    const int col = (tl.k0 + kt) * 64;
    if (!tl.shares_b || rank == 0) {
      const int up = p.g.n_dim;
#pragma unroll
      for (int cn = 0; cn < S::kSplitN; ++cn) {  // box = kWgN rows (the host's tensor map)
        const moe_u32 dst = sa + kABytes + cn * S::kWgBRows * 128;
        const int row = tl.b_row + cn * S::kWgN;
        if (tl.shares_b) {
          tma_load_2d_multicast<kTmaWeightL2>(dst, &p.tma_b, fb, col, row, 3);
          if (S::kGated)
            tma_load_2d_multicast<kTmaWeightL2>(dst + S::kWgN * 128, &p.tma_b, fb, col, row + up,
                                                3);
        } else {
          tma_load_2d<kTmaWeightL2>(dst, &p.tma_b, fb, col, row);
          if (S::kGated)
            tma_load_2d<kTmaWeightL2>(dst + S::kWgN * 128, &p.tma_b, fb, col, row + up);
        }
      }
    }
    if (S::kGranules) {
      for (int gi = 0; gi < tl.a_granules; ++gi) {
        tma_load_2d<kTmaActL2>(sa + gi * 64 * 128, &p.tma_a, fb, col, tl.row0 + 64 * gi);
      }
    } else if (!S::kGather && !tl.shares_a) {
      tma_load_2d<kTmaActL2>(sa, &p.tma_a, fb, col, tl.row0);
    } else if (!S::kGather && rank == 0) {
      tma_load_2d_multicast<kTmaActL2>(sa, &p.tma_a, fb, col, tl.row0, 3);
    }
  }

  /// GEMM1's gather: the a offset of row warp * kRowsPerWarp + 32 j + lane % kOffLanes (-1:
  /// padding).
  MOETUNE_DEVICE static void gather_offsets(GemmParams const& g, Tile const& tl, int warp, int lane,
                                            long long (&my_off)[S::kOffsPerLane]) {
#pragma unroll
    for (int j = 0; j < S::kOffsPerLane; ++j) {
      my_off[j] = -1;
      if (S::kGather && !tl.ghost) {
        const int pair =
            g.sorted_pairs[tl.row0 + warp * S::kRowsPerWarp + 32 * j + lane % S::kOffLanes];
        my_off[j] = pair >= 0 ? (long long)(pair / g.top_k) * g.k_dim : -1;
      }
    }
  }

  /// GEMM1's gather of one stage: 8 lanes per row (one 16-byte chunk each), so every warp
  /// instruction reads 4 whole 128-byte row segments. Padding rows (-1) get zeros stored directly
  /// (no request); whatever such a row holds reaches only h's padding rows, whose GEMM2 rows no
  /// epilogue stores.
  MOETUNE_DEVICE static void gather_stage(GemmParams const& g, Tile const& tl, int kt, int warp,
                                          int lane, long long const (&my_off)[S::kOffsPerLane],
                                          moe_u32 sa, moe_u32 fb) {
    const int chunk = lane & 7;
#pragma unroll
    for (int i = 0; i < S::kRowsPerWarp / 4; ++i) {
      const int lr = (lane >> 3) + 4 * i;  // row lr is lane lr % 32's offset i / 8
      const long long off = __shfl_sync(0xffffffffu, my_off[i / 8], lr % 32);
      const moe_bf16* src = off >= 0 ? g.a + off + (tl.k0 + kt) * 64 + chunk * 8 : g.a;
      cp_async_16_or_zero_l2<kTmaActL2>(
          sa + swizzled_offset<64>(warp * S::kRowsPerWarp + lr, chunk), src, off >= 0);
    }
    cp_async_mbar_arrive_noinc(fb);
  }

  /// The producer warpgroup's whole walk (tid: its thread, 0..127).
  MOETUNE_DEVICE static void run(WsGemmParams const& p, WsTileWalk<S> const& walk,
                                 WsRing<S::kStages>& ring, char* smem, int tid) {
    // Producer / consumer registers: 128 x kProducerRegs + 128 kConsumers x kConsumerRegs <= 64 K.
    if (S::kConsumers >= 2) warpgroup_reg_dealloc<S::kProducerRegs>();
    const int warp = tid >> 5;
    const int lane = tid & 31;
    WsCursor<S::kStages> cur;
    // TMA needs one issuing thread; the others leave (a waiting thread that does not arrive
    // anywhere could fall two phases behind and then wait on the wrong parity forever).
    const int end = S::kGather || tid == 0 ? walk.total : 0;
    for (int t = walk.cta0; t < end; t += walk.ctas) {
      const Tile tl = tile_at(walk, t);
      long long my_off[S::kOffsPerLane];
      gather_offsets(p.g, tl, warp, lane, my_off);
      for (int kt = 0; kt < walk.num_k; ++kt) {
        const moe_u32 fb = ring.full_bar(cur.stage);
        mbar_wait(ring.empty_bar(cur.stage), cur.phase ^ 1);
        const moe_u32 sa = smem_u32(smem + cur.stage * S::kStageBytes);
        if (tid == 0) issue_tma(p, tl, kt, walk.rank, sa, fb);
        if (S::kGather) gather_stage(p.g, tl, kt, warp, lane, my_off, sa, fb);
        cur.advance();
      }
    }
    if (S::kGather) cp_async_wait<0>();
  }
};

}  // namespace moetune_dev
