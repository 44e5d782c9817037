// sm90_ws_params.cuh: the kernel parameters of the persistent TMA GEMMs (the warp-specialised
// kernel, sm90_ws_kernel.cuh, and the swap-AB kernel, sm90_swap_kernel.cuh), and the end of the
// swap-AB kernel's dynamic tile walk. The host mirrors this struct in sm90_gather_launch.cpp.
// Covered by tests/kernels/cuda/sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"
#include "sm90_gather_kernel.cuh"
#include "sm90_tma.cuh"

namespace moetune_dev {

struct WsGemmParams {
  TmaDescriptor tma_a;  // GEMM2: h as [max_blocks * block_m rows, I]; unused by GEMM1
  TmaDescriptor tma_b;  // GEMM1: w1 as [E * N1 rows, K]; GEMM2: w2 as [E * K rows, I]
  GemmParams g;
  // The swap-AB kernel's dynamic walk: [0] the next tile to hand out past the first wave, [1] CTAs
  // done with it; align zeroes both, and the last CTA to finish zeroes them again, so a GEMM
  // replayed alone starts from zero too.
  int* sched;
  // Swap-AB (sm90_swap_kernel.cuh): the token rows of tma_a in 64-row boxes (tma_a: 16-row).
  // NOTE: new fields go after it: this struct's maps are 64-byte aligned and the host's 128, so a
  // field before it can move it on one side only (sm90_gather_launch.cpp asserts the host's
  // offsets, which must be these; NVRTC has no offsetof to assert them here).
  TmaDescriptor tma_a_wide;
};

/// The end of a dynamic tile walk, by one thread per CTA after its last fetch from sched[0]:
/// counts the CTA done in sched[1], and the last CTA zeroes both for the next launch (every CTA
/// fetched its last tile before it counts itself done, so no fetch follows the reset).
MOETUNE_DEVICE void walk_counters_done(int* sched) {
  if (atomicAdd(sched + 1, 1) == static_cast<int>(gridDim.x) - 1) {
    atomicExch(sched, 0);
    atomicExch(sched + 1, 0);
  }
}

}  // namespace moetune_dev
