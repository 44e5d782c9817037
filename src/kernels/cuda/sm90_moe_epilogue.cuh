// sm90_moe_epilogue.cuh: epilogues of the two sm90_gather GEMMs, from the mma.sync accumulator
// layout (row = lane/4 (+8), col = 2*(lane%4) (+1) per m16n8 fragment).
//   GEMM1: h[sorted_row, n] = act(acc [+ b1[e]]) (gated: act(gate, up)), rounded to bf16;
//          padding rows (pair -1) are not stored. kE4m3 (the per-tensor fp8 tma_ws GEMM1): that
//          bf16 value divided by GEMM2's static scale and stored as e4m3 (1-byte rows).
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
// NOTE: the transpose is most of this epilogue's instructions (per thread of a 128 x 256 GEMM2
// tile: 192 SEL, 64 SHFL; 13.5% of the consumer warps' stall samples at S2 M=8192 under ncu).
// Staging each warp's rows in shared memory with stmatrix and storing whole 128-byte row segments
// instead (2304 bytes per consumer warp) kept the bits but gained nothing consistent on the H200 in
// one call: GEMM2 S2 M=8192 409 -> 398 us, S1 8192 861 -> 893, the layer within the rounds' spread
// everywhere.
// Limits: output column counts are multiples of 8 on the 16-byte path (K and I are multiples of
// block_k), even otherwise (bf16x2 stores). Covered by sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

/// The epilogue's view of a warpgroup's wgmma accumulators (sm90_wgmma_mainloop.cuh and the ws
/// kernel's): one warp column, every warp 16 rows of each of kMmaM m64 results (the result mm
/// starts at row kRowStride * mm) and all kTileN columns as n8 fragments; gated: gate fragments,
/// then up.
template <int kTileN, bool kGated, int kMmaM_, int kRowStride>
struct WgmmaEpilogueLayout {
  static constexpr int kWarpColumns = 1;
  static constexpr int kWarpTileM = 16;
  static constexpr int kWarpTileN = kTileN;
  static constexpr int kMmaM = kMmaM_;
  static constexpr int kMmaRowStride = kRowStride;
  static constexpr int kMmaN = kTileN / 8;
  static constexpr int kNumAcc = kGated ? 2 : 1;
};

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

/// GEMM1's bias at an output column pair (col, col + 1): gate (or plain) and up values.
struct BiasPair {
  float g[2] = {0.0f, 0.0f};
  float u[2] = {0.0f, 0.0f};
};

/// kActBias: the b1 row's values at columns col and col + 1 (col even, n_dim even), the up
/// half's at n_dim + col; zeros past n_dim and without the bias bit. Loaded where used, by a
/// volatile load the compiler cannot hoist out of the store loops: hoisted, a 128-column tile's
/// biases stayed live in 64 registers and the tma_ws GEMM1 spilled.
template <int kAct, bool kIsGemm1>
MOETUNE_DEVICE BiasPair load_bias_pair(const moe_bf16* bias, int col, int n_dim) {
  BiasPair b;
  if (!(kIsGemm1 && act_biased(kAct)) || col >= n_dim) return b;
  auto load = [](const moe_bf16* p, float(&out)[2]) {
    moe_u32 v;
    asm volatile("ld.global.nc.b32 %0, [%1];\n" : "=r"(v) : "l"(p));
    out[0] = __uint_as_float(v << 16);
    out[1] = __uint_as_float(v & 0xffff0000u);
  };
  load(bias + col, b.g);
  if (act_gated(kAct)) load(bias + n_dim + col, b.u);
  return b;
}

/// The value stored at fragment (mm, nn, i) of row half: act(acc) (GEMM1; with kActBias,
/// act(acc + b), b from load_bias_pair at i's column) or scale * acc (GEMM2).
template <class Mainloop, int kAct, bool kIsGemm1>
MOETUNE_DEVICE float epilogue_value(Mainloop const& ml, int mm, int nn, int i, float scale,
                                    BiasPair const& b) {
  float v = ml.acc_at(0, mm, nn, i);
  if (kIsGemm1) {
    if (act_biased(kAct)) v += b.g[i & 1];
    if (act_gated(kAct)) {
      float up = ml.acc_at(Mainloop::kNumAcc - 1, mm, nn, i);
      if (act_biased(kAct)) up += b.u[i & 1];
      return apply_gated_act<kAct>(v, up);
    }
    return apply_act<kAct>(v);
  }
  return v * scale;
}

/// GEMM1 with kActBias: the bias row of the expert whose align block holds sorted row `row0`
/// (align_rows: rows per align block); nullptr otherwise.
template <int kAct, bool kIsGemm1>
MOETUNE_DEVICE const moe_bf16* gemm1_bias_row(const moe_bf16* bias, const int* block_expert,
                                              long long row0, int align_rows, int n1) {
  if (!(kIsGemm1 && act_biased(kAct))) return nullptr;
  return bias + (long long)block_expert[row0 / align_rows] * n1;
}

/// The tile row of fragment row (mm, half) in a lane of warp row warp_m.
template <class Mainloop>
MOETUNE_DEVICE int epilogue_tile_row(int warp_m, int lane, int mm, int half) {
  return warp_m * Mainloop::kWarpTileM + mm * Mainloop::kMmaRowStride + (lane >> 2) + half * 8;
}

/// The tile rows one thread stores, kMmaM x 2 of them (fragment row mm, half): pair id (-1 =
/// padding) and GEMM2's scale (the row's routing weight; unread by GEMM1). Loaded apart from the
/// store, with no load depending on another, so that a persistent kernel issues them when its
/// tile starts and finds them arrived at the epilogue.
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

/// Eight consecutive columns of one output row (four packed bf16x2 in column order) from `col`:
/// bf16 at out_ptr + col, or with kE4m3 divided by the static scale s into e4m3 at byte
/// out_row * n_dim + col of `out` (bf16x2_to_e4m3x2, the quant kernel's rule).
template <bool kE4m3>
MOETUNE_DEVICE void store_cols8(moe_bf16* out, moe_bf16* out_ptr, long long out_row, int n_dim,
                                int col, moe_u32 const (&a)[4], float s) {
  if constexpr (kE4m3) {
    unsigned char* q = reinterpret_cast<unsigned char*>(out) + out_row * n_dim + col;
    *reinterpret_cast<uint2*>(q) =
        make_uint2(bf16x4_to_e4m3x4(a[0], a[1], s), bf16x4_to_e4m3x4(a[2], a[3], s));
  } else {
    *reinterpret_cast<uint4*>(out_ptr + col) = make_uint4(a[0], a[1], a[2], a[3]);
  }
}

/// Two columns (one packed bf16x2) of one output row, as store_cols8.
template <bool kE4m3>
MOETUNE_DEVICE void store_cols2(moe_bf16* out, moe_bf16* out_ptr, long long out_row, int n_dim,
                                int col, moe_u32 v, float s) {
  if constexpr (kE4m3) {
    unsigned char* q = reinterpret_cast<unsigned char*>(out) + out_row * n_dim + col;
    *reinterpret_cast<unsigned short*>(q) = bf16x2_to_e4m3x2(v, s);
  } else {
    *reinterpret_cast<moe_u32*>(out_ptr + col) = v;
  }
}

/// kIsGemm1: out = h (row index = row0 + tile row); else out = y (row index = pair id).
/// rows: load_epilogue_rows of this tile and thread.
/// tid: the thread's index among the threads that hold the accumulators (warp = tid / 32).
/// partial (GEMM2 split over K): when not null, fp32 rows partial[pair] (the split's slice)
/// receive weight * acc instead of bf16 rows of out.
/// bias (GEMM1 with kActBias): the tile expert's b1 row (gemm1_bias_row).
/// kE4m3 (GEMM1 of the per-tensor fp8 regime): h stored as e4m3 rows of n_dim bytes, each bf16
/// value divided by q_scale (GEMM2's static input scale): the quant kernel's pass, fused.
template <class Mainloop, int kAct, bool kIsGemm1, bool kE4m3 = false>
MOETUNE_DEVICE void moe_epilogue_store(Mainloop const& ml, int tid,
                                       EpilogueRows<Mainloop> const& rows, moe_bf16* out,
                                       long long row0, int n0, int n_dim, float* partial = nullptr,
                                       const moe_bf16* bias = nullptr, float q_scale = 1.0f) {
  static_assert(!kE4m3 || kIsGemm1, "e4m3 output: GEMM1's h only");
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
            const int cj = col_w + (4 * g + j) * 8 + (lane & 3) * 2;  // this lane's column pair
            const BiasPair b = load_bias_pair<kAct, kIsGemm1>(bias, cj, n_dim);
            a[j] = pack_bf16x2(
                epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, 4 * g + j, half * 2, scale, b),
                epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, 4 * g + j, half * 2 + 1, scale,
                                                         b));
          }
          quad_transpose(a, lane);
          const int col = col_w + (4 * g + (lane & 3)) * 8;
          if (pair >= 0 && col < n_dim) {
            store_cols8<kE4m3>(out, out_ptr, out_row, n_dim, col, a, q_scale);
          }
        }
        // The last kMmaN % 4 fragments (block_n 232 = 29 x 8, ...): 4-byte stores.
#pragma unroll
        for (int nn = 4 * kGroups; nn < Mainloop::kMmaN; ++nn) {
          const int col = col_w + nn * 8 + (lane & 3) * 2;
          if (pair < 0 || col >= n_dim) continue;
          const BiasPair b = load_bias_pair<kAct, kIsGemm1>(bias, col, n_dim);
          store_cols2<kE4m3>(
              out, out_ptr, out_row, n_dim, col,
              pack_bf16x2(
                  epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, nn, half * 2, scale, b),
                  epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, nn, half * 2 + 1, scale, b)),
              q_scale);
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
        const BiasPair b = load_bias_pair<kAct, kIsGemm1>(bias, col, n_dim);
        const float v0 = epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, nn, half * 2, scale, b);
        const float v1 =
            epilogue_value<Mainloop, kAct, kIsGemm1>(ml, mm, nn, half * 2 + 1, scale, b);
        if (partial != nullptr) {
          *reinterpret_cast<float2*>(partial + out_row * n_dim + col) = make_float2(v0, v1);
        } else {
          store_cols2<kE4m3>(out, out + out_row * n_dim, out_row, n_dim, col, pack_bf16x2(v0, v1),
                             q_scale);
        }
      }
    }
  }
}

}  // namespace moetune_dev
