// sm90_reference_kernel.cuh: a plain fp32 GPU reference of the MoE layer for a sample of tokens,
// used to check the fast kernels at sizes the CPU fp64 reference cannot reach in time.
// One warp per output element, lanes split the reduction, fixed shuffle order; the intermediate
// stays fp32 (no bf16 rounding), so it is a stricter reference than the kernels' own data path.
// Layouts as in sm90_gather_kernel.cuh. Covered by sm90_gather_test.cpp (it is checked against the
// CPU fp64 reference on small shapes there).
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

struct RefParams {
  const moe_bf16* x;    // [M, K]
  const moe_bf16* w1;   // [E, N1, K]
  const moe_bf16* w2;   // [E, K, I]
  const int* topk_ids;  // [M, top_k]
  const float* topk_weights;
  const int* tokens;  // [num_sample] token ids to check
  float* h;           // [num_sample * top_k, I] fp32 scratch
  float* out;         // [num_sample, K] fp32
  int num_sample, k_dim, i_dim, top_k, act, gated;
};

/// The activation of GEMM1's gate (and, gated, up) sums.
MOETUNE_DEVICE float ref_activation(int act, int gated, float g, float u) {
  if (gated) return act == kActSwigluOai ? act_swigluoai(g, u) : act_silu(g) * u;
  if (act == kActRelu2) return act_relu2(g);
  if (act == kActGelu) return act_gelu(g);
  return act_gelu_tanh(g);
}

__global__ void __launch_bounds__(256) moe_ref_gemm1_kernel(RefParams p) {
  const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  const long long total = (long long)p.num_sample * p.top_k * p.i_dim;
  if (w >= total) return;
  const int n = (int)(w % p.i_dim);
  const int sj = (int)(w / p.i_dim);
  const int s = sj / p.top_k, j = sj % p.top_k;
  const int tok = p.tokens[s];
  const int e = p.topk_ids[(long long)tok * p.top_k + j];
  const long long n1 = p.gated ? 2LL * p.i_dim : p.i_dim;
  const moe_bf16* xr = p.x + (long long)tok * p.k_dim;
  const moe_bf16* gr = p.w1 + ((long long)e * n1 + n) * p.k_dim;
  const moe_bf16* ur = p.w1 + ((long long)e * n1 + p.i_dim + n) * p.k_dim;
  float g = 0.0f, u = 0.0f;
  for (int k = lane; k < p.k_dim; k += 32) {
    const float xv = bf16_to_float(xr[k]);
    g += xv * bf16_to_float(gr[k]);
    if (p.gated) u += xv * bf16_to_float(ur[k]);
  }
  g = warp_sum(g);
  u = warp_sum(u);
  if (lane == 0) p.h[(long long)sj * p.i_dim + n] = ref_activation(p.act, p.gated, g, u);
}

__global__ void __launch_bounds__(256) moe_ref_gemm2_kernel(RefParams p) {
  const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (w >= (long long)p.num_sample * p.k_dim) return;
  const int c = (int)(w % p.k_dim);
  const int s = (int)(w / p.k_dim);
  const int tok = p.tokens[s];
  float total = 0.0f;
  for (int j = 0; j < p.top_k; ++j) {
    const long long pair = (long long)tok * p.top_k + j;
    const int e = p.topk_ids[pair];
    const moe_bf16* wr = p.w2 + ((long long)e * p.k_dim + c) * p.i_dim;
    const float* hr = p.h + ((long long)s * p.top_k + j) * p.i_dim;
    float acc = 0.0f;
    for (int i = lane; i < p.i_dim; i += 32) acc += hr[i] * bf16_to_float(wr[i]);
    total += p.topk_weights[pair] * warp_sum(acc);
  }
  if (lane == 0) p.out[(long long)s * p.k_dim + c] = total;
}

/// Reads `n` uint4 of a buffer into a sink so the L2 holds none of the timed kernel's data.
__global__ void __launch_bounds__(256)
    moe_l2_flush_kernel(const uint4* buf, long long n, uint4* sink) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    uint4 v = buf[i];
    acc.x ^= v.x;
    acc.y ^= v.y;
    acc.z ^= v.z;
    acc.w ^= v.w;
  }
  if (acc.x == 0x12345678u && acc.y == 0x9abcdef0u) sink[threadIdx.x] = acc;
}

}  // namespace moetune_dev

namespace moetune_dev {

MOETUNE_DEVICE moe_u64 splitmix64(moe_u64 z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// out[i] = bf16(scale * N(0,1)), counter-based (seed, i): the same seed gives the same tensor on
/// any grid. Box-Muller from two 24-bit uniforms in (0, 1].
__global__ void __launch_bounds__(256)
    moe_fill_normal_kernel(moe_bf16* out, long long n, moe_u64 seed, float scale) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const moe_u64 r = splitmix64(seed ^ splitmix64((moe_u64)i));
    const float u1 = ((float)((r >> 40) & 0xffffff) + 1.0f) * (1.0f / 16777216.0f);
    const float u2 = (float)((r >> 8) & 0xffffff) * (1.0f / 16777216.0f);
    const float z = sqrtf(-2.0f * logf(u1)) * cosf(6.283185307179586f * u2);
    out[i] = float_to_bf16(z * scale);
  }
}

}  // namespace moetune_dev
