// sm90_decode_kernel.cuh: the tiny-M path of the sm90_gather family (KernelConfig.launch.swap_ab):
// the whole layer in two launches, no align and no combine launch. Weights are streamed once at
// HBM rate by CUDA-core dot products (weights on the "M" side, the few tokens on "N": swap-AB).
//   GEMM1 (moe_decode_gemm1_kernel): grid (pair p, column chunk). The CTA of the first pair of each
//     expert (in pair order) takes every pair of that expert, found from topk_ids in the kernel
//     itself; it streams its block_n rows of w1 (gate and up for silu) once per kBlockM pairs and
//     writes h[pair, I] = act(w1[e] @ x[token(pair)]) (bf16, pair order). Other CTAs leave at once.
//   GEMM2 (moe_decode_gemm2_kernel): grid (token t, column chunk). Item (j, c) = the dot of
//     row c of w2[ids[t, j]] with h[t * top_k + j]; items are spread over the warps, then
//     out[t, c] = sum_j topk_weight[t, j] * dot(j, c) in fp32, j ascending.
// Deterministic: every dot product is a fixed per-lane order plus a fixed xor-shuffle tree, and the
// top-k sum has a fixed order, so two runs give identical bits (no atomics). Pair ids outside
// [0, E) contribute nothing. Knobs (sm90_gather_geometry.cpp checks them): kBlockM pairs per pass,
// kBlockN columns per CTA, kWarps, kRows rows each warp streams at once (pipeline.num_stages), kVec
// 16-byte vectors per lane per row and step (block_k / 256). Covered by
// tests/kernels/cuda/sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

struct DecodeParams {
  const moe_bf16* a;          // GEMM1: x [M, K]; GEMM2: h [M * top_k, I]
  const moe_bf16* b;          // GEMM1: w1 [E, N1, K]; GEMM2: w2 [E, K, I]
  moe_bf16* out;              // GEMM1: h [M * top_k, I]; GEMM2: out [M, K]
  const int* topk_ids;        // [M * top_k]
  const float* topk_weights;  // [M * top_k]
  int k_dim;                  // reduction size: K (GEMM1) or I (GEMM2)
  int n_dim;                  // output columns: I (GEMM1) or K (GEMM2)
  int b_rows_per_expert;      // N1 (GEMM1) or K (GEMM2)
  int top_k;
  int num_pairs;
  int num_experts;
  // GEMM1 (kActBias): b1 [E, N1]; GEMM2: b2 [E, K] or null (no biases)
  const moe_bf16* bias;
};

/// 16-byte read-only load. kStream: weights, read once, so they skip L1; else activations (the
/// same x / h row is read by every warp), kept in L1.
template <bool kStream>
MOETUNE_DEVICE uint4 ld_nc_16(const void* p) {
  uint4 r;
  if (kStream) {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  } else {
    asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
  }
  return r;
}

/// acc += dot(w[0..8), x[0..8)) in element order.
MOETUNE_DEVICE float dot8(uint4 w, uint4 x, float acc) {
  const moe_u32 wv[4] = {w.x, w.y, w.z, w.w};
  const moe_u32 xv[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc = fmaf(__uint_as_float(wv[i] << 16), __uint_as_float(xv[i] << 16), acc);
    acc = fmaf(__uint_as_float(wv[i] & 0xffff0000u), __uint_as_float(xv[i] & 0xffff0000u), acc);
  }
  return acc;
}

/// The kRows output columns a warp takes at iteration `it` of a CTA's kBlockN columns from col0
/// (-1: past the chunk or the matrix).
template <int kRows, int kWarps, int kBlockN>
MOETUNE_DEVICE void decode_columns(int it, int col0, int n_dim, int (&col)[kRows]) {
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int cl = it + r * kWarps;
    col[r] = cl < kBlockN && col0 + cl < n_dim ? col0 + cl : -1;
  }
}

/// The end of a decode GEMM1 pass: each (row r, pair i) sum over the warp (warp_sum), times
/// `scale` (fp8 per-tensor: the input's static scale x the expert's weight scale; else 1), plus
/// the bias (gate col[r], up n_dim + col[r]), the activation, then store(r, i, value) on lane
/// i % 32 for each real (r, i) (col[r] >= 0, i < np).
template <int kAct, bool kGated, int kBlockM, int kRows, typename Store>
MOETUNE_DEVICE void decode_gemm1_finish(float (&acc)[kRows][kGated ? 2 : 1][kBlockM],
                                        const int (&col)[kRows], int n_dim, int np, float scale,
                                        Store store, const moe_bf16* bias) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    constexpr bool kBias = act_biased(kAct);
    const bool valid = col[r] >= 0;
    const float bg = kBias && valid ? bias_at(bias, col[r]) : 0.0f;
    const float bu = kBias && kGated && valid ? bias_at(bias, n_dim + col[r]) : 0.0f;
#pragma unroll
    for (int i = 0; i < kBlockM; ++i) {
      float v = warp_sum(acc[r][0][i]) * scale;
      if (kBias) v += bg;
      if (kGated) {
        float up = warp_sum(acc[r][kGated ? 1 : 0][i]) * scale;
        if (kBias) up += bu;
        v = apply_gated_act<kAct>(v, up);
      } else {
        v = apply_act<kAct>(v);
      }
      if (lane == i % 32 && i < np && valid) store(r, i, v);
    }
  }
}

/// One decode GEMM1 pass of a warp (moe_decode_gemm1_kernel): for kRows output columns col[r] (-1:
/// none) of one expert's w1 rows `w` ([N1, K]; silu: gate rows, then up rows at + n_dim), the dot
/// of each row with the x rows xrow[i] (i < np); each lane runs the 16-byte vectors v = lane + 32 j
/// in ascending order (kVec per step, the step's weight loads issued first), reduced by warp_sum;
/// then store(r, i, act) on lane i % 32 for each real (r, i). bias (kActBias): the expert's b1 row,
/// added before the activation (gate col, up n_dim + col).
template <int kAct, bool kGated, int kBlockM, int kRows, int kVec, typename Store>
MOETUNE_DEVICE void decode_gemm1_pass(const moe_bf16* w, int n_dim, int k_dim,
                                      const moe_bf16* const (&xrow)[kBlockM], int np,
                                      const int (&col)[kRows], Store store,
                                      const moe_bf16* bias = nullptr) {
  constexpr int kHalves = kGated ? 2 : 1;
  const int lane = threadIdx.x & 31;
  const int nvec = k_dim >> 3;
  float acc[kRows][kHalves][kBlockM];
  const moe_bf16* wrow[kRows][kHalves];
  bool valid[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    valid[r] = col[r] >= 0;
#pragma unroll
    for (int hh = 0; hh < kHalves; ++hh) {
      wrow[r][hh] = w + (long long)(valid[r] ? col[r] + hh * n_dim : 0) * k_dim;
#pragma unroll
      for (int i = 0; i < kBlockM; ++i) acc[r][hh][i] = 0.0f;
    }
  }
  // NOTE: issuing the next step's weight loads before this step's dot products (two steps in flight
  // per warp, where that cost <= 32 registers; in GEMM2's dots too) kept the bits but made the
  // layer slower at 12 of 16 points on the H200 (S1 M=1 1.27x, S2 M=1 1.18x, S2 M=4 1.14x, H1 M=1
  // 1.12x; 1.00x where it did not apply): the decode stream is not bound by each warp's chain of
  // round trips.
  for (int v0 = 0; v0 < nvec; v0 += 32 * kVec) {
    uint4 wv[kRows][kHalves][kVec];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int hh = 0; hh < kHalves; ++hh) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const int v = v0 + j * 32 + lane;
          wv[r][hh][j] =
              (valid[r] && v < nvec) ? ld_nc_16<true>(wrow[r][hh] + v * 8) : make_uint4(0, 0, 0, 0);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kBlockM; ++i) {
      if (i < np) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const int v = v0 + j * 32 + lane;
          const uint4 xv = v < nvec ? ld_nc_16<false>(xrow[i] + v * 8) : make_uint4(0, 0, 0, 0);
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
#pragma unroll
            for (int hh = 0; hh < kHalves; ++hh) {
              acc[r][hh][i] = dot8(wv[r][hh][j], xv, acc[r][hh][i]);
            }
          }
        }
      }
    }
  }
  decode_gemm1_finish<kAct, kGated, kBlockM, kRows>(acc, col, n_dim, np, 1.0f, store, bias);
}

constexpr int kDecodeBatch = 128;  // pairs of one expert gathered per round (shared memory)

/// The expert of `pair` when this CTA owns it (its pair is the expert's first in pair order),
/// else -1 (the expert is out of range, or an earlier pair's CTA owns it). Every thread calls it.
MOETUNE_DEVICE int decode_owned_expert(DecodeParams const& p, int pair) {
  const int e = p.topk_ids[pair];
  if (e < 0 || e >= p.num_experts) return -1;
  int earlier = 0;
  for (int q = threadIdx.x; q < pair; q += blockDim.x) earlier |= (p.topk_ids[q] == e);
  return __syncthreads_or(earlier) ? -1 : e;
}

/// Warp 0: the next kDecodeBatch pairs of expert e at or after pos, in pair order, into s_pairs;
/// s_count of them, the next round from s_next.
MOETUNE_DEVICE void decode_gather_pairs(DecodeParams const& p, int e, int pos, int* s_pairs,
                                        int& s_count, int& s_next) {
  const int lane = threadIdx.x & 31;
  int count = 0, next = p.num_pairs;
  for (int q0 = pos; q0 < p.num_pairs; q0 += 32) {
    const int q = q0 + lane;
    const bool hit = q < p.num_pairs && p.topk_ids[q] == e;
    const unsigned mask = __ballot_sync(0xffffffffu, hit);
    const int before = __popc(mask & ((1u << lane) - 1u));
    const int room = kDecodeBatch - count;
    if (hit && before < room) s_pairs[count + before] = q;
    if (__popc(mask) > room) {  // full: the next round starts after the last pair taken
      const unsigned last = __ballot_sync(0xffffffffu, hit && before == room - 1);
      next = q0 + __ffs(last);
      count = kDecodeBatch;
      break;
    }
    count += __popc(mask);
  }
  if (lane == 0) {
    s_count = count;
    s_next = next;
  }
}

template <int kAct, bool kGated, int kBlockM, int kBlockN, int kWarps, int kRows, int kVec>
__global__ void __launch_bounds__(kWarps * 32, 1) moe_decode_gemm1_kernel(DecodeParams p) {
  __shared__ int s_pairs[kDecodeBatch];
  __shared__ int s_count, s_next;
  const int warp = threadIdx.x >> 5;
  // Wait first, then let GEMM2 launch: its CTAs would otherwise take SM slots while this grid
  // still waits on the previous kernel (GEMM2 reads nothing before its own wait).
  pdl_wait();
  pdl_launch_dependents();
  const int pair = blockIdx.x;
  const int e = decode_owned_expert(p, pair);
  if (e < 0) return;

  const moe_bf16* w = p.b + (long long)e * p.b_rows_per_expert * p.k_dim;
  const int col0 = blockIdx.y * kBlockN;
  int pos = pair;
  while (pos < p.num_pairs) {
    if (warp == 0) decode_gather_pairs(p, e, pos, s_pairs, s_count, s_next);
    __syncthreads();
    const int count = s_count;
    for (int g0 = 0; g0 < count; g0 += kBlockM) {
      const int np = min(kBlockM, count - g0);
      const moe_bf16* xrow[kBlockM];
#pragma unroll
      for (int i = 0; i < kBlockM; ++i) {
        xrow[i] = p.a + (long long)(s_pairs[g0 + min(i, np - 1)] / p.top_k) * p.k_dim;
      }
      for (int it = warp; it < kBlockN; it += kWarps * kRows) {
        int col[kRows];
        decode_columns<kRows, kWarps, kBlockN>(it, col0, p.n_dim, col);
        decode_gemm1_pass<kAct, kGated, kBlockM, kRows, kVec>(
            w, p.n_dim, p.k_dim, xrow, np, col,
            [&](int r, int i, float v) {
              const long long q = s_pairs[g0 + i];
              p.out[q * p.n_dim + col[r]] = float_to_bf16(v);
            },
            act_biased(kAct) ? p.bias + (long long)e * p.b_rows_per_expert : nullptr);
      }
    }
    pos = s_next;
    __syncthreads();  // s_pairs / s_next are rewritten by the next round
  }
}

/// The w2 row of GEMM2 item `item` (top-k slot j = item / kBlockN, column col0 + item % kBlockN)
/// of token t, or nullptr when the slot's expert is out of range or the column past the end.
/// The dot products of GEMM2's items into s_dot.
template <int kBlockN, int kWarps, int kRows, int kVec>
MOETUNE_DEVICE void decode_gemm2_dots(DecodeParams const& p, int t, int col0, float* s_dot) {
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int items = p.top_k * kBlockN;
  const int nvec = p.k_dim >> 3;
  for (int it = warp; it < items; it += kWarps * kRows) {
    float acc[kRows];
    const moe_bf16* wrow[kRows];
    const moe_bf16* hrow[kRows];
    bool valid[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int item = it + r * kWarps;
      const int j = item / kBlockN, c = item % kBlockN;
      const int pair = t * p.top_k + j;
      const int e = item < items ? p.topk_ids[pair] : -1;
      valid[r] = item < items && e >= 0 && e < p.num_experts && col0 + c < p.n_dim;
      wrow[r] = p.b + (valid[r] ? ((long long)e * p.b_rows_per_expert + col0 + c) * p.k_dim : 0);
      hrow[r] = p.a + (valid[r] ? (long long)pair * p.k_dim : 0);
      acc[r] = 0.0f;
    }
    for (int v0 = 0; v0 < nvec; v0 += 32 * kVec) {
      uint4 wv[kRows][kVec];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const int v = v0 + j * 32 + lane;
          if (!(valid[r] && v < nvec)) {
            wv[r][j] = make_uint4(0, 0, 0, 0);
          } else {
            wv[r][j] = ld_nc_16<true>(wrow[r] + v * 8);
          }
        }
      }
      // NOTE: loading every h vector of the step before the first dot (ncu at S1 M=1 had each h
      // load waiting behind the guarded dot before it) made this kernel 10-13% faster alone but the
      // layer 2-5% slower on H200, same bits (S1 M=1 38.5 -> 40.3 us, S2 M=1 26.0 -> 26.5; two
      // builds A B in one call).
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const int v = v0 + j * 32 + lane;
          if (valid[r] && v < nvec)
            acc[r] = dot8(wv[r][j], ld_nc_16<false>(hrow[r] + v * 8), acc[r]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float v = warp_sum(acc[r]);
      const int item = it + r * kWarps;
      if (lane == 0 && item < items) s_dot[item] = valid[r] ? v : 0.0f;
    }
  }
}

/// out[t, col0 + c] = sum_j topk_weight[t, j] * (s_dot[j, c] + b2 of slot j's expert), in fp32,
/// j ascending; every thread of the CTA takes columns.
template <int kBlockN>
MOETUNE_DEVICE void decode_combine(DecodeParams const& p, int t, int col0, const float* s_dot) {
  for (int c = threadIdx.x; c < kBlockN; c += blockDim.x) {
    if (col0 + c >= p.n_dim) continue;
    float sum = 0.0f;
    for (int j = 0; j < p.top_k; ++j) {
      float d = s_dot[j * kBlockN + c];
      if (p.bias != nullptr) {  // b2 of the slot's expert, before its routing weight
        const int e = p.topk_ids[t * p.top_k + j];
        if (e >= 0 && e < p.num_experts) d += bias_at(p.bias, (long long)e * p.n_dim + col0 + c);
      }
      sum = fmaf(p.topk_weights[t * p.top_k + j], d, sum);
    }
    p.out[(long long)t * p.n_dim + col0 + c] = float_to_bf16(sum);
  }
}

template <int kBlockN, int kWarps, int kRows, int kVec>
__global__ void __launch_bounds__(kWarps * 32) moe_decode_gemm2_kernel(DecodeParams p) {
  extern __shared__ __align__(16) float s_dot[];  // [top_k][kBlockN] fp32 dots
  const int t = blockIdx.x;
  const int col0 = blockIdx.y * kBlockN;
  pdl_launch_dependents();
  // NOTE: each warp's first step of w2 loads issued before this wait (into the registers that step
  // uses anyway; same bits) was a wash on the H200 in three two-build A/Bs at 14 decode points: S2
  // M=1 0.98-0.99x, H5 M=4 1.005-1.010x, the rest within +-0.5%; with the wait inside the step
  // loop, H2 / H3 M=1 1.02-1.03x; a first step peeled out of the loop made ptxas spill 6-8 bytes in
  // unshipped candidates. Two or three steps before the wait, GEMM1's first step held through its
  // pair gather, and L2 prefetches of either GEMM's weights (bulk or by line) were slower.
  pdl_wait();  // h from GEMM1
  decode_gemm2_dots<kBlockN, kWarps, kRows, kVec>(p, t, col0, s_dot);
  __syncthreads();
  decode_combine<kBlockN>(p, t, col0, s_dot);
}

}  // namespace moetune_dev
