// sm90_moe_epilogue.cuh: epilogues of the two sm90_gather GEMMs, from the mma.sync accumulator
// layout (row = lane/4 (+8), col = 2*(lane%4) (+1) per m16n8 fragment).
//   GEMM1: h[sorted_row, n] = act(acc) (gated: silu(gate) * up), rounded to bf16; padding rows
//          (pair -1) are not stored.
//   GEMM2: y[pair, n] = topk_weight[pair] * acc, rounded to bf16 (combine sums them per token);
//          split over K (tma_ws): fp32 partials of each split instead, summed by combine. The
//          weight comes from align's copy in sorted-row order (sorted_weights), so the rows a
//          thread stores are two independent loads (load_epilogue_rows) rather than a pair id and
//          then a load at that id.
// bf16 stores: per 32 columns of a warp's tile, the four lanes of a quad (one row) exchange their
// packed bf16x2 values (a 4 x 4 transpose by two xor shuffles), so that each lane stores 8
// consecutive columns with one 16-byte store: a row's 64 bytes per instruction in whole 32-byte
// sectors, instead of 16 bytes in 4-byte pieces; columns past the last 32 as before. Same values,
// same bits.
// Limits: output column counts are multiples of 8 on the 16-byte path (K and I are multiples of
// block_k), even otherwise (bf16x2 stores). Covered by sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

/// Lanes l and l ^ kMask trade two values: the lane with the kMask bit set gives (lo0, lo1) and
/// takes its partner's (hi0, hi1) in their place; the other lane the reverse.
template <int kMask>
MOETUNE_DEVICE void lane_pair_trade(moe_u32& lo0, moe_u32& lo1, moe_u32& hi0, moe_u32& hi1,
                                    int lane) {
  const bool high = (lane & kMask) != 0;
  const moe_u32 s0 = __shfl_xor_sync(0xffffffffu, high ? lo0 : hi0, kMask);
  const moe_u32 s1 = __shfl_xor_sync(0xffffffffu, high ? lo1 : hi1, kMask);
  if (high) {
    lo0 = s0;
    lo1 = s1;
  } else {
    hi0 = s0;
    hi1 = s1;
  }
}

/// 4 x 4 transpose of 32-bit values within each quad of lanes (lane & 3 = q): a[j] = M[q][j] in,
/// a[k] = M[k][q] out: lanes q and q ^ 2 swap the off-diagonal 2 x 2 blocks, then lanes q and
/// q ^ 1 transpose inside each block. Every lane of the warp must call it.
MOETUNE_DEVICE void quad_transpose(moe_u32 (&a)[4], int lane) {
  lane_pair_trade<2>(a[0], a[1], a[2], a[3], lane);
  lane_pair_trade<1>(a[0], a[2], a[1], a[3], lane);
}

/// The value stored at fragment (mm, nn, i) of row half: act(acc) (GEMM1) or scale * acc (GEMM2).
template <class Mainloop, int kAct, bool kIsGemm1>
MOETUNE_DEVICE float epilogue_value(Mainloop const& ml, int mm, int nn, int i, float scale) {
  float v = ml.acc_at(0, mm, nn, i);
  if (kIsGemm1) {
    if (kAct == kActSiluGated) return act_silu(v) * ml.acc_at(Mainloop::kNumAcc - 1, mm, nn, i);
    return apply_act<kAct>(v);
  }
  return v * scale;
}

/// The tile rows one thread stores, kMmaM x 2 of them (fragment row mm, half): pair id (-1 =
/// padding) and GEMM2's scale (the row's routing weight; unread by GEMM1). Loaded apart from the
/// store, with no load depending on another, so that a persistent kernel issues them when its
/// tile starts and finds them arrived at the epilogue.
/// The tile row of fragment row (mm, half) in a lane of warp row warp_m.
template <class Mainloop>
MOETUNE_DEVICE int epilogue_tile_row(int warp_m, int lane, int mm, int half) {
  return warp_m * Mainloop::kWarpTileM + mm * Mainloop::kMmaRowStride + (lane >> 2) + half * 8;
}

template <class Mainloop>
struct EpilogueRows {
  int pair[Mainloop::kMmaM][2];
  float scale[Mainloop::kMmaM][2];
};

/// row_pair / row_scale: the tile's rows (sorted pairs, and GEMM2's sorted routing weights), in
/// shared or global memory. A padding row's scale is loaded too (whatever it holds: no store
/// uses it), so that no load waits on a pair id. tid as in moe_epilogue_store.
template <class Mainloop, bool kIsGemm1>
MOETUNE_DEVICE EpilogueRows<Mainloop> load_epilogue_rows(const int* row_pair,
                                                         const float* row_scale, int tid) {
  const int lane = tid & 31;
  const int warp_m = (tid >> 5) / Mainloop::kWarpColumns;
  EpilogueRows<Mainloop> rows;
#pragma unroll
  for (int mm = 0; mm < Mainloop::kMmaM; ++mm) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = epilogue_tile_row<Mainloop>(warp_m, lane, mm, half);
      rows.pair[mm][half] = row_pair[r];
      rows.scale[mm][half] = kIsGemm1 ? 1.0f : row_scale[r];
    }
  }
  return rows;
}

/// kIsGemm1: out = h (row index = row0 + tile row); else out = y (row index = pair id).
/// rows: load_epilogue_rows of this tile and thread.
/// tid: the thread's index among the threads that hold the accumulators (warp = tid / 32).
/// partial (GEMM2 split over K): when not null, fp32 rows partial[pair] (the split's slice)
/// receive weight * acc instead of bf16 rows of out.
template <class Mainloop, int kAct, bool kIsGemm1>
MOETUNE_DEVICE void moe_epilogue_store(Mainloop const& ml, int tid,
                                       EpilogueRows<Mainloop> const& rows, moe_bf16* out,
                                       long long row0, int n0, int n_dim,
                                       float* partial = nullptr) {
  const int warp = tid >> 5;
  const int lane = tid & 31;
  constexpr int kWarpsN = Mainloop::kWarpColumns;
  const int warp_m = warp / kWarpsN;
  const int warp_n = warp % kWarpsN;
  const int col_w = n0 + warp_n * Mainloop::kWarpTileN;  // the warp's first column
  constexpr int kGroups = Mainloop::kMmaN / 4;           // fragments stored 16 bytes at a time
  if (kGroups > 0 && partial == nullptr) {
#pragma unroll
    for (int mm = 0; mm < Mainloop::kMmaM; ++mm) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        // The shuffles need every lane, padding rows included.
        const int pair = rows.pair[mm][half];
        const float scale = rows.scale[mm][half];
        const long long out_row =
            kIsGemm1 ? row0 + epilogue_tile_row<Mainloop>(warp_m, lane, mm, half) : (long long)pair;
        moe_bf16* out_ptr = out + out_row * n_dim;  // dereferenced only where pair >= 0
#pragma unroll
        for (int g = 0; g < kGroups; ++g) {
          moe_u32 a[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            a[j] = pack_bf16x2(
                epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, 4 * g + j, half * 2, scale),
                epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, 4 * g + j, half * 2 + 1, scale));
          }
          quad_transpose(a, lane);
          const int col = col_w + (4 * g + (lane & 3)) * 8;
          if (pair >= 0 && col < n_dim) {
            *reinterpret_cast<uint4*>(out_ptr + col) = make_uint4(a[0], a[1], a[2], a[3]);
          }
        }
        // The last kMmaN % 4 fragments (block_n 232 = 29 x 8, ...): 4-byte stores.
#pragma unroll
        for (int nn = 4 * kGroups; nn < Mainloop::kMmaN; ++nn) {
          const int col = col_w + nn * 8 + (lane & 3) * 2;
          if (pair < 0 || col >= n_dim) continue;
          *reinterpret_cast<moe_u32*>(out_ptr + col) = pack_bf16x2(
              epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, nn, half * 2, scale),
              epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, nn, half * 2 + 1, scale));
        }
      }
    }
    return;
  }
#pragma unroll
  for (int mm = 0; mm < Mainloop::kMmaM; ++mm) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int pair = rows.pair[mm][half];
      const float scale = rows.scale[mm][half];
      const long long out_row =
          kIsGemm1 ? row0 + epilogue_tile_row<Mainloop>(warp_m, lane, mm, half) : (long long)pair;
      if (pair < 0) continue;
#pragma unroll
      for (int nn = 0; nn < Mainloop::kMmaN; ++nn) {
        const int col = col_w + nn * 8 + (lane & 3) * 2;
        if (col >= n_dim) continue;
        const float v0 = epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, nn, half * 2, scale);
        const float v1 = epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, nn, half * 2 + 1, scale);
        if (partial != nullptr) {
          *reinterpret_cast<float2*>(partial + out_row * n_dim + col) = make_float2(v0, v1);
        } else {
          *reinterpret_cast<moe_u32*>(out + out_row * n_dim + col) = pack_bf16x2(v0, v1);
        }
      }
    }
  }
}

// ---- GEMM2 through shared memory (tma_ws and pingpong, bf16 y rows; kStagedEpilogue) ----
// Per 64 columns of a warp's 16 rows, the scaled bf16 values go to the warp's own staging rows
// with stmatrix (the m16n8 accumulator layout is stmatrix's), and come back as 16-byte row pieces:
// each load and store instruction covers 4 rows x 128 bytes. About half the instructions of the
// shuffle path (no selects or shuffles: 4 stmatrix + 4 loads + 4 stores per 64 columns), and it
// needs kEpilogueStageWarpBytes of shared memory per consumer warp. Same values, same bits.

/// Staging row pitch: 128 bytes + 16, so the 8 rows of a stmatrix matrix, and the 4 rows a load
/// instruction reads, fall on distinct banks.
constexpr int kEpilogueStageRowBytes = 144;
constexpr int kEpilogueStageWarpBytes = 16 * kEpilogueStageRowBytes;

/// The pair ids of the rows a lane stores in the staged epilogue: row (lane / 8) + 4 i of each of
/// its warp's 16-row slabs (fragment row mm: + 64 mm). Loaded when the tile starts, as
/// load_epilogue_rows.
template <class Mainloop>
struct StagedStoreRows {
  int pair[Mainloop::kMmaM][4];
};
template <class Mainloop>
MOETUNE_DEVICE StagedStoreRows<Mainloop> load_staged_store_rows(const int* row_pair, int tid) {
  static_assert(Mainloop::kWarpColumns == 1 && Mainloop::kWarpTileM == 16,
                "staged epilogue: one warp holds 16 rows of every m64 fragment row");
  const int lane = tid & 31;
  const int warp = tid >> 5;
  StagedStoreRows<Mainloop> rows;
#pragma unroll
  for (int mm = 0; mm < Mainloop::kMmaM; ++mm) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      rows.pair[mm][i] = row_pair[warp * 16 + mm * Mainloop::kMmaRowStride + (lane >> 3) + 4 * i];
    }
  }
  return rows;
}

/// GEMM2's y[pair, n0 + c] = scale * acc for the thread's warp; stage: shared address of the warp's
/// kEpilogueStageWarpBytes. rows: load_epilogue_rows (the scales of the fragment rows); srows: the
/// pair ids of the rows this lane stores.
template <class Mainloop>
MOETUNE_DEVICE void moe_epilogue_store_staged(Mainloop const& ml, int tid,
                                              EpilogueRows<Mainloop> const& rows,
                                              StagedStoreRows<Mainloop> const& srows, moe_bf16* out,
                                              int n0, int n_dim, moe_u32 stage) {
  static_assert(Mainloop::kMmaN % 2 == 0, "staged epilogue: fragments in pairs (16 columns)");
  const int lane = tid & 31;
  // stmatrix: lane l addresses row l % 8 of matrix l / 8 (matrices: rows 0-7 / 8-15 of fragment
  // j, then of fragment j + 1).
  const int m = lane >> 3;
  const moe_u32 st_addr =
      stage +
      static_cast<moe_u32>(((m & 1) * 8 + (lane & 7)) * kEpilogueStageRowBytes + (m >> 1) * 16);
  // Loads and stores: lane l takes 8 columns (16 bytes) at column (l % 8) * 8 of row l / 8 + 4 i.
  const moe_u32 ld_addr =
      stage + static_cast<moe_u32>((lane >> 3) * kEpilogueStageRowBytes + (lane & 7) * 16);
#pragma unroll
  for (int mm = 0; mm < Mainloop::kMmaM; ++mm) {
    const float s0 = rows.scale[mm][0];  // row lane / 4
    const float s1 = rows.scale[mm][1];  // row lane / 4 + 8
#pragma unroll
    for (int c0 = 0; c0 < Mainloop::kMmaN; c0 += 8) {  // 64 columns (8 fragments) at a time
      constexpr int kChunkFrags = 8;
      const int frags = Mainloop::kMmaN - c0 < kChunkFrags ? Mainloop::kMmaN - c0 : kChunkFrags;
#pragma unroll
      for (int j = 0; j < kChunkFrags; j += 2) {
        if (j < frags) {
          const int f = c0 + j;
          stmatrix_x4(
              st_addr + static_cast<moe_u32>(j * 16),
              pack_bf16x2(ml.acc_at(0, mm, f, 0) * s0, ml.acc_at(0, mm, f, 1) * s0),
              pack_bf16x2(ml.acc_at(0, mm, f, 2) * s1, ml.acc_at(0, mm, f, 3) * s1),
              pack_bf16x2(ml.acc_at(0, mm, f + 1, 0) * s0, ml.acc_at(0, mm, f + 1, 1) * s0),
              pack_bf16x2(ml.acc_at(0, mm, f + 1, 2) * s1, ml.acc_at(0, mm, f + 1, 3) * s1));
        }
      }
      __syncwarp();
      const int col = n0 + c0 * 8 + (lane & 7) * 8;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint4 v =
            ld_shared_16(ld_addr + static_cast<moe_u32>(4 * i * kEpilogueStageRowBytes));
        const int pair = srows.pair[mm][i];
        if ((lane & 7) < frags && pair >= 0 && col < n_dim) {
          *reinterpret_cast<uint4*>(out + (long long)pair * n_dim + col) = v;
        }
      }
      __syncwarp();  // every lane has read the chunk before the next one overwrites it
    }
  }
}

}  // namespace moetune_dev
