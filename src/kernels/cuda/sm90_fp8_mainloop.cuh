// sm90_fp8_mainloop.cuh: the fp8 (e4m3) cp.async + wgmma main loop: kBlockM / 64 warpgroups
// split the tile along M, each issuing m64 x N x k32 wgmma from 128-byte-swizzled stages. A stage
// holds 128 K-columns of A and B rows, one 128-byte swizzle atom per row, which is also one
// 128-deep scale block, so:
//   block-scaled: each k-tile's four wgmma write fresh partial sums, which are then promoted into
//                 the fp32 accumulators as acc += part * a_scale[row, kb] * b_scale[kb] (a
//                 thread's two rows; gate and up columns have their own weight block): no
//                 accumulation chain runs longer than one 128-deep block inside the tensor core;
//   per-tensor:   wgmma accumulates across K; the caller scales once at the end (scale_all).
// The loads reuse the cp.async tile loader of the bf16 loops (sm90_cpasync_mainloop.cuh): it
// moves 128-byte row slices, so fp8 rows are handed to it as 2-byte units (kBlockK = 64 units).
// The accumulators have the bf16 wgmma loop's layout, so the shared epilogue stores them.
// Limits: kBlockM in {64, 128}; width (2 kBlockN gated) <= 256; block-scaled: kBlockN <= 128
// and 128 % kBlockN == 0 (a tile's columns inside one weight block). Covered by
// tests/python/test_fp8_gpu.py and the compile test Sm90Jit.Fp8KernelsCompileWithoutSpills.
#pragma once

#include "sm90_common.cuh"
#include "sm90_cpasync_mainloop.cuh"
#include "sm90_fp8_wgmma_ops.cuh"
#include "sm90_moe_epilogue.cuh"

namespace moetune_dev {

/// The scales one thread's rows and one tile's weight blocks take at k-block kb (block-scaled).
struct Fp8TileScales {
  const float* a_row[2];  // the thread's two rows (lane/4 and lane/4 + 8): [k-blocks] each
  const float* b_gate;    // the tile's (gate) weight block row: [k-blocks]
  const float* b_up;      // gated: the up half's; else = b_gate
};

/// The four scales of k-block kb: rows lane/4 and lane/4 + 8, gate and up weight blocks.
MOETUNE_DEVICE float4 fp8_load_scales(Fp8TileScales const& s, int kb) {
  return make_float4(s.a_row[0][kb], s.a_row[1][kb], s.b_gate[kb], s.b_up[kb]);
}

/// acc += part * a_scale(row) * b_scale(gate or up), the scales of fp8_load_scales; acc and part
/// in the m64 wgmma accumulator layout of kBlockN columns (gated: the gate's, then the up's).
template <int kBlockN, bool kGated, int kRegs>
MOETUNE_DEVICE void fp8_promote(float (&acc)[kRegs], float const (&part)[kRegs], float4 sc) {
  const float f[2][2] = {{sc.x * sc.z, sc.y * sc.z}, {sc.x * sc.w, sc.y * sc.w}};
#pragma unroll
  for (int j = 0; j < kRegs; ++j) {
    const int half = (j & 3) >> 1;            // rows lane/4 (i = 0, 1) or lane/4 + 8 (i = 2, 3)
    const int up = j >= kBlockN / 2 ? 1 : 0;  // gated: the up fragments follow the gate's
    acc[j] = fmaf(part[j], f[kGated ? up : 0][half], acc[j]);
  }
}

/// acc += part * a_scale(row) * b, for one part of a block-scaled wgmma width whose columns share
/// the weight block scale b (a0: rows lane/4, a1: lane/4 + 8).
template <int kRegs>
MOETUNE_DEVICE void fp8_promote_part(float* acc, float const (&part)[kRegs], float a0, float a1,
                                     float b) {
  const float f[2] = {a0 * b, a1 * b};
#pragma unroll
  for (int j = 0; j < kRegs; ++j) acc[j] = fmaf(part[j], f[(j & 3) >> 1], acc[j]);
}

template <int kBlockM, int kBlockN, int kStages, bool kGated, bool kBlockScaled>
struct Fp8WgmmaMainloop : WgmmaEpilogueLayout<kBlockN, kGated, 1, 16> {
  static constexpr int kBlockK = 128;  // fp8 elements (bytes) per row and stage
  static constexpr int kWarpGroups = kBlockM / 64;
  static constexpr int kThreads = kWarpGroups * 128;
  static constexpr int kMmaWidth = kGated ? 2 * kBlockN : kBlockN;
  static constexpr int kAccPerThread = kMmaWidth / 2;
  using Loader = CpAsyncMainloop<kBlockM, kBlockN, 64, kBlockM / 16, 1, kStages, kGated>;
  static constexpr int kStageBytes = Loader::kStageBytes;
  static constexpr int kABytes = Loader::kABytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + alignment slack
  static_assert(kBlockM == 64 || kBlockM == 128, "fp8 path: block_m must be 64 or 128");
  static_assert(kMmaWidth % 16 == 0 && kMmaWidth <= 256, "fp8 path: wgmma N in 16..256 step 16");
  static_assert(!kBlockScaled || (kBlockN <= 128 && 128 % kBlockN == 0),
                "fp8 block-scaled: a tile's columns must lie in one 128-wide weight block");
  static_assert(kStages >= 3, "fp8 path: at least 3 stages (two tiles in flight)");

  static constexpr int kPartN = kBlockScaled ? kAccPerThread : 1;
  float acc[kAccPerThread];  // as WgmmaMainloop's
  float part[kPartN];        // one k-block's sums (block-scaled)

  MOETUNE_DEVICE float acc_at(int h, int mm, int nn, int i) const {
    (void)mm;
    return acc[(h * (kBlockN / 8) + nn) * 4 + i];
  }

  /// The four k32 steps of one stage into `d`; the first overwrites d when `fresh`.
  MOETUNE_DEVICE static void compute_stage(float* d, char* smem, int stage, bool fresh) {
    const int wg = threadIdx.x >> 7;
    const moe_u32 a_base = smem_u32(smem + stage * kStageBytes) + wg * 64 * 128;
    const moe_u32 b_base = smem_u32(smem + stage * kStageBytes + kABytes);
#pragma unroll
    for (int kk = 0; kk < kBlockK / 32; ++kk) {
      WgmmaFp8<kMmaWidth>::mma(d, wgmma_desc_sw128(a_base + kk * 32),
                               wgmma_desc_sw128(b_base + kk * 32), fresh && kk == 0 ? 0 : 1);
    }
  }

  /// The per-tensor result's one scale.
  MOETUNE_DEVICE void scale_all(float s) {
#pragma unroll
    for (int j = 0; j < kAccPerThread; ++j) acc[j] *= s;
  }

  /// Waits for tile kt's copies, makes them visible to wgmma, and queues tile kt + kStages - 2
  /// into the stage tile kt - 2 held (its MMAs retired by the wait<1> of iteration kt - 1).
  MOETUNE_DEVICE static void refill(char* smem, int kt, int num_k_tiles, const moe_bf16* a,
                                    const long long* a_off, const moe_bf16* b_base, int b_gate_row0,
                                    int b_up_row0, int valid_n, int k_units) {
    cp_async_wait<kStages - 3>();  // tile kt landed (this thread's copies)
    fence_proxy_async();  // NOTE: cp.async writes are generic-proxy; wgmma reads async-proxy
    __syncthreads();      // ... and every thread's copies are visible
    const int next = kt + kStages - 2;
    if (next < num_k_tiles) {
      Loader::load_stage(smem, next % kStages, next, a, a_off, b_base, b_gate_row0, b_up_row0,
                         valid_n, k_units);
    }
    cp_async_commit();
  }

  /// Runs the whole K loop. a / a_off / b_base / k_units in 2-byte units (see the header).
  MOETUNE_DEVICE void run(char* smem_raw, const moe_bf16* a, const long long* a_off,
                          const moe_bf16* b_base, int b_gate_row0, int b_up_row0, int valid_n,
                          int k_units, Fp8TileScales const& scales) {
    char* smem =
        reinterpret_cast<char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
#pragma unroll
    for (int i = 0; i < kAccPerThread; ++i) acc[i] = 0.0f;
    const int num_k_tiles = k_units / 64;
#pragma unroll
    for (int s = 0; s < kStages - 2; ++s) {
      if (s < num_k_tiles) {
        Loader::load_stage(smem, s, s, a, a_off, b_base, b_gate_row0, b_up_row0, valid_n, k_units);
      }
      cp_async_commit();
    }
    if constexpr (kBlockScaled) {
      for (int kt = 0; kt < num_k_tiles; ++kt) {
        refill(smem, kt, num_k_tiles, a, a_off, b_base, b_gate_row0, b_up_row0, valid_n, k_units);
        block_step(smem, kt, scales);
      }
    } else {
      for (int kt = 0; kt < num_k_tiles; ++kt) {
        refill(smem, kt, num_k_tiles, a, a_off, b_base, b_gate_row0, b_up_row0, valid_n, k_units);
        fence_operands(acc);
        wgmma_fence();
        compute_stage(acc, smem, kt % kStages, false);
        wgmma_commit();
        fence_operands(acc);
        wgmma_wait<1>();  // MMAs of tile kt-1 are done; tile kt may still run
        fence_operands(acc);
      }
      fence_operands(acc);
      wgmma_wait<0>();
      fence_operands(acc);
    }
    cp_async_wait<0>();
  }

  /// One block-scaled k-tile: its MMAs into `part`, waited for, then promoted.
  /// NOTE: promoting k-block kt - 1 while kt's MMAs run (two partial buffers, wait<1>) made ptxas
  /// serialise every wgmma (C7514: it cannot tell which group a promotion reads) and spill; so
  /// each k-block is waited for before its promotion, as CUTLASS and DeepGEMM do.
  MOETUNE_DEVICE void block_step(char* smem, int kt, Fp8TileScales const& scales) {
    fence_operands(part);
    wgmma_fence();
    compute_stage(part, smem, kt % kStages, true);
    wgmma_commit();
    const float4 sc = fp8_load_scales(scales, kt);  // loads in flight under the MMAs
    fence_operands(part);
    wgmma_wait<0>();  // the partial sums are read now: no group stays in flight
    fence_operands(part);
    fp8_promote<kBlockN, kGated>(acc, part, sc);
  }
};

}  // namespace moetune_dev
