// sm90_fp8_ws_kernel.cuh: the warp-specialised, persistent fp8 GEMMs of sm90_gather (problem
// quant fp8_tensor / fp8_block, schedule tma_ws), the compute-bound regime's kernel:
//   GEMM1: h[sorted rows, I] = act(dq(xq[token(pair)]) @ dq(w1[e])^T [+ b1[e]])  (bf16)
//   GEMM2: y[pair, K]        = weight[pair] * (dq(hq[sorted row]) @ dq(w2[e])^T)  (bf16)
// It is the bf16 kernel's body (sm90_ws_kernel.cuh: stage ring, static tile walk, TMA / cp.async
// producer, cooperative consumers, shared epilogue) with the fp8 MMA policies of
// sm90_fp8_ws_mma.cuh. fp8 rows are handed to the producer as 2-byte units (k_dim = K / 2, the
// tensor maps 2-byte wide), so its 128-byte stage rows hold 128 e4m3 values: one k-tile is one
// scale block. GEMM1 gathers xq's token rows with cp.async, GEMM2 loads hq's sorted rows by TMA.
// GEMM1 writes hq itself per-tensor (its epilogue divides by GEMM2's static scale) and
// block-scaled when a warpgroup holds whole 128-column groups of h (with their scales).
// Limits: schedule tma_ws (cooperative), block_m 64 (one warpgroup, or two splitting N) or 128
// (two of 64 rows), no clusters, split-K or pingpong. Covered by tests/python/test_fp8_gpu.py.
#pragma once

#include "sm90_common.cuh"
#include "sm90_fp8_ws_mma.cuh"
#include "sm90_ws_kernel.cuh"

namespace moetune_dev {

struct Fp8WsParams {
  WsGemmParams ws;       // a / b / k_dim in 2-byte units; tma_b over the weights, tma_a over hq
  const float* a_scale;  // block: [rows of A, K / 128]; tensor: [1]
  const float* b_scale;  // block: [E, weight rows / 128, K / 128]; tensor: [E]
  /// tensor GEMM1: GEMM2's static input scale; ws.g.out is then hq (e4m3), not h. Else null.
  const float* out_scale;
  /// block GEMM1 in whole 128-column groups of h per warpgroup: hs [sorted rows, I / 128], and
  /// ws.g.out is hq (e4m3), not h. Else null.
  float* h_scales;
};

template <int kBlockM, int kBlockN, int kStages, int kGroupM, int kAct, bool kIsGemm1, int kSplitN,
          bool kBlockScaled>
__global__ void __launch_bounds__((ws_consumers<kBlockM, kSplitN, false>() + 1) * 128, 1)
    moe_fp8_ws_kernel(const __grid_constant__ Fp8WsParams p) {
  using S =
      WsShape<kBlockM, kBlockN, kStages, kGroupM, kAct, kIsGemm1, kSplitN, false, false, 1, 1>;
  static_assert(kBlockM == 64 || kBlockM == 128, "fp8 tma_ws: block_m 64 or 128");
  Fp8WsMma<kBlockScaled, S::kWgN, S::kGated, kIsGemm1> ml;
  ml.a_scale = p.a_scale;
  ml.b_scale = p.b_scale;
  if constexpr (!kBlockScaled) ml.h_scale = p.out_scale;
  if constexpr (kBlockScaled) ml.h_scales = p.h_scales;
  ws_gemm<S>(p.ws, ml);
}

}  // namespace moetune_dev
