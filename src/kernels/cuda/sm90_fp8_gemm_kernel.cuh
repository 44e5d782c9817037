// sm90_fp8_gemm_kernel.cuh: the two GEMMs of the fp8 regime of sm90_gather (problem quant
// fp8_tensor / fp8_block), one tile per CTA:
//   GEMM1: h[sorted rows, I] = act(dq(xq[token(pair)]) @ dq(w1[e])^T [+ b1[e]])  (bf16)
//   GEMM2: y[pair, K]        = weight[pair] * (dq(hq[sorted row]) @ dq(w2[e])^T)  (bf16)
// where dq applies the fp32 scales: per 128x128 weight block and per row and 128-column group of
// the input (block-scaled, promoted per k-block in the main loop), or per expert and one input
// scale (per-tensor, applied once). The quantised inputs come from sm90_fp8_quant_kernel.cuh;
// align and combine are the bf16 regime's. Composes sm90_fp8_mainloop.cuh and the shared
// epilogue. Covered by tests/python/test_fp8_gpu.py.
#pragma once

#include "sm90_common.cuh"
#include "sm90_fp8_mainloop.cuh"
#include "sm90_moe_epilogue.cuh"

namespace moetune_dev {

struct Fp8GemmParams {
  const unsigned char* a;  // GEMM1: xq [M, K]; GEMM2: hq [max_blocks * block_m, I]
  const float* a_scale;    // block: [rows of a, k_dim / 128]; tensor: [1]
  const unsigned char* b;  // GEMM1: w1 [E, N1, K]; GEMM2: w2 [E, K, I]
  const float* b_scale;    // block: [E, b_rows_per_expert / 128, k_dim / 128]; tensor: [E]
  moe_bf16* out;           // GEMM1: h; GEMM2: y [M * top_k, K]
  const int* sorted_pairs;
  const int* block_expert;
  const int* num_blocks;
  const float* sorted_weights;
  const moe_bf16* bias;   // GEMM1 with kActBias: b1 [E, N1]; null elsewhere
  int k_dim;              // K (GEMM1) or I (GEMM2)
  int n_dim;              // I (GEMM1) or K (GEMM2)
  int b_rows_per_expert;  // N1 (GEMM1) or K (GEMM2)
  int top_k;
  int max_blocks;
};

/// The group-M raster of the non-persistent GEMMs (as Triton's GROUP_SIZE_M): consecutive CTAs
/// share the weight tile (pid_n).
template <int kGroupM>
MOETUNE_DEVICE void group_m_tile(int pid, int num_pid_n, int max_blocks, int& pid_m, int& pid_n) {
  const int in_group = kGroupM * num_pid_n;
  const int first_m = (pid / in_group) * kGroupM;
  const int size_m = min(max_blocks - first_m, kGroupM);
  pid_m = first_m + (pid % in_group) % size_m;
  pid_n = (pid % in_group) / size_m;
}

/// The block scales of this thread's rows and of the tile's weight blocks.
template <class Mainloop, bool kIsGemm1>
MOETUNE_DEVICE Fp8TileScales fp8_tile_scales(Fp8GemmParams const& p, const long long* a_row,
                                             int expert, int n0) {
  const int kb = p.k_dim / 128;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  Fp8TileScales s;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const long long r = a_row[epilogue_tile_row<Mainloop>(warp, lane, 0, half)];
    s.a_row[half] = p.a_scale + (r >= 0 ? r : 0) * kb;  // padding rows: any valid row
  }
  const float* e = p.b_scale + (long long)expert * (p.b_rows_per_expert / 128) * kb;
  s.b_gate = e + (long long)(n0 / 128) * kb;
  s.b_up = Mainloop::kNumAcc == 2 ? e + (long long)((p.n_dim + n0) / 128) * kb : s.b_gate;
  return s;
}

template <int kBlockM, int kBlockN, int kStages, int kGroupM, int kAct, bool kIsGemm1,
          bool kBlockScaled>
__global__ void __launch_bounds__(kBlockM * 2, 1) moe_fp8_gemm_kernel(Fp8GemmParams p) {
  constexpr bool kGated = kIsGemm1 && act_gated(kAct);
  using Mainloop = Fp8WgmmaMainloop<kBlockM, kBlockN, kStages, kGated, kBlockScaled>;
  static_assert(kGroupM >= 1, "group_m must be >= 1");
  extern __shared__ __align__(1024) char smem[];
  __shared__ long long a_off[kBlockM];  // 2-byte units (-1 = padding: a zero row)
  __shared__ long long a_row[kBlockM];  // row of a (and of its scales); -1 = padding
  __shared__ int row_pair[kBlockM];
  __shared__ float row_weight[kIsGemm1 ? 1 : kBlockM];

  pdl_launch_dependents();
  pdl_wait();  // NOTE: align and the quantised inputs are visible only after this
  int pid_m, pid_n;
  group_m_tile<kGroupM>(blockIdx.x, (p.n_dim + kBlockN - 1) / kBlockN, p.max_blocks, pid_m, pid_n);
  if (pid_m >= *p.num_blocks) return;
  const int expert = p.block_expert[pid_m];
  const long long row0 = (long long)pid_m * kBlockM;
  for (int r = threadIdx.x; r < kBlockM; r += blockDim.x) {
    const int pair = p.sorted_pairs[row0 + r];
    row_pair[r] = pair;
    if (!kIsGemm1) row_weight[r] = p.sorted_weights[row0 + r];
    a_row[r] = pair < 0 ? -1 : kIsGemm1 ? (long long)(pair / p.top_k) : row0 + r;
    a_off[r] = pair < 0 ? -1 : a_row[r] * (p.k_dim / 2);
  }
  __syncthreads();

  const int n0 = pid_n * kBlockN;
  const int valid_n = min(kBlockN, p.n_dim - n0);
  const auto* b_base =
      reinterpret_cast<const moe_bf16*>(p.b + (long long)expert * p.b_rows_per_expert * p.k_dim);
  Fp8TileScales scales{};
  if (kBlockScaled) scales = fp8_tile_scales<Mainloop, kIsGemm1>(p, a_row, expert, n0);
  Mainloop ml;
  ml.run(smem, reinterpret_cast<const moe_bf16*>(p.a), a_off, b_base, n0, p.n_dim + n0, valid_n,
         p.k_dim / 2, scales);
  if (!kBlockScaled) ml.scale_all(*p.a_scale * p.b_scale[expert]);
  const auto rows = load_epilogue_rows<Mainloop, kIsGemm1>(row_pair, row_weight, threadIdx.x);
  const moe_bf16* bias =
      kIsGemm1 && act_biased(kAct) ? p.bias + (long long)expert * p.b_rows_per_expert : nullptr;
  moe_epilogue_store<Mainloop, kAct, kIsGemm1>(ml, threadIdx.x, rows, p.out, row0, n0, p.n_dim,
                                               nullptr, bias);
}

}  // namespace moetune_dev
