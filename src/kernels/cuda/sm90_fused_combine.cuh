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

/// kWords 32-bit words at p (16 or 8 bytes, aligned), read through L2 (ld.global.cg).
template <int kWords>
MOETUNE_DEVICE void ld_cg(const void* p, moe_u32 (&w)[kWords]) {
  static_assert(kWords == 4 || kWords == 2, "16- or 8-byte loads");
  if constexpr (kWords == 4) {
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(p));
  } else {
    asm volatile("ld.global.cg.v2.u32 {%0,%1}, [%2];\n" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
  }
}

/// out[t, col .. col + kVec) = sum_j y[t * top_k + j, col .. col + kVec), j ascending, in fp32
/// (kDepth rows of y in flight at a time).
template <int kVec, int kDepth>
MOETUNE_DEVICE void combine_columns(const moe_bf16* y, moe_bf16* out, int t, int top_k, int n_dim,
                                    int col) {
  constexpr int kWords = kVec / 2;
  float sum[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) sum[i] = 0.0f;
  const moe_bf16* src = y + (long long)t * top_k * n_dim + col;
  for (int j0 = 0; j0 < top_k; j0 += kDepth) {
    moe_u32 q[kDepth][kWords];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      if (j0 + d < top_k) ld_cg<kWords>(src + (long long)(j0 + d) * n_dim, q[d]);
    }
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      if (j0 + d >= top_k) continue;
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        sum[2 * i] += __uint_as_float(q[d][i] << 16);
        sum[2 * i + 1] += __uint_as_float(q[d][i] & 0xffff0000u);
      }
    }
  }
  moe_u32 o[kWords];
#pragma unroll
  for (int i = 0; i < kWords; ++i) o[i] = pack_bf16x2(sum[2 * i], sum[2 * i + 1]);
  moe_bf16* dst = out + (long long)t * n_dim + col;
  if constexpr (kWords == 4) {
    *reinterpret_cast<uint4*>(dst) = make_uint4(o[0], o[1], o[2], o[3]);
  } else {
    *reinterpret_cast<uint2*>(dst) = make_uint2(o[0], o[1]);
  }
}

/// Warp `warp` of the `nwarps` that combine a stored GEMM2 tile: rows tile_pairs[0 .. rows) (pair
/// ids, -1 = padding) of n-tile `chunk`, columns [n0, n0 + valid_n). Every lane of the warp calls
/// it; the tile's y stores must happen-before the call (see the top of this file). Each lane sums
/// kVec columns (8 or 4) with kDepth rows of y in flight: the producer warps of tma_ws / pingpong
/// hold 40 registers.
template <int kVec, int kDepth>
MOETUNE_DEVICE void fused_combine_tile(FusedCombineArgs const& fc, const moe_bf16* y, int top_k,
                                       int n_dim, const int* tile_pairs, int rows, int chunk,
                                       int n0, int valid_n, int warp, int nwarps) {
  const int lane = threadIdx.x & 31;
  const int vecs = valid_n / kVec;  // column groups of the tile (n_dim, n0: multiples of 8)
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
        combine_columns<kVec, kDepth>(y, fc.out, mine, top_k, n_dim, n0 + v * kVec);
      }
    }
  }
}

}  // namespace moetune_dev
