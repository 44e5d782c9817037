// sm90_moe_epilogue.cuh: epilogues of the two sm90_gather GEMMs, straight from the mma.sync
// accumulator layout (row = lane/4 (+8), col = 2*(lane%4) (+1) per m16n8 fragment).
//   GEMM1: h[sorted_row, n] = act(acc) (gated: silu(gate) * up), rounded to bf16; padding rows
//          (pair -1) are not stored.
//   GEMM2: y[pair, n] = topk_weight[pair] * acc, rounded to bf16 (combine sums them per token);
//          split over K (tma_ws): fp32 partials of each split instead, summed by combine.
// Limits: output column counts are even (bf16x2 stores). Covered by sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

/// kIsGemm1: out = h (row index = row0 + tile row); else out = y (row index = pair id).
/// row_pair: [kBlockM] pair id of each tile row (-1 = padding), in shared or global memory.
/// tid: the thread's index among the threads that hold the accumulators (warp = tid / 32).
/// partial (GEMM2 split over K): when not null, fp32 rows partial[pair] (the split's slice)
/// receive weight * acc instead of bf16 rows of out.
template <class Mainloop, int kAct, bool kIsGemm1>
MOETUNE_DEVICE void moe_epilogue_store(Mainloop const& ml, int tid, moe_bf16* out,
                                       const int* row_pair, long long row0, int n0, int n_dim,
                                       const float* topk_weights, float* partial = nullptr) {
  const int warp = tid >> 5;
  const int lane = tid & 31;
  constexpr int kWarpsN = Mainloop::kWarpColumns;
  const int warp_m = warp / kWarpsN;
  const int warp_n = warp % kWarpsN;
#pragma unroll
  for (int mm = 0; mm < Mainloop::kMmaM; ++mm) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r =
          warp_m * Mainloop::kWarpTileM + mm * Mainloop::kMmaRowStride + (lane >> 2) + half * 8;
      const int pair = row_pair[r];
      if (pair < 0) continue;
      const long long out_row = kIsGemm1 ? row0 + r : (long long)pair;
      const float scale = kIsGemm1 ? 1.0f : topk_weights[pair];
      moe_bf16* out_ptr = out + out_row * n_dim;
#pragma unroll
      for (int nn = 0; nn < Mainloop::kMmaN; ++nn) {
        const int col = n0 + warp_n * Mainloop::kWarpTileN + nn * 8 + (lane & 3) * 2;
        if (col >= n_dim) continue;
        float v0 = ml.acc_at(0, mm, nn, half * 2 + 0);
        float v1 = ml.acc_at(0, mm, nn, half * 2 + 1);
        if (kIsGemm1) {
          if (kAct == kActSiluGated) {
            v0 = act_silu(v0) * ml.acc_at(Mainloop::kNumAcc - 1, mm, nn, half * 2 + 0);
            v1 = act_silu(v1) * ml.acc_at(Mainloop::kNumAcc - 1, mm, nn, half * 2 + 1);
          } else {
            v0 = apply_act<kAct>(v0);
            v1 = apply_act<kAct>(v1);
          }
        } else {
          v0 *= scale;
          v1 *= scale;
          if (partial != nullptr) {
            *reinterpret_cast<float2*>(partial + out_row * n_dim + col) = make_float2(v0, v1);
            continue;
          }
        }
        *reinterpret_cast<moe_u32*>(out_ptr + col) = pack_bf16x2(v0, v1);
      }
    }
  }
}

}  // namespace moetune_dev
