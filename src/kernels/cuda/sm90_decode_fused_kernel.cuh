// sm90_decode_fused_kernel.cuh: lever decode_fused, the tiny-M decode path (launch.swap_ab) in one
// cooperative launch instead of two: one CTA of kFusedWarps warps per SM, all co-resident.
//   - Route: every CTA reads topk_ids (at most kFusedMaxPairs pairs) and lists the distinct
//     experts in order of first appearance, each with its pairs ascending.
//   - GEMM2's weights first: CTA b owns output columns b, b + G, ... (G CTAs); before anything
//     else its warps queue single-thread bulk copies (TMA, no registers) of those columns' w2 rows
//     of every distinct expert into shared memory, so they stream beside GEMM1's loads. The host
//     takes this kernel only where they fit (decode_fused_takes); a CTA whose rows do not traps.
//   - Phase 1 (GEMM1): global warp w of W takes units w, w + W, ...; a unit is kRows1 columns of
//     one distinct expert; it streams their w1 rows (gate and up for silu) once per kBlockM pairs
//     and writes h[pair, I] (bf16, pair order), as moe_decode_gemm1_kernel does.
//   - Grid barrier (arrival count and generation in the workspace; the count is zero between
//     launches: the last CTA to arrive resets it). Then h is copied into shared memory.
//   - Phase 2 (GEMM2 + combine): the CTA's warps take its (column, expert) rows in turn and dot
//     each with the h row of every pair of that expert (both from shared memory); then
//     out[t, c] = sum_j topk_weight[t, j] * dot(t, j, c), j ascending, one thread per (t, c).
// Bits: every dot product runs the decode kernels' per-lane order (16-byte vector v = lane + 32 i,
// i ascending, dot8) and their xor-shuffle tree, and the top-k sum their order, so the output
// equals the two-launch path's bit for bit whatever the knobs - the lever is class bitwise.
// Knobs: GEMM1's config (kBlockM pairs per pass, kRows1 rows per unit = num_stages, kVec1 = block_k
// / 256 vectors per lane and step); GEMM2's config does not act here. The host takes this kernel
// only where GEMM1's registers fit 768 threads (decode_fused_fits). Covered by
// tests/kernels/cuda/sm90_gather_test.cpp (Sm90Gather.DecodeFusedLeverGivesTheBitsOfItsOffPath) and
// tests/kernels/cuda/jit_compile_test.cpp (Sm90Jit.EveryFusedDecodeKernelThatFitsCompiles...).
#pragma once

#include "sm90_decode_kernel.cuh"
#include "sm90_tma.cuh"

namespace moetune_dev {

constexpr int kFusedMaxPairs = 128;  // M * top_k at most (the host falls back above)
constexpr int kFusedWarps = 24;      // one CTA of 768 threads per SM

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
  int smem_bytes;  // dynamic shared memory: partial dots, h, then the staged w2 rows
  // Optional (null in the layer): %globaltimer stamps, kFusedStamps per CTA (thread 0: start,
  // copies queued, GEMM1 done, barrier passed, h copied, w2 rows landed, dots done, end), then one
  // per warp (its GEMM1 share done), for the phase test and probes.
  long long* trace;
};

constexpr int kFusedStamps = 8;

MOETUNE_DEVICE long long global_timer_ns() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

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

template <int kAct, bool kGated, int kBlockM, int kRows1, int kVec1>
__global__ void __launch_bounds__(kFusedWarps * 32, 1)
    moe_decode_fused_kernel(const __grid_constant__ DecodeFusedParams p) {
  constexpr int kHalves = kGated ? 2 : 1;
  __shared__ int s_e[kFusedMaxPairs];       // expert of each pair, -1 outside [0, E)
  __shared__ int s_first[kFusedMaxPairs];   // the first pair of the same expert
  __shared__ int s_before[kFusedMaxPairs];  // earlier pairs of the same expert
  __shared__ int s_cnt[kFusedMaxPairs];     // pairs of the same expert
  __shared__ int s_uidx[kFusedMaxPairs];    // distinct-expert index of a first pair
  __shared__ int s_order[kFusedMaxPairs];   // pairs by distinct expert, ascending within
  __shared__ int s_ustart[kFusedMaxPairs + 1];
  __shared__ int s_uexpert[kFusedMaxPairs];
  __shared__ int s_nu;
  __shared__ __align__(8) moe_u64 s_bar;
  // [ncols][P] fp32 partial dots, then h [P][I] bf16, then the staged w2 rows [ncols * U][I].
  extern __shared__ __align__(128) char s_dyn[];
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int P = p.num_tokens * p.top_k;
  const int K = p.hidden, I = p.inter;
  const int G = static_cast<int>(gridDim.x);
  const int b = static_cast<int>(blockIdx.x);
  const int ncols = b < K ? (K - 1 - b) / G + 1 : 0;  // this CTA's output columns b + s G
  const int row_bytes = I * 2;
  float* const s_dot = reinterpret_cast<float*>(s_dyn);
  const int dot_bytes = ((K + G - 1) / G * P * 4 + 15) / 16 * 16;
  moe_bf16* const s_h = reinterpret_cast<moe_bf16*>(s_dyn + dot_bytes);
  const moe_u32 stage = smem_u32(s_dyn) + static_cast<moe_u32>(dot_bytes + P * row_bytes);
  const int stage_bytes = p.smem_bytes - dot_bytes - P * row_bytes;
  const moe_u32 bar = smem_u32(&s_bar);
  auto stamp = [&](int i) {
    if (p.trace != nullptr && threadIdx.x == 0) p.trace[b * kFusedStamps + i] = global_timer_ns();
  };

  if (threadIdx.x == 0) mbar_init(bar, 1);
  mbar_init_fence();
  pdl_wait();  // topk_ids and x from the kernels before
  stamp(0);
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
  const int U = s_nu;
  // This CTA's GEMM2 rows k = s * U + u (column b + s G of distinct expert u), all staged.
  const int nrows = ncols * U;
  if (nrows * row_bytes > stage_bytes) __trap();  // the host's decode_fused_takes was wrong
  auto w2_row = [&](int k) {
    return p.w2 + (static_cast<long long>(s_uexpert[k % U]) * K + b + (k / U) * G) * I;
  };
  if (threadIdx.x == 0) mbar_arrive_expect_tx(bar, nrows * row_bytes);
  __syncthreads();  // s_order, and the expected bytes before any copy completes
  if (lane == 0) {
    for (int k = warp; k < nrows; k += kFusedWarps) {
      bulk_copy_g2s(stage + static_cast<moe_u32>(k * row_bytes), w2_row(k), row_bytes, bar);
    }
  }
  stamp(1);
  const int W = G * kFusedWarps;
  const int gw = b * kFusedWarps + warp;

  // ---------------------------------------------------------------- phase 1: GEMM1
  {
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
        int col[kRows1];
#pragma unroll
        for (int r = 0; r < kRows1; ++r) col[r] = c0 + r < I ? c0 + r : -1;
        decode_gemm1_pass<kAct, kGated, kBlockM, kRows1, kVec1>(
            w, I, K, xrow, np, col, [&](int r, int i, float v) {
              p.h[static_cast<long long>(s_order[g0 + i]) * I + col[r]] = float_to_bf16(v);
            });
      }
    }
  }

  if (p.trace != nullptr && lane == 0) p.trace[G * kFusedStamps + gw] = global_timer_ns();

  // ---------------------------------------------------------------- grid barrier: h is complete
  __syncthreads();
  stamp(2);
  if (threadIdx.x == 0) fused_grid_barrier(p.barrier, G);
  __syncthreads();
  stamp(3);
  pdl_launch_dependents();  // every CTA is resident and past the barrier
  {  // h into shared memory (every pair's row; rows of out-of-range pairs are never read)
    const int nv = P * I / 8;
    for (int i = threadIdx.x; i < nv; i += blockDim.x) {
      const uint4 v = ld_16(p.h + static_cast<long long>(i) * 8);
      asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(smem_u32(s_h) + i * 16),
                   "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                   : "memory");
    }
  }
  __syncthreads();
  stamp(4);
  mbar_wait(bar, 0);  // the staged w2 rows
  stamp(5);

  // ---------------------------------------------------------------- phase 2: GEMM2 + combine
  const int nvec = I >> 3;
  const moe_u32 h_base = smem_u32(s_h);
  for (int k = warp; k < nrows; k += kFusedWarps) {
    const int s = k / U, u = k % U;
    const moe_u32 srow = stage + static_cast<moe_u32>(k * row_bytes);
    const int end = s_ustart[u + 1];
    for (int g0 = s_ustart[u]; g0 < end; g0 += kBlockM) {
      const int np = min(kBlockM, end - g0);
      moe_u32 hrow[kBlockM];
      float acc[kBlockM];
#pragma unroll
      for (int i = 0; i < kBlockM; ++i) {
        hrow[i] = h_base + static_cast<moe_u32>(s_order[g0 + min(i, np - 1)] * row_bytes);
        acc[i] = 0.0f;
      }
      for (int v = lane; v < nvec; v += 32) {
        const uint4 wv = ld_shared_16(srow + static_cast<moe_u32>(v * 16));
#pragma unroll
        for (int i = 0; i < kBlockM; ++i) {
          if (i < np)
            acc[i] = dot8(wv, ld_shared_16(hrow[i] + static_cast<moe_u32>(v * 16)), acc[i]);
        }
      }
#pragma unroll
      for (int i = 0; i < kBlockM; ++i) {
        const float d = warp_sum(acc[i]);
        if (lane == 0 && i < np) s_dot[s * P + s_order[g0 + i]] = d;
      }
    }
  }
  __syncthreads();
  stamp(6);
  for (int i = threadIdx.x; i < ncols * p.num_tokens; i += blockDim.x) {
    const int s = i / p.num_tokens, t = i % p.num_tokens;
    float sum = 0.0f;
    for (int j = 0; j < p.top_k; ++j) {
      const int q = t * p.top_k + j;
      sum = fmaf(p.topk_weights[q], s_e[q] >= 0 ? s_dot[s * P + q] : 0.0f, sum);
    }
    p.out[static_cast<long long>(t) * K + b + s * G] = float_to_bf16(sum);
  }
  stamp(7);
}

}  // namespace moetune_dev
