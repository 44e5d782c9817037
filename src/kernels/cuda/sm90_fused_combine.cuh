// sm90_fused_combine.cuh: the combine step inside GEMM2 (lever fused_combine), so the layer needs
// no combine launch and no second pass over y.
//   A GEMM2 tile stores its y rows (bf16, pair order) as usual. Then, for every row of the tile
//   that holds a pair, one thread adds 1 to the counter of (token, n-tile) in global memory; the
//   thread that sees top_k - 1 before its add is the last of the token's top_k tiles for those
//   columns, and its warp sums y[t * top_k + j] for j ascending in fp32 and writes out[t] in
//   bf16: the values and the order of moe_combine_kernel, so the output bits are the unfused
//   path's. Which CTA sums a token varies between runs; what it sums and in which order do not.
// Counters: [num_tokens, chunks] (chunks = n-tiles of GEMM2), zeroed by align each call; the last
// arrival is taken modulo top_k, so GEMM2 alone may be replayed (per-stage timing) without align.
// Memory order: the tile's y stores happen-before the counting threads' adds (the caller syncs
// the storing threads with the counting ones first, at CTA scope); each counting thread fences at
// GPU scope before its add (release, cumulative over what the CTA barrier made it observe), the
// winner fences after it (acquire) and reads y through L2 (ld.global.cg: another SM wrote it, and
// a line of L1 may be stale when a 16-byte chunk of a neighbouring n-tile was read before).
// Covered by tests/kernels/cuda/sm90_gather_test.cpp (FusedCombineLeverGivesTheBitsOfItsOffPath).
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

/// Where the fused combine writes, and its counters (out == nullptr: no fused combine).
struct FusedCombineArgs {
  moe_bf16* out;       // [M, n_dim]
  unsigned* counters;  // [M, chunks]
  int chunks;          // counters per token: GEMM2's n-tiles
};

/// Shared-memory int with CTA-scope release / acquire: a warpgroup's count of stored tiles,
/// published to the warps that combine them (schedules tma_ws and pingpong).
MOETUNE_DEVICE void st_release_cta(int* p, int v) {
  asm volatile("st.release.cta.shared::cta.b32 [%0], %1;\n" ::"r"(smem_u32(p)), "r"(v) : "memory");
}
/// Lane work: spins (with a short sleep) until *p >= target.
MOETUNE_DEVICE void wait_at_least_cta(const int* p, int target) {
  for (;;) {
    int v;
    asm volatile("ld.acquire.cta.shared::cta.b32 %0, [%1];\n"
                 : "=r"(v)
                 : "r"(smem_u32(p))
                 : "memory");
    if (v >= target) return;
    __nanosleep(64);
  }
}

MOETUNE_DEVICE uint4 ld_cg_16(const void* p) {
  uint4 v;
  asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

MOETUNE_DEVICE void add_bf16x8(float (&sum)[8], uint4 q) {
  const moe_u32 w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    sum[2 * i] += __uint_as_float(w[i] << 16);
    sum[2 * i + 1] += __uint_as_float(w[i] & 0xffff0000u);
  }
}

/// out[t, col .. col + 8) = sum_j y[t * top_k + j, col .. col + 8), j ascending, in fp32 (4 rows
/// of y in flight at a time).
MOETUNE_DEVICE void combine_8_columns(const moe_bf16* y, moe_bf16* out, int t, int top_k, int n_dim,
                                      int col) {
  float sum[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) sum[i] = 0.0f;
  const moe_bf16* src = y + (long long)t * top_k * n_dim + col;
  for (int j0 = 0; j0 < top_k; j0 += 4) {
    uint4 q[4];
#pragma unroll
    for (int d = 0; d < 4; ++d) {
      if (j0 + d < top_k) q[d] = ld_cg_16(src + (long long)(j0 + d) * n_dim);
    }
#pragma unroll
    for (int d = 0; d < 4; ++d) {
      if (j0 + d < top_k) add_bf16x8(sum, q[d]);
    }
  }
  uint4 o;
  o.x = pack_bf16x2(sum[0], sum[1]);
  o.y = pack_bf16x2(sum[2], sum[3]);
  o.z = pack_bf16x2(sum[4], sum[5]);
  o.w = pack_bf16x2(sum[6], sum[7]);
  *reinterpret_cast<uint4*>(out + (long long)t * n_dim + col) = o;
}

/// Warp `warp` of the `nwarps` that combine a stored GEMM2 tile: rows tile_pairs[0 .. rows) (pair
/// ids, -1 = padding) of n-tile `chunk`, columns [n0, n0 + valid_n). Every lane of the warp calls
/// it; the tile's y stores must happen-before the call (see the top of this file).
MOETUNE_DEVICE void fused_combine_tile(FusedCombineArgs const& fc, const moe_bf16* y, int top_k,
                                       int n_dim, const int* tile_pairs, int rows, int chunk,
                                       int n0, int valid_n, int warp, int nwarps) {
  const int lane = threadIdx.x & 31;
  const int vecs = valid_n / 8;  // 16-byte column groups of the tile (n_dim, n0: multiples of 8)
  // Lanes per token: the column groups rounded up to a power of two, so a warp sums 32 / that
  // many tokens at once.
  const int per_tok = vecs > 16 ? 32 : vecs > 8 ? 16 : vecs > 4 ? 8 : 4;
  const int toks = 32 / per_tok;
  for (int base = 0; base < rows; base += 32 * nwarps) {
    const int r = base + lane * nwarps + warp;  // rows interleaved over the warps
    int won = -1;
    if (r < rows) {
      const int pair = tile_pairs[r];
      if (pair >= 0) {
        const int t = pair / top_k;
        __threadfence();  // release: the tile's y rows before the count
        const unsigned seen = atomicAdd(fc.counters + (long long)t * fc.chunks + chunk, 1u);
        if (seen % static_cast<unsigned>(top_k) == static_cast<unsigned>(top_k - 1)) won = t;
      }
    }
    unsigned win = __ballot_sync(0xffffffffu, won >= 0);
    if (win == 0) continue;
    __threadfence();  // acquire: the other tiles' y rows of the won tokens
    while (win != 0) {
      int mine = -1;
      for (int q = 0; q < toks && win != 0; ++q) {
        const int src = __ffs(win) - 1;
        win &= win - 1;
        const int t = __shfl_sync(0xffffffffu, won, src);
        if (q == lane / per_tok) mine = t;
      }
      if (mine < 0) continue;
      for (int v = lane % per_tok; v < vecs; v += per_tok) {
        combine_8_columns(y, fc.out, mine, top_k, n_dim, n0 + v * 8);
      }
    }
  }
}

}  // namespace moetune_dev
