// sm90_decode_fused_kernel.cuh: lever decode_fused, the tiny-M decode path (launch.swap_ab) in one
// cooperative launch instead of two: one CTA of kFusedWarps warps per SM, all co-resident.
//   - Route: every CTA reads topk_ids (at most kFusedMaxPairs pairs) and lists the distinct
//     experts in order of first appearance, each with its pairs ascending.
//   - Phase 1 (GEMM1): global warp w of W takes units w, w + W, ...; a unit is kRows1 columns of
//     one distinct expert; it streams their w1 rows (gate and up for silu) once per kBlockM pairs
//     and writes h[pair, I] (bf16, pair order), as moe_decode_gemm1_kernel does.
//   - Then each warp queues, with single-thread bulk copies (TMA, no registers), the w2 rows its
//     phase 2 reads: into its share of shared memory while they fit, the rest as L2 prefetches.
//     Warps that finish phase 1 early so fill the stream's tail with phase 2's bytes.
//   - Grid barrier (arrival count and generation in the workspace; the count is zero between
//     launches: the last CTA to arrive resets it).
//   - Phase 2 (GEMM2 + combine): warp w takes output columns w, w + W, ...; for each distinct
//     expert it dots the column's w2 row (shared memory or L2) with the h row of every pair of that
//     expert, then out[t, c] = sum_j topk_weight[t, j] * dot(t, j), j ascending.
// Bits: every dot product runs the decode kernels' per-lane order (16-byte vector v = lane + 32 i,
// i ascending, dot8) and their xor-shuffle tree, and the top-k sum their order, so the output
// equals the two-launch path's bit for bit whatever the knobs (block_k, rows per warp, pairs per
// pass, warps) - the lever is class bitwise. Knobs: kBlockM pairs per pass (GEMM1's block_m),
// kRows1 / kVec1 (GEMM1's num_stages and block_k / 256), kRows2 x kVec2 (GEMM2's rows and vectors
// per lane: phase 2's vectors in flight, at most 8). The host takes this kernel only where its
// registers fit 512 threads (decode_fused_fits). Covered by tests/kernels/cuda/sm90_gather_test.cpp
// (Sm90Gather.DecodeFusedLeverGivesTheBitsOfItsOffPath) and
// tests/kernels/cuda/jit_compile_test.cpp.
#pragma once

#include "sm90_decode_kernel.cuh"
#include "sm90_tma.cuh"

namespace moetune_dev {

constexpr int kFusedMaxPairs = 128;  // M * top_k at most (the host falls back above)
constexpr int kFusedWarps = 16;      // one CTA of 512 threads per SM

struct DecodeFusedParams {
  const moe_bf16* x;          // [M, K]
  const moe_bf16* w1;         // [E, N1, K]
  const moe_bf16* w2;         // [E, K, I]
  moe_bf16* h;                // [M * top_k, I] (workspace)
  moe_bf16* out;              // [M, K]
  const int* topk_ids;        // [M * top_k]
  const float* topk_weights;  // [M * top_k]
  int* barrier;  // [2] (workspace): arrivals, zero between launches; generation, any value
  int hidden;    // K
  int inter;     // I
  int top_k, num_tokens, num_experts;
  int stage_bytes;  // shared memory per warp for staged w2 rows (a multiple of 16)
};

MOETUNE_DEVICE int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/// 16-byte load through L1 of data this grid wrote before its barrier (h): not the non-coherent
/// path, which may serve lines from before the writes.
MOETUNE_DEVICE uint4 ld_16(const void* p) {
  uint4 r;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p)
               : "memory");
  return r;
}

/// Bulk copy of `bytes` (a multiple of 16) from global memory into this CTA's shared memory at
/// `dst`, completing that many bytes of `bar`'s transaction count.
MOETUNE_DEVICE void bulk_copy_g2s(moe_u32 dst, const void* src, int bytes, moe_u32 bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}
MOETUNE_DEVICE void bulk_prefetch_l2(const void* src, int bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}

/// Thread 0 of each CTA: waits until every CTA of the grid arrived. The arrival count must be zero
/// at launch (the workspace contract) and is zero again when this returns in every CTA; a count
/// outside [0, ctas) or a wait of ~10 s traps (a launch error, not a hang).
MOETUNE_DEVICE void fused_grid_barrier(int* bar, int ctas) {
  const int gen = ld_acquire_gpu(bar + 1);  // before arriving: the last arrival changes it
  __threadfence();                          // this CTA's h rows, before the arrival
  const int old = atomicAdd(bar, 1);
  if (old < 0 || old >= ctas) __trap();  // not zero at launch: the workspace was not zeroed
  if (old == ctas - 1) {
    atomicExch(bar, 0);
    __threadfence();
    atomicAdd(bar + 1, 1);
  } else {
    const long long t0 = clock64();
    while (ld_acquire_gpu(bar + 1) == gen) {
      __nanosleep(32);
      if (clock64() - t0 > (1ll << 34)) __trap();
    }
  }
  __threadfence();
}

template <int kAct, bool kGated, int kBlockM, int kRows1, int kVec1, int kRows2, int kVec2>
__global__ void __launch_bounds__(kFusedWarps * 32, 1)
    moe_decode_fused_kernel(const __grid_constant__ DecodeFusedParams p) {
  constexpr int kHalves = kGated ? 2 : 1;
  // Phase 2's 16-byte vectors per lane in flight: GEMM2's rows x vectors, at most 8 (the CTA's
  // 512 threads have 128 registers each).
  constexpr int kV2 = kRows2 * kVec2 < 8 ? kRows2 * kVec2 : 8;
  __shared__ int s_e[kFusedMaxPairs];       // expert of each pair, -1 outside [0, E)
  __shared__ int s_first[kFusedMaxPairs];   // the first pair of the same expert
  __shared__ int s_before[kFusedMaxPairs];  // earlier pairs of the same expert
  __shared__ int s_cnt[kFusedMaxPairs];     // pairs of the same expert
  __shared__ int s_uidx[kFusedMaxPairs];    // distinct-expert index of a first pair
  __shared__ int s_order[kFusedMaxPairs];   // pairs by distinct expert, ascending within
  __shared__ int s_ustart[kFusedMaxPairs + 1];
  __shared__ int s_uexpert[kFusedMaxPairs];
  __shared__ int s_nu;
  __shared__ float s_dot[kFusedWarps][kFusedMaxPairs];
  __shared__ __align__(8) moe_u64 s_bar[kFusedWarps];
  extern __shared__ __align__(128) char s_stage[];
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int P = p.num_tokens * p.top_k;
  const int K = p.hidden, I = p.inter;

  if (threadIdx.x < kFusedWarps) mbar_init(smem_u32(&s_bar[threadIdx.x]), 1);
  mbar_init_fence();
  pdl_wait();  // topk_ids and x from the kernels before
  for (int q = threadIdx.x; q < P; q += blockDim.x) {
    const int e = p.topk_ids[q];
    s_e[q] = e >= 0 && e < p.num_experts ? e : -1;
  }
  __syncthreads();
  for (int q = threadIdx.x; q < P; q += blockDim.x) {
    const int e = s_e[q];
    int first = q, before = 0, cnt = 0;
    for (int r = P - 1; r >= 0; --r) {
      if (s_e[r] == e) {
        ++cnt;
        if (r < q) {
          ++before;
          first = r;
        }
      }
    }
    s_first[q] = first;
    s_before[q] = before;
    s_cnt[q] = cnt;
  }
  __syncthreads();
  if (warp == 0) {  // distinct experts in order of first appearance, and their first rows
    int base = 0, start = 0;
    for (int q0 = 0; q0 < P; q0 += 32) {
      const int q = q0 + lane;
      const bool head = q < P && s_e[q] >= 0 && s_first[q] == q;
      const int cnt = head ? s_cnt[q] : 0;
      const unsigned m = __ballot_sync(0xffffffffu, head);
      int incl = cnt;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += v;
      }
      if (head) {
        const int u = base + __popc(m & ((1u << lane) - 1u));
        s_uidx[q] = u;
        s_uexpert[u] = s_e[q];
        s_ustart[u] = start + incl - cnt;
      }
      base += __popc(m);
      start += __shfl_sync(0xffffffffu, incl, 31);
    }
    if (lane == 0) {
      s_nu = base;
      s_ustart[base] = start;
    }
  }
  __syncthreads();
  for (int q = threadIdx.x; q < P; q += blockDim.x) {
    if (s_e[q] >= 0) s_order[s_ustart[s_uidx[s_first[q]]] + s_before[q]] = q;
  }
  __syncthreads();
  const int U = s_nu;
  const int W = static_cast<int>(gridDim.x) * kFusedWarps;
  const int gw = static_cast<int>(blockIdx.x) * kFusedWarps + warp;

  // ---------------------------------------------------------------- phase 1: GEMM1
  {
    const int nvec = K >> 3;
    const int per_u = (I + kRows1 - 1) / kRows1;
    for (int unit = gw; unit < U * per_u; unit += W) {
      const int u = unit / per_u;
      const int c0 = (unit % per_u) * kRows1;
      const moe_bf16* w = p.w1 + static_cast<long long>(s_uexpert[u]) * kHalves * I * K;
      const int end = s_ustart[u + 1];
      for (int g0 = s_ustart[u]; g0 < end; g0 += kBlockM) {
        const int np = min(kBlockM, end - g0);
        const moe_bf16* xrow[kBlockM];
#pragma unroll
        for (int i = 0; i < kBlockM; ++i) {
          xrow[i] = p.x + static_cast<long long>(s_order[g0 + min(i, np - 1)] / p.top_k) * K;
        }
        float acc[kRows1][kHalves][kBlockM];
        const moe_bf16* wrow[kRows1][kHalves];
        bool valid[kRows1];
#pragma unroll
        for (int r = 0; r < kRows1; ++r) {
          valid[r] = c0 + r < I;
#pragma unroll
          for (int hh = 0; hh < kHalves; ++hh) {
            wrow[r][hh] = w + static_cast<long long>(valid[r] ? c0 + r + hh * I : 0) * K;
#pragma unroll
            for (int i = 0; i < kBlockM; ++i) acc[r][hh][i] = 0.0f;
          }
        }
        for (int v0 = 0; v0 < nvec; v0 += 32 * kVec1) {
          uint4 wv[kRows1][kHalves][kVec1];
#pragma unroll
          for (int r = 0; r < kRows1; ++r) {
#pragma unroll
            for (int hh = 0; hh < kHalves; ++hh) {
#pragma unroll
              for (int j = 0; j < kVec1; ++j) {
                const int v = v0 + j * 32 + lane;
                wv[r][hh][j] = (valid[r] && v < nvec) ? ld_nc_16<true>(wrow[r][hh] + v * 8)
                                                      : make_uint4(0, 0, 0, 0);
              }
            }
          }
#pragma unroll
          for (int i = 0; i < kBlockM; ++i) {
            if (i < np) {
#pragma unroll
              for (int j = 0; j < kVec1; ++j) {
                const int v = v0 + j * 32 + lane;
                const uint4 xv =
                    v < nvec ? ld_nc_16<false>(xrow[i] + v * 8) : make_uint4(0, 0, 0, 0);
#pragma unroll
                for (int r = 0; r < kRows1; ++r) {
#pragma unroll
                  for (int hh = 0; hh < kHalves; ++hh) {
                    acc[r][hh][i] = dot8(wv[r][hh][j], xv, acc[r][hh][i]);
                  }
                }
              }
            }
          }
        }
#pragma unroll
        for (int r = 0; r < kRows1; ++r) {
#pragma unroll
          for (int i = 0; i < kBlockM; ++i) {
            float v = warp_sum(acc[r][0][i]);
            if (kGated) {
              v = act_silu(v) * warp_sum(acc[r][kHalves - 1][i]);
            } else {
              v = apply_act<kAct>(v);
            }
            if (lane == i % 32 && i < np && valid[r]) {
              p.h[static_cast<long long>(s_order[g0 + i]) * I + c0 + r] =
                  (moe_bf16)(pack_bf16x2(v, 0.0f) & 0xffffu);
            }
          }
        }
      }
    }
  }

  // ---------------------------------------------------------------- phase 2's w2 rows, queued
  // Warp gw's rows in order (column slot s, distinct expert u): k = s * U + u.
  const int row_bytes = I * 2;
  const int ncols = gw < K ? (K - 1 - gw) / W + 1 : 0;
  const int nrows = ncols * U;
  const int staged = min(nrows, p.stage_bytes / row_bytes);
  const moe_u32 stage = smem_u32(s_stage) + static_cast<moe_u32>(warp * p.stage_bytes);
  const moe_u32 bar = smem_u32(&s_bar[warp]);
  auto w2_row = [&](int k) {
    return p.w2 + (static_cast<long long>(s_uexpert[k % U]) * K + gw + (k / U) * W) * I;
  };
  if (lane == 0) {
    mbar_arrive_expect_tx(bar, staged * row_bytes);
    for (int k = 0; k < nrows; ++k) {
      if (k < staged) {
        bulk_copy_g2s(stage + static_cast<moe_u32>(k * row_bytes), w2_row(k), row_bytes, bar);
      } else {
        bulk_prefetch_l2(w2_row(k), row_bytes);
      }
    }
  }

  // ---------------------------------------------------------------- grid barrier: h is complete
  __syncthreads();
  if (threadIdx.x == 0) fused_grid_barrier(p.barrier, static_cast<int>(gridDim.x));
  __syncthreads();
  pdl_launch_dependents();  // every CTA is resident and past the barrier

  // ---------------------------------------------------------------- phase 2: GEMM2 + combine
  mbar_wait(bar, 0);
  const int nvec = I >> 3;
  for (int s = 0; s < ncols; ++s) {
    const int col = gw + s * W;
    for (int u = 0; u < U; ++u) {
      const int k = s * U + u;
      const bool from_smem = k < staged;
      const moe_u32 srow = stage + static_cast<moe_u32>(k * row_bytes);
      const moe_bf16* grow = w2_row(k);
      const int end = s_ustart[u + 1];
      for (int g0 = s_ustart[u]; g0 < end; g0 += kBlockM) {
        const int np = min(kBlockM, end - g0);
        const moe_bf16* hrow[kBlockM];
        float acc[kBlockM];
#pragma unroll
        for (int i = 0; i < kBlockM; ++i) {
          hrow[i] = p.h + static_cast<long long>(s_order[g0 + min(i, np - 1)]) * I;
          acc[i] = 0.0f;
        }
        // kV2 vectors per lane in flight (from L2, or shared memory for the staged rows).
        for (int v0 = 0; v0 < nvec; v0 += 32 * kV2) {
          uint4 wv[kV2];
#pragma unroll
          for (int j = 0; j < kV2; ++j) {
            const int v = v0 + j * 32 + lane;
            if (v >= nvec) {
              wv[j] = make_uint4(0, 0, 0, 0);
            } else if (from_smem) {
              wv[j] = ld_shared_16(srow + static_cast<moe_u32>(v * 16));
            } else {
              wv[j] = ld_nc_16<true>(grow + v * 8);
            }
          }
#pragma unroll
          for (int i = 0; i < kBlockM; ++i) {
            if (i < np) {
#pragma unroll
              for (int j = 0; j < kV2; ++j) {
                const int v = v0 + j * 32 + lane;
                if (v < nvec) acc[i] = dot8(wv[j], ld_16(hrow[i] + v * 8), acc[i]);
              }
            }
          }
        }
#pragma unroll
        for (int i = 0; i < kBlockM; ++i) {
          const float d = warp_sum(acc[i]);
          if (lane == 0 && i < np) s_dot[warp][s_order[g0 + i]] = d;
        }
      }
    }
    __syncwarp();
    for (int t = lane; t < p.num_tokens; t += 32) {
      float sum = 0.0f;
      for (int j = 0; j < p.top_k; ++j) {
        const int q = t * p.top_k + j;
        sum = fmaf(p.topk_weights[q], s_e[q] >= 0 ? s_dot[warp][q] : 0.0f, sum);
      }
      p.out[static_cast<long long>(t) * K + col] = (moe_bf16)(pack_bf16x2(sum, 0.0f) & 0xffffu);
    }
    __syncwarp();
  }
}

}  // namespace moetune_dev
