// sm90_cpasync_mainloop.cuh: the multistage cp.async + mma.sync main loop of the sm90_gather
// family. A CTA computes a (kBlockM x kBlockN) tile of C = A * B^T over K, A rows gathered through
// a per-row offset table (token rows of x for GEMM1, expert-sorted rows of h for GEMM2; -1 = zero
// row), B rows = one expert's weight rows (gate and up halves for gated GEMM1).
// Layouts: A [*, K] and B [*, K] are K-major (row stride = K elements); smem tiles are swizzled
// (sm90_common.cuh). Limits: K % kBlockK == 0; row offsets fit in int64.
// Covered by tests/kernels/cuda/sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

template <int kBlockM, int kBlockN, int kBlockK, int kWarpsM, int kWarpsN, int kStages, bool kGated>
struct CpAsyncMainloop {
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kBRows = kGated ? 2 * kBlockN : kBlockN;
  static constexpr int kWarpTileM = kBlockM / kWarpsM;
  static constexpr int kWarpTileN = kBlockN / kWarpsN;
  static constexpr int kMmaM = kWarpTileM / 16;
  static constexpr int kMmaRowStride = 16;  // m16 fragment mm starts at row 16 * mm
  static constexpr int kMmaN = kWarpTileN / 8;
  static constexpr int kNumAcc = kGated ? 2 : 1;
  static constexpr int kChunksPerRow = kBlockK / 8;
  static constexpr int kABytes = kBlockM * kBlockK * 2;
  static constexpr int kBBytes = kBRows * kBlockK * 2;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  static_assert(kStages >= 2, "the cp.async pipeline needs at least two stages");

  static constexpr int kWarpColumns = kWarpsN;  // warps along N (epilogue view)

  // (kNumAcc, kMmaM, kMmaN, 4) fp32 accumulators; [0] gate (or the only one), [1] up.
  float acc[kNumAcc][kMmaM][kMmaN][4];

  /// Accumulator i (0..3) of m16n8 fragment (mm, nn) of GEMM half h (epilogue accessor).
  MOETUNE_DEVICE float acc_at(int h, int mm, int nn, int i) const { return acc[h][mm][nn][i]; }

  /// Issues the cp.async copies of K-tile `kt` into stage `stage`.
  /// a_off: [kBlockM] element offsets of A rows (-1 = zero row); b_base: expert's B rows;
  /// b_row_valid: rows [0, valid_n) of each half exist; b_up_row0: first up row (gated).
  MOETUNE_DEVICE static void load_stage(char* smem, int stage, int kt, const moe_bf16* a,
                                        const long long* a_off, const moe_bf16* b_base,
                                        int b_gate_row0, int b_up_row0, int valid_n, int k_dim) {
    char* s_a = smem + stage * kStageBytes;
    char* s_b = s_a + kABytes;
    const int k0 = kt * kBlockK;
    const moe_u32 sa = smem_u32(s_a);
    const moe_u32 sb = smem_u32(s_b);
#pragma unroll
    for (int it = 0; it < (kBlockM * kChunksPerRow + kThreads - 1) / kThreads; ++it) {
      const int idx = threadIdx.x + it * kThreads;
      if ((kBlockM * kChunksPerRow) % kThreads != 0 && idx >= kBlockM * kChunksPerRow) break;
      const int row = idx / kChunksPerRow;
      const int chunk = idx % kChunksPerRow;
      const long long off = a_off[row];
      const moe_bf16* src = off >= 0 ? a + off + k0 + chunk * 8 : a;
      cp_async_16(sa + swizzled_offset<kBlockK>(row, chunk), src, off >= 0 ? 16 : 0);
    }
#pragma unroll
    for (int it = 0; it < (kBRows * kChunksPerRow + kThreads - 1) / kThreads; ++it) {
      const int idx = threadIdx.x + it * kThreads;
      if ((kBRows * kChunksPerRow) % kThreads != 0 && idx >= kBRows * kChunksPerRow) break;
      const int row = idx / kChunksPerRow;
      const int chunk = idx % kChunksPerRow;
      const int n = row % kBlockN;
      const bool up = kGated && row >= kBlockN;
      const bool ok = n < valid_n;
      const long long grow = (long long)((up ? b_up_row0 : b_gate_row0) + n);
      const moe_bf16* src = ok ? b_base + grow * k_dim + k0 + chunk * 8 : b_base;
      cp_async_16(sb + swizzled_offset<kBlockK>(row, chunk), src, ok ? 16 : 0);
    }
  }

  /// Multiplies the tiles of one stage into the accumulators.
  MOETUNE_DEVICE void compute_stage(const char* smem, int stage, int warp_m, int warp_n, int lane) {
    // Checked here, not at class scope: the wgmma main loop reuses load_stage with other warp
    // shapes.
    static_assert(kWarpTileM % 16 == 0, "warp tile M must be a multiple of 16 (mma m16)");
    static_assert(kWarpTileN % 16 == 0, "warp tile N must be a multiple of 16 (ldmatrix x4 on B)");
    const moe_u32 sa = smem_u32(smem + stage * kStageBytes);
    const moe_u32 sb = sa + kABytes;
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
      moe_u32 a_frag[kMmaM][4];
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm) {
        const int row = warp_m * kWarpTileM + mm * 16 + (lane & 15);
        const int chunk = kk * 2 + (lane >> 4);
        ldmatrix_x4(sa + swizzled_offset<kBlockK>(row, chunk), a_frag[mm][0], a_frag[mm][1],
                    a_frag[mm][2], a_frag[mm][3]);
      }
#pragma unroll
      for (int h = 0; h < kNumAcc; ++h) {
#pragma unroll
        for (int nn2 = 0; nn2 < kMmaN / 2; ++nn2) {
          const int row =
              h * kBlockN + warp_n * kWarpTileN + nn2 * 16 + (lane & 7) + ((lane >> 4) << 3);
          const int chunk = kk * 2 + ((lane >> 3) & 1);
          moe_u32 b0, b1, b2, b3;
          ldmatrix_x4(sb + swizzled_offset<kBlockK>(row, chunk), b0, b1, b2, b3);
#pragma unroll
          for (int mm = 0; mm < kMmaM; ++mm) {
            mma_bf16_16816(acc[h][mm][nn2 * 2], a_frag[mm], b0, b1);
            mma_bf16_16816(acc[h][mm][nn2 * 2 + 1], a_frag[mm], b2, b3);
          }
        }
      }
    }
  }

  /// Runs the whole K loop. All threads of the CTA must call it.
  MOETUNE_DEVICE void run(char* smem, const moe_bf16* a, const long long* a_off,
                          const moe_bf16* b_base, int b_gate_row0, int b_up_row0, int valid_n,
                          int k_dim) {
#pragma unroll
    for (int h = 0; h < kNumAcc; ++h)
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
        for (int nn = 0; nn < kMmaN; ++nn)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[h][mm][nn][i] = 0.0f;
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int warp_m = warp / kWarpsN;
    const int warp_n = warp % kWarpsN;
    const int num_k_tiles = k_dim / kBlockK;
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < num_k_tiles) {
        load_stage(smem, s, s, a, a_off, b_base, b_gate_row0, b_up_row0, valid_n, k_dim);
      }
      cp_async_commit();
    }
    for (int kt = 0; kt < num_k_tiles; ++kt) {
      cp_async_wait<kStages - 2>();
      __syncthreads();  // stage kt landed for all threads; stage kt-1 is free to overwrite
      const int next = kt + kStages - 1;
      if (next < num_k_tiles) {
        load_stage(smem, next % kStages, next, a, a_off, b_base, b_gate_row0, b_up_row0, valid_n,
                   k_dim);
      }
      cp_async_commit();
      compute_stage(smem, kt % kStages, warp_m, warp_n, lane);
    }
    cp_async_wait<0>();
  }
};

}  // namespace moetune_dev
