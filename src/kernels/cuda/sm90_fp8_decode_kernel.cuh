// sm90_fp8_decode_kernel.cuh: the decode kernels (sm90_decode_kernel.cuh) on e4m3 weights, for
// tiny M: the whole fp8 layer in two launches, no align, quant or combine launch.
//   GEMM1 (moe_fp8_decode_gemm1_kernel): the CTA of an expert's first pair takes all its pairs,
//     as the bf16 kernel does; per pass of kBlockM pairs it first quantises their x rows into
//     shared memory (fp8_quantise_group: the quant kernel's rule, so the same e4m3 values and
//     scales), then streams its w1 rows once: h[pair, I] = act(sum over k-blocks kb of
//     dot_kb(w1 row, xq) * xs[kb] * w1_scale[row / 128, kb]) in bf16, pair order.
//   GEMM2 (moe_fp8_decode_gemm2_kernel): per token, its top_k rows of h quantised into shared
//     memory the same way, then item (j, c) = the scaled dot of row c of w2[ids[t, j]] with slot
//     j's row, and out[t, c] = sum_j topk_weight[t, j] * item(j, c) (decode_combine).
// Per-tensor (kBlock false): x / h quantised with the static input scale; a row's dot is scaled
// once, by that scale times the expert's weight scale. Each lane reads 16-byte vectors of 16
// e4m3 values, so the 8 lanes of a 128-value k-block share its scales; a lane's sums run in
// element order, the k-blocks in the lane's order, then the fixed warp_sum tree: deterministic.
// Knobs as the bf16 decode kernels', but block_k / 512 vectors per lane per step. Needs K and I
// multiples of 128 (fp8_can_implement). Covered by tests/python/test_fp8_gpu.py.
#pragma once

#include "sm90_decode_kernel.cuh"
#include "sm90_fp8_quant_kernel.cuh"

namespace moetune_dev {

struct Fp8DecodeParams {
  DecodeParams d;        // b: e4m3 weights; GEMM1 a = x, GEMM2 a = h (bf16)
  const float* w_scale;  // block: [E, b_rows_per_expert / 128, k_dim / 128]; tensor: [E]
  const float* a_scale;  // tensor: [1], the static scale of this GEMM's input; block: unused
};

/// 16 e4m3 values (16 bytes, element order) as floats.
MOETUNE_DEVICE void e4m3x16_to_float(uint4 q, float (&out)[16]) {
  const moe_u32 v[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 lo = e4m3x2_to_float2((unsigned short)(v[i] & 0xFFFFu));
    const float2 hi = e4m3x2_to_float2((unsigned short)(v[i] >> 16));
    out[4 * i] = lo.x;
    out[4 * i + 1] = lo.y;
    out[4 * i + 2] = hi.x;
    out[4 * i + 3] = hi.y;
  }
}

/// dot(w[0..16), x[0..16)) in element order, from 0; w as 16 e4m3 values.
MOETUNE_DEVICE float dot16_e4m3(uint4 w, const float (&x)[16]) {
  float wf[16];
  e4m3x16_to_float(w, wf);
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) acc = fmaf(wf[i], x[i], acc);
  return acc;
}

/// Quantises `rows` bf16 rows of k_dim values (row_ptr(i)) into q [rows][k_dim] e4m3 and, when
/// kBlock, s [rows][k_dim / 128] scales: one warp per 128-value group, the CTA's warps in turn.
/// A warp loads up to kDecodeStageBatch of its groups before it quantises them, so their round
/// trips overlap (one group at a time ran the decode layer 2-7% slower at 7 of 8 points of F2 /
/// F4 at M = 1 and 4 on an H100, 2% faster at the eighth).
constexpr int kDecodeStageBatch = 8;
template <bool kBlock, int kWarps, typename RowPtr>
MOETUNE_DEVICE void fp8_decode_stage_rows(RowPtr row_ptr, int rows, int k_dim,
                                          const float* tensor_scale, unsigned char* q, float* s) {
  const int groups = k_dim / 128, units = rows * groups;
  const int lane = threadIdx.x & 31;
  for (int u0 = threadIdx.x >> 5; u0 < units; u0 += kWarps * kDecodeStageBatch) {
    uint2 raw[kDecodeStageBatch];
#pragma unroll
    for (int b = 0; b < kDecodeStageBatch; ++b) {
      const int u = u0 + b * kWarps;
      raw[b] =
          u < units
              ? *reinterpret_cast<const uint2*>(row_ptr(u / groups) + (u % groups) * 128 + lane * 4)
              : make_uint2(0, 0);
    }
#pragma unroll
    for (int b = 0; b < kDecodeStageBatch; ++b) {
      const int u = u0 + b * kWarps;
      if (u >= units) break;
      const float sc = fp8_quantise_lanes<kBlock>(raw[b], q + (long long)u * 128, tensor_scale);
      if (kBlock && lane == 0) s[u] = sc;
    }
  }
}

/// One fp8 decode GEMM1 pass of a warp: decode_gemm1_pass (sm90_decode_kernel.cuh) with the
/// expert's e4m3 rows `w`, their block scales `ws` (kBlock: [rows / 128][k-blocks]) and the
/// pass's quantised x rows in shared memory (xq [kBlockM][k_dim], xs [kBlockM][k-blocks]).
/// tensor_scale (per-tensor): what each dot is multiplied by at the end.
template <int kAct, bool kGated, bool kBlock, int kBlockM, int kRows, int kVec, typename Store>
MOETUNE_DEVICE void fp8_decode_gemm1_pass(const unsigned char* w, const float* ws, int n_dim,
                                          int k_dim, const unsigned char* xq, const float* xs,
                                          int np, const int (&col)[kRows], float tensor_scale,
                                          Store store, const moe_bf16* bias) {
  constexpr int kHalves = kGated ? 2 : 1;
  const int lane = threadIdx.x & 31;
  const int nvec = k_dim >> 4, kbs = k_dim >> 7;
  float acc[kRows][kHalves][kBlockM];
  const unsigned char* wrow[kRows][kHalves];
  const float* srow[kRows][kHalves];
  bool valid[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    valid[r] = col[r] >= 0;
#pragma unroll
    for (int hh = 0; hh < kHalves; ++hh) {
      const int row = valid[r] ? col[r] + hh * n_dim : 0;
      wrow[r][hh] = w + (long long)row * k_dim;
      srow[r][hh] = ws + (long long)(row >> 7) * kbs;
#pragma unroll
      for (int i = 0; i < kBlockM; ++i) acc[r][hh][i] = 0.0f;
    }
  }
  for (int v0 = 0; v0 < nvec; v0 += 32 * kVec) {
    uint4 wv[kRows][kHalves][kVec];
    float sw[kRows][kHalves][kVec];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int hh = 0; hh < kHalves; ++hh) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const int v = v0 + j * 32 + lane;
          const bool in = valid[r] && v < nvec;
          wv[r][hh][j] = in ? ld_nc_16<true>(wrow[r][hh] + v * 16) : make_uint4(0, 0, 0, 0);
          sw[r][hh][j] = kBlock && in ? srow[r][hh][v >> 3] : 0.0f;
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kBlockM; ++i) {
      if (i >= np) continue;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int v = v0 + j * 32 + lane;
        if (v >= nvec) continue;
        float xf[16];
        e4m3x16_to_float(*reinterpret_cast<const uint4*>(xq + i * k_dim + v * 16), xf);
        const float sx = kBlock ? xs[i * kbs + (v >> 3)] : 1.0f;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
#pragma unroll
          for (int hh = 0; hh < kHalves; ++hh) {
            const float d = dot16_e4m3(wv[r][hh][j], xf);
            acc[r][hh][i] = kBlock ? fmaf(d, sx * sw[r][hh][j], acc[r][hh][i]) : acc[r][hh][i] + d;
          }
        }
      }
    }
  }
  decode_gemm1_finish<kAct, kGated, kBlockM, kRows>(acc, col, n_dim, np, tensor_scale, store, bias);
}

template <int kAct, bool kGated, bool kBlock, int kBlockM, int kBlockN, int kWarps, int kRows,
          int kVec>
__global__ void __launch_bounds__(kWarps * 32, 1) moe_fp8_decode_gemm1_kernel(Fp8DecodeParams p) {
  extern __shared__ __align__(16) unsigned char s_xq[];  // [kBlockM][K] e4m3, then the scales
  __shared__ int s_pairs[kDecodeBatch];
  __shared__ int s_count, s_next;
  DecodeParams const& d = p.d;
  float* s_xs = reinterpret_cast<float*>(s_xq + kBlockM * d.k_dim);  // [kBlockM][K / 128]
  const int warp = threadIdx.x >> 5;
  pdl_wait();  // as the bf16 GEMM1: wait first, then let GEMM2 launch
  pdl_launch_dependents();
  const int pair = blockIdx.x;
  const int e = decode_owned_expert(d, pair);
  if (e < 0) return;
  const long long rows = d.b_rows_per_expert;
  const unsigned char* w = reinterpret_cast<const unsigned char*>(d.b) + e * rows * d.k_dim;
  const float* ws = kBlock ? p.w_scale + e * (rows / 128) * (d.k_dim / 128) : nullptr;
  const float tensor_scale = kBlock ? 1.0f : *p.a_scale * p.w_scale[e];
  const moe_bf16* bias = act_biased(kAct) ? d.bias + e * rows : nullptr;
  const int col0 = blockIdx.y * kBlockN;
  int pos = pair;
  while (pos < d.num_pairs) {
    if (warp == 0) decode_gather_pairs(d, e, pos, s_pairs, s_count, s_next);
    __syncthreads();
    const int count = s_count;
    for (int g0 = 0; g0 < count; g0 += kBlockM) {
      const int np = min(kBlockM, count - g0);
      fp8_decode_stage_rows<kBlock, kWarps>(
          [&](int i) { return d.a + (long long)(s_pairs[g0 + i] / d.top_k) * d.k_dim; }, np,
          d.k_dim, p.a_scale, s_xq, s_xs);
      __syncthreads();
      for (int it = warp; it < kBlockN; it += kWarps * kRows) {
        int col[kRows];
        decode_columns<kRows, kWarps, kBlockN>(it, col0, d.n_dim, col);
        fp8_decode_gemm1_pass<kAct, kGated, kBlock, kBlockM, kRows, kVec>(
            w, ws, d.n_dim, d.k_dim, s_xq, s_xs, np, col, tensor_scale,
            [&](int r, int i, float v) {
              d.out[(long long)s_pairs[g0 + i] * d.n_dim + col[r]] = float_to_bf16(v);
            },
            bias);
      }
      __syncthreads();  // the staged rows are rewritten by the next pass
    }
    pos = s_next;
    __syncthreads();  // s_pairs / s_next are rewritten by the next round
  }
}

/// The items of fp8 GEMM2 (decode_gemm2_dots, sm90_decode_kernel.cuh) with e4m3 w2 rows and the
/// token's top_k rows of h quantised in shared memory (hq [top_k][I], hs [top_k][I / 128]).
template <bool kBlock, int kBlockN, int kWarps, int kRows, int kVec>
MOETUNE_DEVICE void fp8_decode_gemm2_dots(Fp8DecodeParams const& p, int t, int col0,
                                          const unsigned char* hq, const float* hs, float* s_dot) {
  DecodeParams const& d = p.d;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int items = d.top_k * kBlockN;
  const int nvec = d.k_dim >> 4, kbs = d.k_dim >> 7;
  for (int it = warp; it < items; it += kWarps * kRows) {
    float acc[kRows];
    const unsigned char* wrow[kRows];
    const float* srow[kRows];  // block: the row's weight-block scales [k-blocks]
    float scale[kRows];        // per-tensor: the input's static scale x the expert's
    int slot[kRows];
    bool valid[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int item = it + r * kWarps;
      slot[r] = item / kBlockN;
      const int c = col0 + item % kBlockN;
      const int e = item < items ? d.topk_ids[t * d.top_k + slot[r]] : -1;
      valid[r] = item < items && e >= 0 && e < d.num_experts && c < d.n_dim;
      const long long row = valid[r] ? (long long)e * d.b_rows_per_expert + c : 0;
      wrow[r] = reinterpret_cast<const unsigned char*>(d.b) + row * d.k_dim;
      srow[r] = p.w_scale + (kBlock ? (row >> 7) * kbs : 0);
      scale[r] = !kBlock && valid[r] ? *p.a_scale * p.w_scale[e] : 1.0f;
      acc[r] = 0.0f;
    }
    for (int v0 = 0; v0 < nvec; v0 += 32 * kVec) {
      uint4 wv[kRows][kVec];
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const int v = v0 + j * 32 + lane;
          wv[r][j] =
              valid[r] && v < nvec ? ld_nc_16<true>(wrow[r] + v * 16) : make_uint4(0, 0, 0, 0);
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int j = 0; j < kVec; ++j) {
          const int v = v0 + j * 32 + lane;
          if (!valid[r] || v >= nvec) continue;
          float xf[16];
          e4m3x16_to_float(*reinterpret_cast<const uint4*>(hq + slot[r] * d.k_dim + v * 16), xf);
          const float dv = dot16_e4m3(wv[r][j], xf);
          acc[r] = kBlock ? fmaf(dv, hs[slot[r] * kbs + (v >> 3)] * srow[r][v >> 3], acc[r])
                          : acc[r] + dv;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float v = warp_sum(acc[r]) * scale[r];
      const int item = it + r * kWarps;
      if (lane == 0 && item < items) s_dot[item] = valid[r] ? v : 0.0f;
    }
  }
}

/// Dynamic shared memory of the fp8 decode GEMM2: s_dot [top_k][kBlockN] fp32 and the h scales
/// [top_k][I / 128] fp32 (each padded to 16 bytes), the quantised h rows [top_k][I]
/// (sm90_decode_geometry.cpp sizes it the same way).
template <bool kBlock, int kBlockN, int kWarps, int kRows, int kVec>
__global__ void __launch_bounds__(kWarps * 32) moe_fp8_decode_gemm2_kernel(Fp8DecodeParams p) {
  extern __shared__ __align__(16) float s_dot[];
  DecodeParams const& d = p.d;
  const int t = blockIdx.x;
  const int col0 = blockIdx.y * kBlockN;
  float* s_hs = s_dot + ((d.top_k * kBlockN + 3) & ~3);
  unsigned char* s_hq =
      reinterpret_cast<unsigned char*>(s_hs + ((d.top_k * (d.k_dim / 128) + 3) & ~3));
  pdl_launch_dependents();
  pdl_wait();                                                  // h from GEMM1
  const moe_bf16* h = d.a + (long long)t * d.top_k * d.k_dim;  // the token's slots, in order
  fp8_decode_stage_rows<kBlock, kWarps>([&](int j) { return h + (long long)j * d.k_dim; }, d.top_k,
                                        d.k_dim, p.a_scale, s_hq, s_hs);
  __syncthreads();
  fp8_decode_gemm2_dots<kBlock, kBlockN, kWarps, kRows, kVec>(p, t, col0, s_hq, s_hs, s_dot);
  __syncthreads();
  decode_combine<kBlockN>(d, t, col0, s_dot);
}

}  // namespace moetune_dev
