// sm90_ws_pipeline.cuh: the stage ring of the warp-specialised kernels. kStages shared-memory
// stages, each with a full barrier (the producer's loads and copies landed: one expect_tx arrival,
// plus one per gathering producer thread) and an empty barrier (one arrival per consumer
// warpgroup that read it, from both CTAs of a cluster; pingpong: one). A cursor walks the ring one
// k-tile at a time; the phase flips every kStages k-tiles, and a parity wait can tell only the
// current phase from the one before, so no party may run two phases ahead of another.
// Covered by tests/kernels/cuda/sm90_gather_test.cpp and tests/python/test_fp8_gpu.py.
#pragma once

#include "sm90_common.cuh"
#include "sm90_tma.cuh"

namespace moetune_dev {

template <int kStages>
struct WsRing {
  moe_u64 full[kStages];
  moe_u64 empty[kStages];

  /// By one thread, before any other thread touches the ring (followed by a CTA or cluster sync).
  MOETUNE_DEVICE void init(int full_arrivals, int empty_arrivals) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_u32(&full[s]), full_arrivals);
      mbar_init(smem_u32(&empty[s]), empty_arrivals);
    }
    mbar_init_fence();
  }
  MOETUNE_DEVICE moe_u32 full_bar(int s) { return smem_u32(&full[s]); }
  MOETUNE_DEVICE moe_u32 empty_bar(int s) { return smem_u32(&empty[s]); }
};

/// A party's position in the ring: the stage of its next k-tile and that stage's phase.
template <int kStages>
struct WsCursor {
  int stage = 0, phase = 0;
  MOETUNE_DEVICE void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
};

}  // namespace moetune_dev
