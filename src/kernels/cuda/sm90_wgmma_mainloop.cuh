// sm90_wgmma_mainloop.cuh: the cp.async + wgmma main loop of the sm90_gather family
// (schedule = cooperative): kBlockM / 64 warpgroups split the tile along M, each issuing
// m64 x kBlockN x k16 wgmma from shared memory (A rows gathered by cp.async exactly as in the
// mma.sync main loop). Tiles are K-major with 128-byte swizzle (kBlockK = 64 bf16 = one swizzle
// atom per row), which is the XOR pattern swizzled_offset<64> writes, so cp.async output is
// directly wgmma-readable once fence.proxy.async orders the generic-proxy writes.
// Limits: kBlockK = 64; kBlockM in {64, 128}; gated GEMM1 needs kBlockN <= 128 (registers).
// Covered by tests/kernels/cuda/sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"
#include "sm90_cpasync_mainloop.cuh"
#include "sm90_moe_epilogue.cuh"
#include "sm90_wgmma_ops.cuh"

namespace moetune_dev {

// Epilogue view (same accessors as CpAsyncMainloop): every warp owns 16 rows and all kBlockN
// columns, as n8 fragments.
template <int kBlockM, int kBlockN, int kStages, bool kGated>
struct WgmmaMainloop : WgmmaEpilogueLayout<kBlockN, kGated, 1, 16> {
  static constexpr int kBlockK = 64;
  static constexpr int kWarpGroups = kBlockM / 64;
  static constexpr int kThreads = kWarpGroups * 128;
  // Gated GEMM1 issues one m64 x (2 kBlockN) wgmma over the contiguous [gate | up] B rows.
  static constexpr int kMmaWidth = kGated ? 2 * kBlockN : kBlockN;
  static constexpr int kAccPerThread = kMmaWidth / 2;
  // Reuses the cp.async tile loader (same swizzle, same zero-fill rules).
  using Loader = CpAsyncMainloop<kBlockM, kBlockN, kBlockK, kBlockM / 16, 1, kStages, kGated>;
  static constexpr int kStageBytes = Loader::kStageBytes;
  static constexpr int kABytes = Loader::kABytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + alignment slack
  static_assert(kBlockM == 64 || kBlockM == 128, "wgmma path: block_m must be 64 or 128");
  static_assert(!kGated || kBlockN <= 128, "wgmma path: gated block_n must be <= 128");
  static_assert(kStages >= 3, "wgmma path: at least 3 stages (two tiles in flight)");
  static_assert(kABytes % 1024 == 0 && kStageBytes % 1024 == 0,
                "128-byte swizzle needs 1024-byte aligned tiles");

  float acc[kAccPerThread];  // (n8 fragment, 4); gated: gate fragments first, then up

  MOETUNE_DEVICE float acc_at(int h, int mm, int nn, int i) const {
    (void)mm;
    return acc[(h * (kBlockN / 8) + nn) * 4 + i];
  }

  MOETUNE_DEVICE void fence_all() {
#pragma unroll
    for (int i = 0; i < kAccPerThread; ++i) fence_operand(acc[i]);
  }

  MOETUNE_DEVICE void compute_stage(char* smem, int stage) {
    const int wg = threadIdx.x >> 7;
    const moe_u32 a_base = smem_u32(smem + stage * kStageBytes) + wg * 64 * 128;
    const moe_u32 b_base = smem_u32(smem + stage * kStageBytes + kABytes);
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
      Wgmma<kMmaWidth>::mma(acc, wgmma_desc_sw128(a_base + kk * 32),
                            wgmma_desc_sw128(b_base + kk * 32), 1);
    }
  }

  /// Runs the whole K loop. `smem_raw` is the dynamic shared memory (aligned here to 1024 B).
  MOETUNE_DEVICE void run(char* smem_raw, const moe_bf16* a, const long long* a_off,
                          const moe_bf16* b_base, int b_gate_row0, int b_up_row0, int valid_n,
                          int k_dim) {
    char* smem =
        reinterpret_cast<char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
#pragma unroll
    for (int i = 0; i < kAccPerThread; ++i) acc[i] = 0.0f;
    const int num_k_tiles = k_dim / kBlockK;

    // Tiles are fetched kStages - 2 ahead so that one wgmma group can stay in flight across the
    // barrier: at iteration kt the stage being refilled last held tile kt - 2, whose MMAs every
    // warpgroup finished (wait<1> in iteration kt - 1) before reaching this iteration's barrier.
#pragma unroll
    for (int s = 0; s < kStages - 2; ++s) {
      if (s < num_k_tiles) {
        Loader::load_stage(smem, s, s, a, a_off, b_base, b_gate_row0, b_up_row0, valid_n, k_dim);
      }
      cp_async_commit();
    }
    for (int kt = 0; kt < num_k_tiles; ++kt) {
      cp_async_wait<kStages - 3>();  // tile kt landed (this thread's copies)
      fence_proxy_async();  // NOTE: cp.async writes are generic-proxy; wgmma reads async-proxy
      __syncthreads();      // ... and every thread's copies are visible
      const int next = kt + kStages - 2;
      if (next < num_k_tiles) {
        Loader::load_stage(smem, next % kStages, next, a, a_off, b_base, b_gate_row0, b_up_row0,
                           valid_n, k_dim);
      }
      cp_async_commit();
      // NOTE: no data-dependent branch around the wgmma: skipping all-padding warpgroups this way
      // cost 15-20% at large M on H200.
      fence_all();
      wgmma_fence();
      compute_stage(smem, kt % kStages);
      wgmma_commit();
      fence_all();
      wgmma_wait<1>();  // MMAs of tile kt-1 are done; tile kt may still run
      fence_all();
    }
    fence_all();
    wgmma_wait<0>();
    fence_all();
    cp_async_wait<0>();
  }
};

}  // namespace moetune_dev
