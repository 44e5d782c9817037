// sm90_gather_kernel.cuh: the two GEMM kernels and the combine of the sm90_gather family
// (vLLM-style gather inside the GEMM, expert-sorted intermediate, deterministic combine).
//   GEMM1: h[sorted rows, I]  = act(x[token(pair)] @ w1[e]^T [+ b1[e]])  (gate/up halves: gated)
//   GEMM2: y[pair, K]         = weight[pair] * (h[sorted row] @ w2[e]^T)
//   combine: out[t, K]        = sum_{j < top_k} y[t * top_k + j]   (fixed order: bitwise stable)
//            [+ sum_j weight[t, j] * b2[e_j], after the y rows, j ascending]
// Grid: 1-D over (max_blocks x n_blocks) with a group_m raster; blocks past the device-side
// *num_blocks exit at once, so no count reaches the host. This file only composes
// sm90_cpasync_mainloop.cuh and sm90_moe_epilogue.cuh. Covered by sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"
#include "sm90_cpasync_mainloop.cuh"
#include "sm90_moe_epilogue.cuh"
#include "sm90_wgmma_mainloop.cuh"

namespace moetune_dev {

struct GemmParams {
  const moe_bf16* a;            // GEMM1: x [M, K]; GEMM2: h [max_blocks * block_m, I]
  const moe_bf16* b;            // GEMM1: w1 [E, N1, K]; GEMM2: w2 [E, K, I]
  moe_bf16* out;                // GEMM1: h; GEMM2: y [M * top_k, K]
  const int* sorted_pairs;      // [max_blocks * block_m]
  const int* block_expert;      // [max_blocks]
  const int* num_blocks;        // [1]
  const float* sorted_weights;  // [max_blocks * block_m]: GEMM2's routing weight of each sorted
                                // row (align writes it; padding rows hold whatever they held)
  int k_dim;                    // reduction size: K (GEMM1) or I (GEMM2)
  int n_dim;                    // output columns: I (GEMM1) or K (GEMM2)
  int b_rows_per_expert;        // N1 (GEMM1) or K (GEMM2)
  int top_k;
  int max_blocks;
  int split_k;    // GEMM2 with schedule tma_ws: K splits, out = fp32 partials (1 elsewhere)
  int num_pairs;  // M * top_k (row count of one split's partials)
  // GEMM1 of schedule tma_ws under a GEMM2 of larger block_m: tiles per align block (1
  // elsewhere). Its tiles are the sub-blocks that hold pairs: num_blocks points at their count
  // and sub_row0 [max_blocks * m_sub] holds the first row of each (sm90_align_kernel.cuh).
  int m_sub;
  const int* sub_row0;
  const moe_bf16* bias;  // GEMM1 with kActBias: b1 [E, N1]; null elsewhere (GEMM2's b2: combine)
};

/// kMma: 0 = mma.sync main loop (schedule auto), 1 = wgmma main loop (schedule cooperative).
template <int kMma, int kBlockM, int kBlockN, int kBlockK, int kWarpsM, int kWarpsN, int kStages,
          bool kGated>
struct SelectMainloop {
  using type = CpAsyncMainloop<kBlockM, kBlockN, kBlockK, kWarpsM, kWarpsN, kStages, kGated>;
};
template <int kBlockM, int kBlockN, int kBlockK, int kWarpsM, int kWarpsN, int kStages, bool kGated>
struct SelectMainloop<1, kBlockM, kBlockN, kBlockK, kWarpsM, kWarpsN, kStages, kGated> {
  static_assert(kBlockK == 64, "wgmma path: block_k must be 64 (one 128-byte swizzle atom)");
  static_assert(kWarpsM * kWarpsN * 32 == kBlockM * 2, "wgmma path: one warpgroup per 64 rows");
  using type = WgmmaMainloop<kBlockM, kBlockN, kStages, kGated>;
};

template <int kBlockM, int kBlockN, int kBlockK, int kWarpsM, int kWarpsN, int kStages, int kGroupM,
          int kAct, bool kIsGemm1, int kMma>
__global__ void __launch_bounds__(kWarpsM* kWarpsN * 32, 1) moe_gemm_kernel(GemmParams p) {
  constexpr bool kGated = kIsGemm1 && act_gated(kAct);
  using Mainloop = typename SelectMainloop<kMma, kBlockM, kBlockN, kBlockK, kWarpsM, kWarpsN,
                                           kStages, kGated>::type;
  static_assert(kGroupM >= 1, "group_m must be >= 1");
  extern __shared__ __align__(1024) char smem[];
  __shared__ long long a_off[kBlockM];
  __shared__ int row_pair[kBlockM];
  __shared__ float row_scale[kIsGemm1 ? 1 : kBlockM];

  // Group-M raster (as Triton's GROUP_SIZE_M): consecutive CTAs share the weight tile (pid_n).
  // NOTE: bulk L2 prefetches of the first tile's weight rows here, before pdl_wait, so weights
  // would stream while align runs, moved no layer time on the H200 (within 1% at S1-S3,
  // M = 4..2048).
  pdl_launch_dependents();
  pdl_wait();  // NOTE: align / GEMM1 outputs are visible only after this
  const int num_pid_n = (p.n_dim + kBlockN - 1) / kBlockN;
  const int pid = blockIdx.x;
  const int num_pid_in_group = kGroupM * num_pid_n;
  const int group_id = pid / num_pid_in_group;
  const int first_pid_m = group_id * kGroupM;
  const int group_size_m = min(p.max_blocks - first_pid_m, kGroupM);
  const int pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m;
  const int pid_n = (pid % num_pid_in_group) / group_size_m;
  if (pid_m >= *p.num_blocks) return;
  const int expert = p.block_expert[pid_m];
  const long long row0 = (long long)pid_m * kBlockM;

  for (int r = threadIdx.x; r < kBlockM; r += blockDim.x) {
    const int pair = p.sorted_pairs[row0 + r];
    row_pair[r] = pair;
    if (!kIsGemm1) row_scale[r] = p.sorted_weights[row0 + r];
    if (kIsGemm1) {
      a_off[r] = pair >= 0 ? (long long)(pair / p.top_k) * p.k_dim : -1;
    } else {
      a_off[r] = pair >= 0 ? (row0 + r) * p.k_dim : -1;
    }
  }
  __syncthreads();

  const int n0 = pid_n * kBlockN;
  const int valid_n = min(kBlockN, p.n_dim - n0);
  const moe_bf16* b_base = p.b + (long long)expert * p.b_rows_per_expert * p.k_dim;
  Mainloop ml;
  ml.run(smem, p.a, a_off, b_base, n0, p.n_dim + n0, valid_n, p.k_dim);
  const auto rows = load_epilogue_rows<Mainloop, kIsGemm1>(row_pair, row_scale, threadIdx.x);
  const moe_bf16* bias =
      kIsGemm1 && act_biased(kAct) ? p.bias + (long long)expert * p.b_rows_per_expert : nullptr;
  moe_epilogue_store<Mainloop, kAct, kIsGemm1>(ml, threadIdx.x, rows, p.out, row0, n0, p.n_dim,
                                               nullptr, bias);
}

struct PermuteParams {
  const moe_bf16* x;        // [M, K]
  moe_bf16* xp;             // [max_blocks * block_m, K]: row r = x[token of sorted_pairs[r]]
  const int* sorted_pairs;  // [max_blocks * block_m], -1 = padding (its xp row is not written)
  const int* num_blocks;    // [1]
  int block_m;
  int top_k;
  int k_dim;
};

/// xp[r] = x[sorted_pairs[r] / top_k] for the rows of the valid blocks that hold a pair: the A
/// operand of a tma_ws GEMM1 of block_m 256 in sorted-row order, so TMA loads it (a padding row
/// keeps whatever it held: only its own, never stored, outputs see it). One warp per row, 16-byte
/// copies, four in flight per lane.
__global__ void __launch_bounds__(256) moe_permute_rows_kernel(PermuteParams p) {
  pdl_launch_dependents();
  pdl_wait();
  const int rows = *p.num_blocks * p.block_m;
  const int lane = threadIdx.x & 31;
  const int vecs = p.k_dim / 8;
  const int warps = (gridDim.x * blockDim.x) >> 5;
  for (int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < rows; r += warps) {
    const int pair = p.sorted_pairs[r];
    if (pair < 0) continue;
    const uint4* src = reinterpret_cast<const uint4*>(p.x + (long long)(pair / p.top_k) * p.k_dim);
    uint4* dst = reinterpret_cast<uint4*>(p.xp + (long long)r * p.k_dim);
    for (int v = lane; v < vecs; v += 128) {
      uint4 q[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (v + 32 * i < vecs) q[i] = __ldg(src + v + 32 * i);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (v + 32 * i < vecs) dst[v + 32 * i] = q[i];
      }
    }
  }
}

struct CombineParams {
  const moe_bf16* y;  // [M * top_k, K] bf16; with split_k > 1: [split_k, M * top_k, K] fp32
  moe_bf16* out;      // [M, K]
  int num_tokens;
  int top_k;
  int k_dim;
  int split_k;
  // b2 [E, K] or null (no biases): out[t] += sum_j weight[t, j] * b2[ids[t, j]] after the y rows
  const moe_bf16* bias;
  const int* topk_ids;
  const float* topk_weights;
  int num_experts;
};

/// sum[0..8) += w * b2[e][v * 8 ..] for each slot j of token t, j ascending (GEMM2's bias).
MOETUNE_DEVICE void combine_add_bias(CombineParams const& p, int t, int v, float (&sum)[8]) {
  for (int j = 0; j < p.top_k; ++j) {
    const int e = p.topk_ids[(long long)t * p.top_k + j];
    if (e < 0 || e >= p.num_experts) continue;
    const float w = p.topk_weights[(long long)t * p.top_k + j];
    const uint4 q = __ldg(reinterpret_cast<const uint4*>(p.bias + (long long)e * p.k_dim + v * 8));
    const moe_u32 b[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      sum[2 * i] = fmaf(w, __uint_as_float(b[i] << 16), sum[2 * i]);
      sum[2 * i + 1] = fmaf(w, __uint_as_float(b[i] & 0xffff0000u), sum[2 * i + 1]);
    }
  }
}

/// Rows of y one combine thread has in flight: it issues the loads of up to this many of its
/// token's rows (split GEMM2: two 16-byte loads per (j, s) unit, half as many units) before it
/// adds any, then adds them in order, under __launch_bounds__(256, 6) (40 registers: six CTAs per
/// SM, as the loop before it had at 34).
constexpr int kCombineRowsInFlight = 4;

/// out[t] = sum_j y[t*top_k + j] in fp32, j ascending (split GEMM2: sum_j sum_s y[s][t*top_k + j],
/// s ascending inside j). One thread per 8 columns (16-byte loads), its token's rows loaded
/// kCombineRowsInFlight at a time (same order, same bits).
///
/// NOTE: a j loop that adds each row as it arrives is unrolled by 4 with a serial remainder
/// (nvcc's PTX), so top_k = 2 takes two round trips and 6 takes three. Measured on the H200
/// (stage medians): 4 rows here 5.2-5.4 us at S1 / S2 M = 16-64 against 5.8-6.1, S1 M=16384 143 vs
/// 149, S3 16384 106 vs 109. 8 rows in flight (58 registers, four CTAs per SM) was 0.4 us faster at
/// small M but 20% slower at S3's large M (133 vs 109 us: top_k = 2, where the CTAs are short and
/// how many fit counts); 2 rows under the same bounds gained nothing.
///
/// NOTE: fusing this into GEMM2 (a counter per token and n-tile, the warp that sees a token's last
/// stored tile sums its rows in this order, bitwise equal) was correct on the H200 but slower
/// everywhere it acted (S2 M=2048 626 vs 423 us, S1 M=4096 1203 vs 1052, S2 M=256 325 vs 314): the
/// tma_ws producer warps that did it (56 registers, 3 rows of y in flight per lane) keep a few KB
/// in flight per SM, where this kernel streams y at 3.6 TB/s; the mma.sync CTAs that did it inline
/// lost 2-3% at small M.
///
/// NOTE: GEMM2 adding weight x rows into fp32 sums [M, K] with 16-byte red instead of writing y
/// (lever atomic_combine, nondeterministic; align's extra CTAs zeroed the sums, this kernel only
/// converted them) was in band but slower at 11 of 12 points on the H200 (S2 M=4096 811 vs 670 us,
/// its tma_ws GEMM2 366 vs 230; S2 2048 486 vs 432; S1 4096 1087 vs 1000): the reds move twice y's
/// bytes through L2's atomic units, slower than y's store and this kernel's read together, and the
/// zeroing did not hide under align.
__global__ void __launch_bounds__(256, 6) moe_combine_kernel(CombineParams p) {
  pdl_wait();
  const int vec_per_row = p.k_dim / 8;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (long long)p.num_tokens * vec_per_row) return;
  const int t = (int)(idx / vec_per_row);
  const int v = (int)(idx % vec_per_row);
  float sum[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) sum[i] = 0.0f;
  if (p.split_k > 1) {
    // Units u = j * split_k + s, ascending: j, then s inside j.
    const float* y32 = reinterpret_cast<const float*>(p.y);
    const long long split_stride = (long long)p.num_tokens * p.top_k * p.k_dim;
    const int units = p.top_k * p.split_k;
    for (int u0 = 0; u0 < units; u0 += kCombineRowsInFlight / 2) {
      float4 q[kCombineRowsInFlight];
#pragma unroll
      for (int d = 0; d < kCombineRowsInFlight / 2; ++d) {
        if (u0 + d < units) {
          const int j = (u0 + d) / p.split_k;
          const int s = (u0 + d) - j * p.split_k;
          const float* src =
              y32 + s * split_stride + ((long long)t * p.top_k + j) * p.k_dim + v * 8;
          q[2 * d] = *reinterpret_cast<const float4*>(src);
          q[2 * d + 1] = *reinterpret_cast<const float4*>(src + 4);
        }
      }
#pragma unroll
      for (int d = 0; d < kCombineRowsInFlight / 2; ++d) {
        if (u0 + d < units) {
          sum[0] += q[2 * d].x;
          sum[1] += q[2 * d].y;
          sum[2] += q[2 * d].z;
          sum[3] += q[2 * d].w;
          sum[4] += q[2 * d + 1].x;
          sum[5] += q[2 * d + 1].y;
          sum[6] += q[2 * d + 1].z;
          sum[7] += q[2 * d + 1].w;
        }
      }
    }
  } else {
    const moe_bf16* row = p.y + (long long)t * p.top_k * p.k_dim + v * 8;
    for (int j0 = 0; j0 < p.top_k; j0 += kCombineRowsInFlight) {
      uint4 q[kCombineRowsInFlight];
#pragma unroll
      for (int d = 0; d < kCombineRowsInFlight; ++d) {
        if (j0 + d < p.top_k)
          q[d] = *reinterpret_cast<const uint4*>(row + (long long)(j0 + d) * p.k_dim);
      }
#pragma unroll
      for (int d = 0; d < kCombineRowsInFlight; ++d) {
        if (j0 + d < p.top_k) {
          const moe_u32 w[4] = {q[d].x, q[d].y, q[d].z, q[d].w};
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            sum[2 * i] += __uint_as_float(w[i] << 16);
            sum[2 * i + 1] += __uint_as_float(w[i] & 0xffff0000u);
          }
        }
      }
    }
  }
  if (p.bias != nullptr) combine_add_bias(p, t, v, sum);
  uint4 o;
  o.x = pack_bf16x2(sum[0], sum[1]);
  o.y = pack_bf16x2(sum[2], sum[3]);
  o.z = pack_bf16x2(sum[4], sum[5]);
  o.w = pack_bf16x2(sum[6], sum[7]);
  *reinterpret_cast<uint4*>(p.out + (long long)t * p.k_dim + v * 8) = o;
}

}  // namespace moetune_dev
