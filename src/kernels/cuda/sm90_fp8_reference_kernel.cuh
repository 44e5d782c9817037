// sm90_fp8_reference_kernel.cuh: the testbed's fp8 layer (problem quant fp8_block / fp8_tensor):
// its random inputs and a plain fp32 GPU reference for a sample of tokens.
//   inputs:    e4m3 weights drawn as e4m3(64 N(0,1)) (the format's range, none saturated) and
//              fp32 scales base * 10^u, u uniform in [-spread, spread]: with spread 2 neighbouring
//              128x128 blocks differ by up to four orders of magnitude, so a kernel that applies
//              the wrong block's scale fails the check;
//   reference: the kernels' quantisation of their inputs repeated (per token per 128 columns
//              amax / 448, or the static scale; h rounded to bf16 first, as GEMM1 stores it),
//              every operand dequantised, products summed in fp32 by one warp per output in a
//              fixed shuffle order (the bf16 reference's scheme, sm90_reference_kernel.cuh).
// The reference's h sums in another order than the kernels', so a rare element of h rounds to the
// other neighbouring bf16 and e4m3 value, and moves its group's scale where it is the amax: the
// checks' fp8 tolerance (kernels/testbed.cpp) allows for it. Covered by
// tests/kernels/cuda/sm90_fp8_testbed_test.cpp and Sm90Jit.Fp8TestbedReferenceCompiles.
#pragma once

#include "sm90_common.cuh"
#include "sm90_reference_kernel.cuh"

namespace moetune_dev {

/// out[i] = e4m3(64 N(0,1)), counter-based like moe_fill_normal_kernel.
__global__ void __launch_bounds__(256)
    moe_fill_fp8_e4m3_kernel(unsigned char* out, long long n, moe_u64 seed) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const moe_u64 r = splitmix64(seed ^ splitmix64((moe_u64)i));
    const float u1 = ((float)((r >> 40) & 0xffffff) + 1.0f) * (1.0f / 16777216.0f);
    const float u2 = (float)((r >> 8) & 0xffffff) * (1.0f / 16777216.0f);
    const float z = sqrtf(-2.0f * logf(u1)) * cosf(6.283185307179586f * u2);
    out[i] = (unsigned char)(fp8x2_e4m3(64.0f * z, 0.0f) & 0xFF);
  }
}

/// out[i] = base * 10^u, u uniform in [-spread, spread].
__global__ void __launch_bounds__(256)
    moe_fill_fp8_scale_kernel(float* out, long long n, moe_u64 seed, float base, float spread) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const moe_u64 r = splitmix64(seed ^ splitmix64((moe_u64)i));
    const float u = (float)((r >> 40) & 0xffffff) * (1.0f / 16777216.0f);
    out[i] = base * exp10f(spread * (2.0f * u - 1.0f));
  }
}

/// One e4m3 value as float (exact).
MOETUNE_DEVICE float e4m3_to_float(unsigned char q) { return e4m3x2_to_float2(q).x; }

struct RefFp8Params {
  RefParams r;            // x [M, K] bf16; w1, w2 e4m3; h fp32 [sample pairs, I]; out
  const float* w1_scale;  // block: [E, N1/128, K/128]; tensor: [E]
  const float* w2_scale;  // block: [E, K/128, I/128]; tensor: [E]
  const float* a1_scale;  // tensor: [1]; block: null (per token per group)
  const float* a2_scale;  // tensor: [1]; block: null
  float* xd;              // [sample, K]: x quantised and dequantised
  int block;              // 1: fp8_block, 0: fp8_tensor
};

/// One warp per row and 128 columns of src (x's sampled tokens: rows = sample, h_mode 0; h:
/// rows = sample pairs, h_mode 1, rounded to bf16 first), quantised as the kernels do and written
/// back dequantised to dst.
__global__ void __launch_bounds__(256)
    moe_ref_fp8_quant_kernel(RefFp8Params p, int h_mode, float* dst) {
  const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  const int cols = h_mode ? p.r.i_dim : p.r.k_dim;
  const long long rows = h_mode ? (long long)p.r.num_sample * p.r.top_k : p.r.num_sample;
  if (w >= rows * (cols / 128)) return;
  const long long row = w / (cols / 128);
  const int c0 = (int)(w % (cols / 128)) * 128;
  float v[4];
  for (int i = 0; i < 4; ++i) {
    const int c = c0 + lane * 4 + i;
    v[i] = h_mode ? bf16_to_float(float_to_bf16(p.r.h[row * cols + c]))
                  : bf16_to_float(p.r.x[(long long)p.r.tokens[row] * cols + c]);
  }
  float s;
  if (p.block) {
    float amax = 0.0f;
    for (int i = 0; i < 4; ++i) amax = fmaxf(amax, fabsf(v[i]));
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    s = __fdiv_rn(fmaxf(amax, 1e-10f), 448.0f);
  } else {
    s = h_mode ? *p.a2_scale : *p.a1_scale;
  }
  for (int i = 0; i < 4; ++i) {
    const unsigned char q = (unsigned char)(fp8x2_e4m3(__fdiv_rn(v[i], s), 0.0f) & 0xFF);
    dst[row * cols + c0 + lane * 4 + i] = e4m3_to_float(q) * s;
  }
}

/// The dequantised weight w[e][row][col] of a [rows, cols] expert matrix.
MOETUNE_DEVICE float ref_fp8_weight(const unsigned char* w, const float* scale, int block, int e,
                                    long long row, int col, long long rows, int cols) {
  const float q = e4m3_to_float(w[((long long)e * rows + row) * cols + col]);
  if (!block) return q * scale[e];
  const long long sb = ((long long)e * (rows / 128) + row / 128) * (cols / 128) + col / 128;
  return q * scale[sb];
}

/// h[pair, n] = act(xd @ dq(w1[e])^T) in fp32, one warp per element (moe_ref_gemm1_kernel's walk).
__global__ void __launch_bounds__(256) moe_ref_fp8_gemm1_kernel(RefFp8Params p) {
  const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  RefParams const& r = p.r;
  if (w >= (long long)r.num_sample * r.top_k * r.i_dim) return;
  const int n = (int)(w % r.i_dim);
  const int sj = (int)(w / r.i_dim);
  const int s = sj / r.top_k;
  const int e = r.topk_ids[(long long)r.tokens[s] * r.top_k + sj % r.top_k];
  const long long n1 = r.gated ? 2LL * r.i_dim : r.i_dim;
  const auto* w1 = static_cast<const unsigned char*>(static_cast<const void*>(r.w1));
  float g = 0.0f, u = 0.0f;
  for (int k = lane; k < r.k_dim; k += 32) {
    const float xv = p.xd[(long long)s * r.k_dim + k];
    g += xv * ref_fp8_weight(w1, p.w1_scale, p.block, e, n, k, n1, r.k_dim);
    if (r.gated) u += xv * ref_fp8_weight(w1, p.w1_scale, p.block, e, r.i_dim + n, k, n1, r.k_dim);
  }
  g = warp_sum(g);
  u = warp_sum(u);
  if (lane == 0) r.h[(long long)sj * r.i_dim + n] = ref_activation(r.act, r.gated, g, u);
}

/// out[s, c] = sum_j weight * (hd[pair] . dq(w2[e])[c]); hd in r.h (quantised in place).
__global__ void __launch_bounds__(256) moe_ref_fp8_gemm2_kernel(RefFp8Params p) {
  const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  RefParams const& r = p.r;
  if (w >= (long long)r.num_sample * r.k_dim) return;
  const int c = (int)(w % r.k_dim);
  const int s = (int)(w / r.k_dim);
  const auto* w2 = static_cast<const unsigned char*>(static_cast<const void*>(r.w2));
  float total = 0.0f;
  for (int j = 0; j < r.top_k; ++j) {
    const long long pair = (long long)r.tokens[s] * r.top_k + j;
    const int e = r.topk_ids[pair];
    const float* hr = r.h + ((long long)s * r.top_k + j) * r.i_dim;
    float acc = 0.0f;
    for (int i = lane; i < r.i_dim; i += 32) {
      acc += hr[i] * ref_fp8_weight(w2, p.w2_scale, p.block, e, c, i, r.k_dim, r.i_dim);
    }
    total += r.topk_weights[pair] * warp_sum(acc);
  }
  if (lane == 0) r.out[(long long)s * r.k_dim + c] = total;
}

}  // namespace moetune_dev
