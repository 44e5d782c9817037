// sm90_fp8_ws_mma.cuh: the fp8 (e4m3) MMA policies of the warp-specialised consumers
// (sm90_ws_consumer.cuh; the interface is sm90_ws_mma.cuh's). A stage's 128-byte rows hold 128
// K-columns, one scale block, multiplied as four m64 x N x k32 wgmma:
//   per-tensor:   wgmma accumulates across K, one k-tile in flight (as bf16); end_tile applies
//                 the product of the input's static scale and the expert's weight scale; GEMM1
//                 stores h already quantised for GEMM2 (kOutE4m3, the quant kernel's rule);
//   block-scaled: each k-tile's four wgmma write fresh partial sums, waited for, then promoted
//                 into the fp32 accumulators with a_scale[row, kb] * w_scale[n-block, kb]
//                 (fp8_promote), so no accumulation chain inside the tensor core runs longer than
//                 one 128-deep block; the stage is released at once (kRetiresAll). The other
//                 consumer warpgroup's MMAs fill the tensor core while one promotes. Width 256
//                 (gated 2 x 128, or two weight blocks) runs as two parts of 128 columns, one
//                 partial-sum buffer of half the accumulators' registers. A GEMM1 whose
//                 warpgroup holds whole 128-column groups of h stores h already quantised, with
//                 its per-row group scales (kOwnStore, sm90_fp8_epilogue.cuh).
// Both issue the wgmma sequence of the cp.async fp8 loop (sm90_fp8_mainloop.cuh) at the same
// width, so the two give the same bits. Limits: one 64-row half per warpgroup (kHalves 1);
// block-scaled: a warpgroup's columns inside one 128-wide weight block, or (not gated) two.
// Covered by tests/python/test_fp8_gpu.py and
// Sm90Jit.Fp8KernelsCompileWithoutSpillsOrSerialisedWgmma.
#pragma once

#include "sm90_common.cuh"
#include "sm90_fp8_epilogue.cuh"
#include "sm90_fp8_mainloop.cuh"
#include "sm90_fp8_wgmma_ops.cuh"
#include "sm90_gather_kernel.cuh"
#include "sm90_ws_mma.cuh"

namespace moetune_dev {

template <bool kBlockScaled, int kBlockN, bool kGated, bool kIsGemm1>
struct Fp8WsMma;

template <int kBlockN, bool kGated, bool kIsGemm1>
struct Fp8WsMma<false, kBlockN, kGated, kIsGemm1> : WsAccumulators<kBlockN, kGated, 1, WgmmaFp8> {
  using Base = WsAccumulators<kBlockN, kGated, 1, WgmmaFp8>;
  /// GEMM1 stores h as e4m3 divided by GEMM2's static input scale: no quant pass over h.
  static constexpr bool kOutE4m3 = kIsGemm1;
  const float* a_scale;  // [1]: the GEMM input's static scale
  const float* b_scale;  // [E]: each expert's weight scale
  const float* h_scale;  // GEMM1: [1], GEMM2's static input scale
  float tile_scale = 1.0f;
  float h_div = 1.0f;

  template <class Walk>
  MOETUNE_DEVICE void begin_tile(Walk const& walk, int pid_m, int, long long) {
    Base::begin_tile(walk, pid_m, 0, 0);
    tile_scale = *a_scale * b_scale[walk.tile_expert(pid_m, walk.tile_row0(pid_m))];
    if (kIsGemm1) h_div = *h_scale;  // loaded here, used at the store
  }
  MOETUNE_DEVICE float out_scale() const { return h_div; }
  MOETUNE_DEVICE void end_tile() {
#pragma unroll
    for (int i = 0; i < Base::kHalfRegs; ++i) this->acc[i] *= tile_scale;
  }
};

template <int kBlockN, bool kGated, bool kIsGemm1>
struct Fp8WsMma<true, kBlockN, kGated, kIsGemm1> : WsAccumulators<kBlockN, kGated, 1, WgmmaFp8> {
  using Base = WsAccumulators<kBlockN, kGated, 1, WgmmaFp8>;
  static constexpr bool kRetiresAll = true;
  static_assert((kBlockN <= 128 && 128 % kBlockN == 0) || (!kGated && kBlockN == 256),
                "fp8 block-scaled: a warpgroup's columns must lie in one 128-wide weight block "
                "(or, not gated, be two whole blocks)");
  /// Width 256 (gated 2 x 128, or two weight blocks) runs as two parts of 128 columns, each its
  /// own wgmma into `part` and promotion with its own weight scale, so the partial sums take half
  /// the accumulators' registers; narrower runs in one part.
  static constexpr int kParts = Base::kWidth > 128 ? 2 : 1;
  static constexpr int kPartWidth = Base::kWidth / kParts;
  static constexpr int kPartRegs = kPartWidth / 2;
  /// GEMM1 with whole 128-column groups of h per warpgroup: h stored as e4m3 with its group
  /// scales (store), so GEMM2's input needs no quant pass.
  static constexpr bool kOwnStore = kIsGemm1 && kBlockN % 128 == 0;
  const float* a_scale;  // [rows of A, K / 128]: GEMM1 per token, GEMM2 per sorted row
  const float* b_scale;  // [E, weight rows / 128, K / 128]
  float* h_scales;       // kOwnStore: hs [sorted rows, I / 128], written; else unused
  float part[kPartRegs];
  Fp8TileScales sc;
  float4 next_scales;  // the scales of the next k-tile's block, loaded one k-tile ahead
  int last_kb = 0;     // the tile's last k-block

  /// The tile's scale rows: this thread's two A rows and the warpgroup's weight block(s) (gated:
  /// gate and up; two-part GEMM2: its two column blocks).
  template <class Walk>
  MOETUNE_DEVICE void begin_tile(Walk const& walk, int pid_m, int n0, long long row0) {
    Base::begin_tile(walk, pid_m, n0, row0);
    GemmParams const& g = *walk.g;
    const int kb = g.k_dim / 64;  // k-blocks: K / 128, k_dim counting 2-byte units
    const int warp = (threadIdx.x & 127) >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const long long r = row0 + epilogue_tile_row<Base>(warp, lane, 0, half);
      const int pair = g.sorted_pairs[r];
      const long long a_row = kIsGemm1 ? (pair >= 0 ? pair / g.top_k : 0) : r;
      sc.a_row[half] = a_scale + a_row * kb;
    }
    const int expert = walk.tile_expert(pid_m, walk.tile_row0(pid_m));
    const float* e = b_scale + (long long)expert * (g.b_rows_per_expert / 128) * kb;
    sc.b_gate = e + (long long)(n0 / 128) * kb;
    sc.b_up = kGated ? e + (long long)((g.n_dim + n0) / 128) * kb
                     : (kParts == 2 ? sc.b_gate + kb : sc.b_gate);
    // fp8 runs without split-K: the tile's k-tiles are k-blocks 0 .. kb - 1.
    last_kb = kb - 1;
    next_scales = fp8_load_scales(sc, 0);
  }
  MOETUNE_DEVICE void end_tile() {}

  /// kOwnStore: the tile's h into hq (g.out, e4m3) and h_scales (fp8_store_h_groups).
  template <int kAct, class Rows>
  MOETUNE_DEVICE void store(int tid, Rows const& rows, GemmParams const& g, long long row0, int n0,
                            const moe_bf16* bias) const {
    fp8_store_h_groups<Fp8WsMma, kAct>(*this, tid, rows, reinterpret_cast<unsigned char*>(g.out),
                                       h_scales, row0, n0, g.n_dim, bias);
  }

  /// k-tile kt: per part, its four wgmma into `part` (the first overwrites), waited for, then
  /// promoted. The k-block's scales were loaded one k-tile ahead (next_scales), so their round
  /// trip to L2 runs under a whole k-tile rather than under one part's MMAs; the wgmma
  /// descriptors are the stage's two, advanced per k-step (wgmma_desc_advance).
  /// NOTE: promoting k-block kt - 1 while kt's MMAs run made ptxas serialise every wgmma in the
  /// cp.async loop (C7514), so each k-block is waited for before its promotion, as CUTLASS and
  /// DeepGEMM do. Pairs of k-tiles in two buffers (both issued, the first promoted under the
  /// second, nothing in flight across the loop: no C7514) ran GEMM1 7-10% slower at F2 / F4
  /// M = 4096-16384 on an H100, and GEMM2 6-9% faster at three of those points, 10% slower at the
  /// fourth. The two consumer warpgroups taking turns to issue (named barriers) gained nothing at
  /// F2 and ran F4 M = 8192 17% slower.
  template <int kH>
  MOETUNE_DEVICE void mma_k_tile(moe_u32 a_base, moe_u32 b_base, int kt) {
    static_assert(kH == 1, "fp8 tma_ws: one 64-row half per warpgroup");
    const float4 s = next_scales;
    const moe_u64 da = wgmma_desc_sw128(a_base), db = wgmma_desc_sw128(b_base);
#pragma unroll
    for (int q = 0; q < kParts; ++q) {
      fence_operands(part);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        WgmmaFp8<kPartWidth>::mma(part, wgmma_desc_advance(da, kk * 32),
                                  wgmma_desc_advance(db, q * kPartWidth * 128 + kk * 32),
                                  kk == 0 ? 0 : 1);
      }
      wgmma_commit();
      // The last k-tile reloads its own block: no load past the scale rows.
      if (q == 0) next_scales = fp8_load_scales(sc, min(kt + 1, last_kb));
      fence_operands(part);
      wgmma_wait<0>();
      fence_operands(part);
      if constexpr (kParts == 1) {
        fp8_promote<kBlockN, kGated>(this->acc, part, s);
      } else {
        fp8_promote_part(this->acc + q * kPartRegs, part, s.x, s.y, q == 0 ? s.z : s.w);
      }
    }
  }
};

}  // namespace moetune_dev
