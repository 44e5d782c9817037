// sm90_swap_kernel.cuh: the swap-AB GEMM kernel of the sm90_gather family (launch.swap_ab with
// schedule tma_ws), for mid M, where an expert holds tens to a couple of hundred pairs.
//   - Swap-AB: the weights are wgmma's M side (64 weight rows per consumer warpgroup), the tile's
//     tokens its N side. A tile is one align block (block_m rows of one expert); its wgmma N is
//     the block's pairs rounded up to 16, chosen per tile at run time (swap_dispatch_n), so padding
//     costs at most 15 columns of MMA, not a 64-row granule, and an expert of up to block_m pairs
//     reads each weight tile once.
//   - Warpgroup 0 is the producer: its warps count the tile's pairs (ballots over the block's
//     pair ids; align pads an expert's rows at its end), and thread 0 issues TMA loads of the
//     weight rows (one box; gated GEMM1 through a 5-D map that interleaves gate and up rows in
//     8-row groups, encode_tma_gated_interleave). The token rows, only the 16-row groups that
//     hold pairs, in 64-row boxes and then 16-row ones: GEMM2's h rows by TMA, and GEMM1's x rows
//     by TMA from x's copy in sorted-row order (moe_permute_rows_kernel), except at block_m 64,
//     where the producer's 128 threads gather them with cp.async (the tile's pair -> token list
//     in shared memory, s_tok). The pair count rides with the stage (stage_rows), written before
//     the arrival that releases the stage.
//   - kConsumers warpgroups (2 or 3) each multiply their 64 weight rows by the tile's N tokens
//     (m64 x N x k16 wgmma, N <= block_m, accumulators N / 2 <= 128 registers): thread (warp w,
//     lane l) holds weight rows 16 w + l / 4 (+ 8) and tokens 8 j + 2 (l % 4) (+ 1). Gated: rows
//     r and r + 8 of each 16-row block are the gate and up rows of one output column, so
//     silu(gate) * up is formed in registers. The epilogue transposes them through shared memory
//     (stmatrix .trans, SwapEpilogue) and stores whole token rows in 16-byte pieces: GEMM1 h rows
//     (sorted order), GEMM2 routing weight x y rows of the pair (the tile's pair ids and weights
//     staged in shared memory per warpgroup), which combine sums as for the other kernels.
//   - Persistent over (align blocks x column tiles) in the group_m raster: the first wave static,
//     then each CTA's next tile from the GEMM's counter (p.sched), except the block_m 64 GEMM1,
//     which walks statically.
// NOTE: CTA pairs (clusters of two on column tiles 2u, 2u + 1) that multicast a shared align
// block's token rows gave the same bits and no gain on the H200: layer 0.986-1.017x (S1 M=4096
// 1.017), ncu at S1 M=4096 14-16% fewer L2-to-SM sectors at the same GEMM1 time; so re-reading the
// token rows is not what bounds these GEMMs.
// Deterministic: each output element is one wgmma accumulation chain over k in order; no float
// atomics (the walk's counter only decides which CTA computes a tile, not its bits).
// Not bitwise equal to the tma_ws kernel (the MMA's operand roles differ); within the bf16 band of
// the fp64 reference like every kernel (tests/kernels/cuda/sm90_gather_families_test.cpp).
#pragma once

#include "sm90_common.cuh"
#include "sm90_gather_kernel.cuh"
#include "sm90_tma.cuh"
#include "sm90_wgmma_ops.cuh"
#include "sm90_ws_params.cuh"
#include "sm90_ws_pipeline.cuh"
#include "sm90_ws_schedule.cuh"

namespace moetune_dev {

/// Calls body(IntConst<kN>{}) with kN the smallest multiple of 16 >= n (n <= kMaxN): the tile's
/// wgmma N, chosen once per tile so that its whole k loop is one wgmma width. NOTE: chosen per
/// k-tile instead (the branches inside the k loop), ptxas closed each k-tile's wgmma group with an
/// empty one at the merge, so wait<1> waited for the k-tile just issued and the tensor pipe drained
/// every k-tile (full 256-pair tiles ran 1.5-1.8x slower than the tma_ws kernel at large M on the
/// H200).
template <int kN, int kMaxN, typename Body>
MOETUNE_DEVICE void swap_dispatch_n(int n, Body&& body) {
  if constexpr (kN < kMaxN) {
    if (n > kN) {
      swap_dispatch_n<kN + 16, kMaxN>(n, body);
      return;
    }
  }
  body(IntConst<kN>{});
}

/// Pairs per tile: what the wgmma N can hold (block_m), and the stage bytes.
template <int kBlockM, int kConsumers, bool kGated>
struct SwapTile {
  static constexpr int kWRows = kConsumers * 64;              // weight rows (wgmma M side)
  static constexpr int kCols = kGated ? kWRows / 2 : kWRows;  // output columns per tile
  static constexpr int kWBytes = kWRows * 128;                // block_k 64 = 128-byte rows
  static constexpr int kTBytes = kBlockM * 128;
  static constexpr int kStageBytes = kWBytes + kTBytes;
  static constexpr int kAcc = kBlockM / 2;
};

/// The epilogue's buffer of one consumer warpgroup: 32 token rows of its output columns (64, or
/// 32 gated), in 16-byte pieces placed at piece ^ (a function of the row) so that the 8 rows of
/// one stmatrix matrix land in 8 distinct bank groups.
template <bool kGated>
struct SwapEpilogue {
  static constexpr int kCols = kGated ? 32 : 64;
  static constexpr int kPieces = kCols / 8;  // 16-byte pieces per token row
  static constexpr int kRowBytes = kCols * 2;
  static constexpr int kBytes = 32 * kRowBytes;
  MOETUNE_DEVICE static moe_u32 offset(int t, int piece) {
    const int swz = kGated ? (t >> 1) & 3 : t & 7;  // gated: two 64-byte rows per 128 bytes
    return t * kRowBytes + ((piece ^ swz) << 4);
  }
};

/// What the template parameters of a swap-AB GEMM imply, checked once.
template <int kBlockM_, int kConsumers_, int kStages_, int kGroupM_, int kAct_, bool kIsGemm1_>
struct SwapShape {
  static constexpr int kBlockM = kBlockM_, kConsumers = kConsumers_, kStages = kStages_;
  static constexpr int kGroupM = kGroupM_, kAct = kAct_;
  static constexpr bool kIsGemm1 = kIsGemm1_;
  static constexpr bool kGated = kIsGemm1 && act_gated(kAct);
  static constexpr bool kBias = kIsGemm1 && act_biased(kAct);
  using Tile = SwapTile<kBlockM, kConsumers, kGated>;
  using Epi = SwapEpilogue<kGated>;
  static constexpr int kStageBytes = Tile::kStageBytes;
  static constexpr int kAcc = Tile::kAcc;
  static constexpr int kCols = Tile::kCols;
  // GEMM1 at block_m 64 gathers its token rows of x with cp.async in the producer warpgroup (TMA
  // cannot address a row list on sm_90); at 128 and up it reads them by TMA from x's copy in
  // sorted-row order (moe_permute_rows_kernel), like GEMM2's h. NOTE: the gather at 128 and 192
  // made GEMM1 1.4-1.8x slower on the H200 (S1 M=2048 479 vs 407 us, S3 M=512 984 vs 549: 12
  // cp.async per producer thread and stage starve the consumers), the copy's pass made it 3-8%
  // slower at 64 (S1 M=256 324 vs 314 us). Re-measured with the k loop at one wgmma width: the
  // gather 1.6-2.4x slower (S1 M=4096 GEMM1 956 vs 487 us); the copy written beside the GEMM by the
  // three producer warps that issue no TMA (per-block counts, the pass only for the first wave) no
  // faster (492 vs 484 us).
  static constexpr bool kGather = kIsGemm1 && kBlockM == 64;
  // Producer / consumer registers <= 64 K: 128 x 56 + 384 x 152 (three consumers), 128 x 56 +
  // 256 x 224 (two, gathering) or 128 x 40 + 256 x 232 (at 40 the three-consumer producer with
  // group_m 8 spilled a register).
  static constexpr int kProducerRegs = kGather || kConsumers == 3 ? 56 : 40;
  static constexpr int kConsumerRegs = kConsumers == 3 ? 152 : kGather ? 224 : 232;
  static constexpr int kRowLoads = (kBlockM + 127) / 128;  // GEMM2: the tile's rows a thread stages
  static_assert(kConsumers == 2 || kConsumers == 3, "swap-AB: two or three consumer warpgroups");
  static_assert(kBlockM % 64 == 0 && kBlockM <= (kConsumers == 3 ? 192 : 256),
                "swap-AB: block_m a multiple of 64, <= 192 with three consumers (96 accumulator "
                "registers), <= 256 with two (128)");
  static_assert(kStages >= 2, "swap-AB: at least two stages");
  static_assert(kStageBytes % 1024 == 0, "128-byte swizzle needs 1024-byte aligned tiles");
};

/// The kernel's static shared memory besides the stages.
template <class S>
struct SwapShared {
  WsRing<S::kStages> ring;
  int stage_rows[S::kStages];              // pairs of the tile whose k-tile the stage holds
  int stage_tile[S::kStages];              // the tile itself (dynamic walk; total: the end)
  int s_tok[S::kGather ? S::kBlockM : 1];  // GEMM1: the tile's token rows of x (-1: padding)
  // GEMM2's epilogue rows per consumer warpgroup: pair ids and routing weights of the tile.
  int s_pair[S::kIsGemm1 ? 1 : S::kConsumers][S::kIsGemm1 ? 1 : S::kBlockM];
  float s_scale[S::kIsGemm1 ? 1 : S::kConsumers][S::kIsGemm1 ? 1 : S::kBlockM];
  // The epilogue's token rows per consumer warpgroup (SwapEpilogue).
  alignas(128) char s_epi[S::kConsumers][S::Epi::kBytes];
};

/// The walk over tiles: after the first wave, the next tile from a global counter (p.sched: [0]
/// tiles handed out past the first wave, [1] CTAs done; align zeroes both and the last CTA
/// zeroes them again), fetched a tile ahead by the producer and handed to the consumers in the
/// stage that tile fills first, so that tiles of few pairs (an expert's last block) do not leave
/// some SMs idle at the end. Null (and at block_m 64 GEMM1, whose four producer warps gather): the
/// static walk, CTA c taking tiles c, c + gridDim.x, ...
template <class S>
struct SwapWalk {
  int num_m, num_n, total, num_k;
  int* sched;
  MOETUNE_DEVICE SwapWalk(WsGemmParams const& p) {
    num_m = *p.g.num_blocks;
    num_n = (p.g.n_dim + S::kCols - 1) / S::kCols;
    total = num_m * num_n;
    num_k = p.g.k_dim / 64;
    sched = S::kGather ? nullptr : p.sched;
  }
};

/// The producer warpgroup: per tile, count its pairs, then per k-tile load the weight rows and
/// the token rows that hold pairs into the stage.
template <class S>
struct SwapProducer {
  /// Every warp counts the tile's pairs; GEMM1's warps list its token rows (warp w: every fourth
  /// 32-row slice) after the previous tile's gathers read them.
  MOETUNE_DEVICE static int count_pairs(GemmParams const& g, SwapShared<S>& sh, int row0, int warp,
                                        int lane) {
    if (S::kGather) named_bar_sync(9, 128);
    int n = 0;
#pragma unroll
    for (int i = 0; i < S::kBlockM / 32; ++i) {
      const int pair = g.sorted_pairs[row0 + 32 * i + lane];
      n += __popc(__ballot_sync(0xffffffffu, pair >= 0));
      if (S::kGather && i % 4 == warp)
        sh.s_tok[S::kGather ? 32 * i + lane : 0] = pair >= 0 ? pair / g.top_k : -1;
    }
    if (S::kGather) named_bar_sync(9, 128);
    return n;
  }

  /// Thread 0: the weight rows of expert e from column c0 (gated: 8-row groups of gate and up rows
  /// interleaved) and, by TMA, the token rows of `boxes` 16-row groups.
  MOETUNE_DEVICE static void issue_tma(WsGemmParams const& p, moe_u32 fb, moe_u32 sw, int kt, int e,
                                       int c0, int row0, int boxes) {
    const moe_u32 st = sw + S::Tile::kWBytes;
    mbar_arrive_expect_tx(fb, S::Tile::kWBytes + (S::kGather ? 0 : boxes * 16 * 128));
    if (S::kGated) {
      tma_load_5d<kTmaWeightL2>(sw, &p.tma_b, fb, kt * 64, 0, 0, c0 / 8, e);
    } else {
      tma_load_2d<kTmaWeightL2>(sw, &p.tma_b, fb, kt * 64, e * p.g.b_rows_per_expert + c0);
    }
    if (S::kGather) return;
    // 64-row boxes, then 16-row ones for the rest: at most 6 TMA issues per stage where 16-row
    // boxes alone took 16 at block_m 256 (the same time on the H200: suspected of the full tiles'
    // slowness, they were not its cause).
    const int wide = boxes / 4;
    for (int b = 0; b < wide; ++b) {
      tma_load_2d<kTmaActL2>(st + b * 64 * 128, &p.tma_a_wide, fb, kt * 64, row0 + 64 * b);
    }
    for (int b = 4 * wide; b < boxes; ++b) {
      tma_load_2d<kTmaActL2>(st + b * 16 * 128, &p.tma_a, fb, kt * 64, row0 + 16 * b);
    }
  }

  /// GEMM1 at block_m 64: 8 threads per row (one 16-byte chunk each), 16 rows per pass, the rows
  /// the MMA reads (padding among them zero-filled).
  MOETUNE_DEVICE static void gather_stage(GemmParams const& g, SwapShared<S> const& sh, moe_u32 st,
                                          int kt, int boxes, int tid, moe_u32 fb) {
    const int chunk = tid & 7;
    const moe_bf16* x = reinterpret_cast<const moe_bf16*>(g.a);
#pragma unroll
    for (int i = 0; i < S::kBlockM / 16; ++i) {
      const int r = (tid >> 3) + 16 * i;
      if (r < boxes * 16) {
        const int tok = sh.s_tok[S::kGather ? r : 0];
        const moe_bf16* src = tok >= 0 ? x + (long long)tok * g.k_dim + kt * 64 + chunk * 8 : x;
        cp_async_16(st + swizzled_offset<64>(r, chunk), src, tok >= 0 ? 16 : 0);
      }
    }
    cp_async_mbar_arrive_noinc(fb);
  }

  MOETUNE_DEVICE static void run(WsGemmParams const& p, SwapWalk<S> const& walk, SwapShared<S>& sh,
                                 char* smem, int tid) {
    warpgroup_reg_dealloc<S::kProducerRegs>();
    // GEMM2: one warp (its ballots count a tile's pairs, lane 0 issues the TMA); GEMM1: all four
    // warps also gather the token rows.
    if (!S::kGather && tid >= 32) return;
    GemmParams const& g = p.g;
    const int warp = tid >> 5;
    const int lane = tid & 31;
    WsCursor<S::kStages> cur;
    for (int t = blockIdx.x; t < walk.total;) {
      // The tile after this one, read after this one's loads so that its round trip runs under
      // them. NOTE: read at once, GEMM2 at S2 M=1024/2048 ran 3-4% slower than under the static
      // walk.
      int fetched = 0;
      if (walk.sched != nullptr && lane == 0)
        fetched = atomicAdd(walk.sched, 1) + static_cast<int>(gridDim.x);
      int pid_m, pid_n;
      ws_tile_coords<S::kGroupM>(t, walk.num_m, walk.num_n, pid_m, pid_n);
      const int row0 = pid_m * S::kBlockM;
      const int n = count_pairs(g, sh, row0, warp, lane);
      const int boxes = (n + 15) / 16;  // 16-row token boxes that hold pairs
      const int e = g.block_expert[pid_m];
      for (int kt = 0; kt < walk.num_k; ++kt) {
        mbar_wait(sh.ring.empty_bar(cur.stage), cur.phase ^ 1);
        const moe_u32 fb = sh.ring.full_bar(cur.stage);
        const moe_u32 sw = smem_u32(smem + cur.stage * S::kStageBytes);
        if (tid == 0) {
          sh.stage_rows[cur.stage] = n;
          if (kt == 0) sh.stage_tile[cur.stage] = t;
          issue_tma(p, fb, sw, kt, e, pid_n * S::kCols, row0, boxes);
        }
        if (S::kGather) {
          gather_stage(g, sh, sw + S::Tile::kWBytes, kt, boxes, tid, fb);
        } else {
          __syncwarp();
        }
        cur.advance();
      }
      t = walk.sched != nullptr ? __shfl_sync(0xffffffffu, fetched, 0) : t + gridDim.x;
    }
    if (walk.sched != nullptr) {
      // The end, in the stage the next tile would have filled: stage_tile = total and an arrival
      // without bytes.
      mbar_wait(sh.ring.empty_bar(cur.stage), cur.phase ^ 1);
      if (tid == 0) {
        sh.stage_tile[cur.stage] = walk.total;
        mbar_arrive(sh.ring.full_bar(cur.stage));
        walk_counters_done(walk.sched);
      }
    }
    if (S::kGather) cp_async_wait<0>();
  }
};

/// A consumer warpgroup: weight rows [64 c, 64 c + 64) of each tile times its N tokens, then the
/// transposing epilogue.
template <class S>
struct SwapConsumer {
  SwapShared<S>& sh;
  SwapWalk<S> const& walk;
  char* smem;
  int c, tid, warp, lane;
  /// The k loop at wgmma width kN (the tile's pairs rounded up to 16). The accumulators and the
  /// cursor are the caller's locals, so that they stay in registers across the loop.
  template <int kN>
  MOETUNE_DEVICE void mainloop(float (&acc)[S::kAcc], WsCursor<S::kStages>& cur) const {
    int prev = -1;
    for (int kt = 0; kt < walk.num_k; ++kt) {
      mbar_wait(sh.ring.full_bar(cur.stage), cur.phase);
      // NOTE: GEMM1's token rows were written by cp.async (generic proxy); wgmma reads through
      // the async proxy.
      if (S::kGather) fence_proxy_async();
      const moe_u32 sw = smem_u32(smem + cur.stage * S::kStageBytes);
      fence_operands(acc);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        Wgmma<kN>::mma(acc, wgmma_desc_sw128(sw + c * 64 * 128 + kk * 32),
                       wgmma_desc_sw128(sw + S::Tile::kWBytes + kk * 32), 1);
      }
      wgmma_commit();
      fence_operands(acc);
      wgmma_wait<1>();  // the previous k-tile's wgmma retired: its stage may be refilled
      fence_operands(acc);
      if (prev >= 0 && tid == 0) mbar_arrive(sh.ring.empty_bar(prev));
      prev = cur.stage;
      cur.advance();
    }
    wgmma_wait<0>();
    fence_operands(acc);
    if (prev >= 0 && tid == 0) mbar_arrive(sh.ring.empty_bar(prev));
  }

  /// GEMM2: the tile's pair ids and weights, loaded before the main loop, staged for the store.
  MOETUNE_DEVICE void stage_rows(int const (&my_pair)[S::kRowLoads],
                                 float const (&my_scale)[S::kRowLoads]) const {
    named_bar_sync(1 + c, 128);  // the previous tile's epilogue read its rows
#pragma unroll
    for (int i = 0; i < S::kRowLoads; ++i) {
      const int r = tid + 128 * i;
      if (r < S::kBlockM) {
        sh.s_pair[S::kIsGemm1 ? 0 : c][S::kIsGemm1 ? 0 : r] = my_pair[i];
        sh.s_scale[S::kIsGemm1 ? 0 : c][S::kIsGemm1 ? 0 : r] = my_scale[i];
      }
    }
    named_bar_sync(1 + c, 128);
  }

  MOETUNE_DEVICE static float add(float v, float b) { return S::kBias ? v + b : v; }

  /// Gated GEMM1, pass q: act(gate, up) of tokens 32 q.. into the buffer. Matrix i: output
  /// columns 8 warp + (0..7) x tokens 8 i + (0..7); lane l gives the address of token row l.
  MOETUNE_DEVICE void pack_gated(float const (&acc)[S::kAcc], moe_u32 epi, int q, float bg,
                                 float bu) const {
    moe_u32 r[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int j = 4 * q + i;
      r[i] =
          pack_bf16x2(apply_gated_act<S::kAct>(add(acc[4 * j], bg), add(acc[4 * j + 2], bu)),
                      apply_gated_act<S::kAct>(add(acc[4 * j + 1], bg), add(acc[4 * j + 3], bu)));
    }
    stmatrix_x4_trans(epi + S::Epi::offset(lane, warp), r[0], r[1], r[2], r[3]);
  }

  /// Plain GEMM1 (act) or GEMM2 (routing weight), pass q, into the buffer. brow: the bias row.
  MOETUNE_DEVICE void pack_plain(float const (&acc)[S::kAcc], GemmParams const& g, moe_u32 epi,
                                 int q, int wcol0, const moe_bf16* brow) const {
#pragma unroll
    for (int i2 = 0; i2 < 2; ++i2) {
      moe_u32 r[4];
#pragma unroll
      for (int m = 0; m < 4; ++m) {  // matrix m: token block j, weight rows + 8 (m & 1)
        const int j = 4 * q + 2 * i2 + (m >> 1);
        const int i = 4 * j + 2 * (m & 1);
        float s0 = 1.0f, s1 = 1.0f;
        if (!S::kIsGemm1) {
          s0 = sh.s_scale[S::kIsGemm1 ? 0 : c][S::kIsGemm1 ? 0 : 8 * j + 2 * (lane & 3)];
          s1 = sh.s_scale[S::kIsGemm1 ? 0 : c][S::kIsGemm1 ? 0 : 8 * j + 2 * (lane & 3) + 1];
        }
        // GEMM1: weight row (output column) lane / 4 + 8 (m & 1) of the warp's 16.
        const int col = wcol0 + 16 * warp + 8 * (m & 1) + (lane >> 2);
        const float b = S::kBias && col < g.n_dim ? bias_at(brow, col) : 0.0f;
        r[m] = S::kIsGemm1 ? pack_bf16x2(apply_act<S::kAct>(add(acc[i], b)),
                                         apply_act<S::kAct>(add(acc[i + 1], b)))
                           : pack_bf16x2(acc[i] * s0, acc[i + 1] * s1);
      }
      const int m = lane >> 3;
      const int t = 8 * (2 * i2 + (m >> 1)) + (lane & 7);
      stmatrix_x4_trans(epi + S::Epi::offset(t, 2 * warp + (m & 1)), r[0], r[1], r[2], r[3]);
    }
  }

  /// Stores through shared memory, 32 tokens per pass: stmatrix .trans turns each warp's
  /// accumulator fragments (weight rows x tokens) into token rows of its output columns, then
  /// every thread stores 16-byte pieces of whole token rows (a warpgroup's 64 or 32 columns: 128
  /// or 64 contiguous bytes, whole 32-byte sectors). Same values and bits as storing each element
  /// from its accumulator. NOTE: 2-byte transposed stores leave half of every sector written by
  /// one instruction (ncu: 49% of GEMM2's global sectors excessive).
  MOETUNE_DEVICE void epilogue(float const (&acc)[S::kAcc], GemmParams const& g, int pid_m,
                               int pid_n, long long row0, int n) const {
    moe_bf16* out = reinterpret_cast<moe_bf16*>(g.out);
    const moe_u32 epi = smem_u32(&sh.s_epi[c][0]);
    const int wcol0 = pid_n * S::kCols + c * S::Epi::kCols;  // the warpgroup's first column
    // kBias: b1 of the tile's expert (gated: gate at column col, up at col + n_dim).
    const moe_bf16* brow =
        S::kBias ? g.bias + (long long)g.block_expert[pid_m] * g.b_rows_per_expert : nullptr;
    // Gated: this lane's output column (the weight row of acc[4 j] and, 8 rows on, acc[4 j + 2]).
    const int gcol = wcol0 + 8 * warp + (lane >> 2);
    const bool gb = S::kGated && S::kBias && gcol < g.n_dim;
    const float bg = gb ? bias_at(brow, gcol) : 0.0f;
    const float bu = gb ? bias_at(brow, g.n_dim + gcol) : 0.0f;
#pragma unroll
    for (int q = 0; q < S::kBlockM / 32; ++q) {
      if (32 * q >= n) break;
      named_bar_sync(4 + c, 128);  // the previous pass read the buffer
      if (S::kGated) {
        pack_gated(acc, epi, q, bg, bu);
      } else {
        pack_plain(acc, g, epi, q, wcol0, brow);
      }
      named_bar_sync(4 + c, 128);
#pragma unroll
      for (int idx = tid; idx < 32 * S::Epi::kPieces; idx += 128) {
        const int t = idx / S::Epi::kPieces;
        const int piece = idx % S::Epi::kPieces;
        const int tok = 32 * q + t;
        const int col = wcol0 + 8 * piece;
        if (tok >= n || col >= g.n_dim) continue;
        const long long orow =
            S::kIsGemm1 ? row0 + tok : sh.s_pair[S::kIsGemm1 ? 0 : c][S::kIsGemm1 ? 0 : tok];
        *reinterpret_cast<uint4*>(out + orow * g.n_dim + col) =
            ld_shared_v4(epi + S::Epi::offset(t, piece));
      }
    }
  }

  MOETUNE_DEVICE void run(GemmParams const& g) const {
    warpgroup_reg_alloc<S::kConsumerRegs>();
    WsCursor<S::kStages> cur;
    float acc[S::kAcc];
    for (int t = blockIdx.x;; t += walk.sched != nullptr ? 0 : gridDim.x) {
      if (walk.sched != nullptr) {  // the tile (or the end) rides with its first k-tile's stage
        mbar_wait(sh.ring.full_bar(cur.stage), cur.phase);
        t = sh.stage_tile[cur.stage];
      }
      if (t >= walk.total) break;
      int pid_m, pid_n;
      ws_tile_coords<S::kGroupM>(t, walk.num_m, walk.num_n, pid_m, pid_n);
      const long long row0 = (long long)pid_m * S::kBlockM;
      // GEMM2: the rows' pair ids and weights go out now and are staged after the main loop.
      int my_pair[S::kRowLoads];
      float my_scale[S::kRowLoads];
#pragma unroll
      for (int i = 0; i < S::kRowLoads; ++i) {
        const int r = tid + 128 * i;
        my_pair[i] = -1;
        my_scale[i] = 0.0f;
        if (!S::kIsGemm1 && r < S::kBlockM) {
          my_pair[i] = g.sorted_pairs[row0 + r];
          my_scale[i] = g.sorted_weights[row0 + r];
        }
      }
#pragma unroll
      for (int i = 0; i < S::kAcc; ++i) acc[i] = 0.0f;
      // The tile's pair count rides with its first k-tile's stage (that wait passes again below).
      mbar_wait(sh.ring.full_bar(cur.stage), cur.phase);
      const int n = sh.stage_rows[cur.stage];
      swap_dispatch_n<16, S::kBlockM>(n, [&](auto kn) { mainloop<decltype(kn)::value>(acc, cur); });
      if (!S::kIsGemm1) stage_rows(my_pair, my_scale);
      epilogue(acc, g, pid_m, pid_n, row0, n);
    }
  }
};

template <int kBlockM, int kConsumers, int kStages, int kGroupM, int kAct, bool kIsGemm1>
__global__ void __launch_bounds__((kConsumers + 1) * 128, 1)
    moe_swap_gemm_kernel(const __grid_constant__ WsGemmParams p) {
  using S = SwapShape<kBlockM, kConsumers, kStages, kGroupM, kAct, kIsGemm1>;
  extern __shared__ __align__(1024) char smem_raw[];
  __shared__ SwapShared<S> sh;
  char* smem =
      reinterpret_cast<char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  const int wg = threadIdx.x >> 7;
  const int tid = threadIdx.x & 127;
  if (threadIdx.x == 0) {
    if (!S::kGather) {
      tma_prefetch_descriptor(&p.tma_a);
      tma_prefetch_descriptor(&p.tma_a_wide);
    }
    tma_prefetch_descriptor(&p.tma_b);
    // GEMM1 gathering: the TMA arrival and one cp.async arrival per producer thread (.noinc).
    sh.ring.init(S::kGather ? 1 + 128 : 1, kConsumers);
  }
  __syncthreads();
  pdl_launch_dependents();
  pdl_wait();  // NOTE: align / permute / GEMM1 outputs are visible only after this
  const SwapWalk<S> walk(p);
  if (wg == 0) {
    SwapProducer<S>::run(p, walk, sh, smem, tid);
  } else {
    SwapConsumer<S>{sh, walk, smem, wg - 1, tid, tid >> 5, tid & 31}.run(p.g);
  }
}

}  // namespace moetune_dev
