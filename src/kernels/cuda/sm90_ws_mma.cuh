// sm90_ws_mma.cuh: the bf16 MMA policy of the warp-specialised consumers: one warpgroup's fp32
// accumulators and the wgmma of one 64-deep k-tile (four m64 x N x k16 steps per 64-row half, A
// and B straight from the 128-byte-swizzled stage), with the layout the shared epilogue reads.
// A policy gives the consumers (sm90_ws_consumer.cuh): begin_tile (zero, and whatever the tile
// needs), mma_k_tile<kH>(a_base, b_base, kt) (returns once the wgmma that read the previous
// k-tile's stage retired, or with kRetiresAll every wgmma of this one), end_tile, fence_all,
// acc_at, the output's element type (kOutE4m3, out_scale), and with kOwnStore its own
// store(tid, rows, g, row0, n0, bias) in place of the shared epilogue. The fp8 policies are in
// sm90_fp8_ws_mma.cuh. Covered by tests/kernels/cuda/sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"
#include "sm90_moe_epilogue.cuh"
#include "sm90_wgmma_ops.cuh"

namespace moetune_dev {

/// Accumulators of one consumer warpgroup, with the epilogue's accessor (every warp owns 16 rows
/// of each of kHalves 64-row halves and all kBlockN columns as n8 fragments; gated: gate
/// fragments first, then up; half mm's registers follow half mm - 1's).
/// kOp: the wgmma wrapper of the element type (Wgmma: bf16 m64nNk16; WgmmaFp8: e4m3 m64nNk32);
/// a k-tile is four of its k-steps either way (32 bytes of each 128-byte row per step).
template <int kBlockN, bool kGated, int kHalves = 1, template <int> class kOp = Wgmma>
struct WsAccumulators : WgmmaEpilogueLayout<kBlockN, kGated, kHalves, 64> {
  using Layout = WgmmaEpilogueLayout<kBlockN, kGated, kHalves, 64>;
  static constexpr int kNumAcc = Layout::kNumAcc;
  static constexpr int kWidth = kNumAcc * kBlockN;
  static constexpr int kHalfRegs = kWidth / 2;  // registers of one m64 wgmma accumulator
  static constexpr bool kRetiresAll = false;
  /// GEMM1's h stored as e4m3 divided by out_scale() (the fp8 per-tensor policy); bf16 here.
  static constexpr bool kOutE4m3 = false;
  /// The policy stores the tile itself (store), not moe_epilogue_store (the fp8 block-scaled
  /// GEMM1 with h in whole 128-column groups); false here.
  static constexpr bool kOwnStore = false;
  float acc[kHalves * kHalfRegs];

  MOETUNE_DEVICE float out_scale() const { return 1.0f; }

  MOETUNE_DEVICE float acc_at(int h, int mm, int nn, int i) const {
    return acc[mm * kHalfRegs + (h * (kBlockN / 8) + nn) * 4 + i];
  }
  MOETUNE_DEVICE void fence_all() { fence_operands(acc); }
  /// A tile starts: zeroed accumulators (the walk, tile and rows are for policies with scales).
  template <class Walk>
  MOETUNE_DEVICE void begin_tile(Walk const&, int, int, long long) {
#pragma unroll
    for (int i = 0; i < kHalves * kHalfRegs; ++i) acc[i] = 0.0f;
  }
  MOETUNE_DEVICE void end_tile() {}
  /// One k-tile on the first kH halves, the same for every consumer schedule: per k-step an m64
  /// wgmma per half (A half h at a_base + h * 64 rows of 128 bytes, the B rows at
  /// b_base), committed; returns once the previous k-tile's wgmma retired, so that k-tile's stage
  /// may be released.
  template <int kH>
  MOETUNE_DEVICE void mma_k_tile(moe_u32 a_base, moe_u32 b_base, int) {
    fence_all();
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        kOp<kWidth>::mma(acc + h * kHalfRegs, wgmma_desc_sw128(a_base + h * 64 * 128 + kk * 32),
                         wgmma_desc_sw128(b_base + kk * 32), 1);
      }
    }
    wgmma_commit();
    fence_all();
    wgmma_wait<1>();
    fence_all();
  }
};

}  // namespace moetune_dev
