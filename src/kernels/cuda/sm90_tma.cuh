// sm90_tma.cuh: Hopper asynchronous-copy primitives for the warp-specialised kernels of the
// sm90_gather family: shared-memory mbarriers (init / arrive / expect_tx / parity wait), TMA 2-D
// (and 5-D) tile loads (cp.async.bulk.tensor) completing on an mbarrier, multicast to a cluster,
// remote (cluster) mbarrier arrivals, cp.async completion routed to an mbarrier (for gathered rows
// TMA cannot address), and warpgroup register reallocation. Header-free like sm90_common.cuh (NVRTC
// compiles it with no CUDA headers). Covered by tests/kernels/cuda/sm90_gather_test.cpp (configs
// with schedule = tma_ws).
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

/// Opaque 128-byte TMA descriptor (the host's CUtensorMap, built by cuTensorMapEncodeTiled).
/// Passed inside a __grid_constant__ kernel parameter so its address is a valid TMA operand.
struct __align__(64) TmaDescriptor {
  moe_u64 opaque[16];
};

MOETUNE_DEVICE void mbar_init(moe_u32 bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/// Makes barrier initialisation visible to the async proxy (TMA) and the other threads.
MOETUNE_DEVICE void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/// Named barrier `id` (1..15; 0 is __syncthreads) of `threads` threads: wait for it / arrive
/// without waiting (pingpong's order between its two consumer warpgroups).
MOETUNE_DEVICE void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
MOETUNE_DEVICE void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
MOETUNE_DEVICE void mbar_arrive(moe_u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/// Arrives once and adds `bytes` to the transaction count the current phase waits for.
MOETUNE_DEVICE void mbar_arrive_expect_tx(moe_u32 bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
/// Blocks until the phase with parity `parity` has completed.
MOETUNE_DEVICE void mbar_wait(moe_u32 bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\nMOETUNE_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra MOETUNE_WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
/// 1-D bulk copy (the TMA unit, no tensor map) of `bytes` (a multiple of 16) from global memory
/// into this CTA's shared memory at `dst`, completing that many bytes of `bar`'s transaction count
/// (the L2 probes in bench/).
MOETUNE_DEVICE void bulk_copy_g2s(moe_u32 dst, const void* src, int bytes, moe_u32 bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

/// One arrival on `bar` once every cp.async this thread issued so far has landed (the arrival is
/// part of the barrier's expected count: .noinc).
MOETUNE_DEVICE void cp_async_mbar_arrive_noinc(moe_u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// L2 eviction priority of the persistent GEMMs' operand loads: kHint 0 no hint (what ships), 1
// evict_first, 2 evict_last. The kernels pass kTmaWeightL2 for weight tiles and kTmaActL2 for token
// rows (h and x's sorted copy by TMA, x by the tma_ws GEMM1's cp.async gather); both are 0 unless a
// developer A/B sets MOETUNE_TMA_WEIGHT_L2 / MOETUNE_TMA_ACT_L2 through MOETUNE_DEV_NVRTC_DEFINES
// (jit.hpp). NOTE: measured on the H200 (15 points of S1-S3 at M 512-8192, same bits): weights
// evict_first 0.98 (S2 M=512) to 1.10x (S2 4096) the layer's time, token rows evict_last
// 0.98-1.01x; neither moved the bytes that cross the L2 fabric, the busiest L2 unit under the mid-M
// GEMMs (ncu: 81-92%), so neither ships.
#ifndef MOETUNE_TMA_WEIGHT_L2
#define MOETUNE_TMA_WEIGHT_L2 0
#endif
#ifndef MOETUNE_TMA_ACT_L2
#define MOETUNE_TMA_ACT_L2 0
#endif
constexpr int kTmaWeightL2 = MOETUNE_TMA_WEIGHT_L2;
constexpr int kTmaActL2 = MOETUNE_TMA_ACT_L2;
static_assert(kTmaWeightL2 >= 0 && kTmaWeightL2 <= 2 && kTmaActL2 >= 0 && kTmaActL2 <= 2,
              "MOETUNE_TMA_WEIGHT_L2 / MOETUNE_TMA_ACT_L2: 0 none, 1 evict_first, 2 evict_last");

/// The L2 cache policy of hint kHint (1 or 2) for the whole access (fraction 1.0).
template <int kHint>
MOETUNE_DEVICE moe_u64 l2_policy() {
  moe_u64 p;
  if constexpr (kHint == 1) {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  } else {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
  }
  return p;
}

/// cp_async_16_or_zero (sm90_common.cuh) with the L2 eviction priority kHint.
template <int kHint>
MOETUNE_DEVICE void cp_async_16_or_zero_l2(moe_u32 dst, const void* src, bool valid) {
  if constexpr (kHint == 0) {
    cp_async_16_or_zero(dst, src, valid);
  } else if (valid) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" ::"r"(dst),
                 "l"(src), "l"(l2_policy<kHint>()));
  } else {
    cp_async_16_or_zero(dst, src, false);
  }
}

/// TMA load of the box at (c0 = inner column, c1 = row) of `desc` into shared memory at `dst`;
/// completes `bytes` of `bar`'s transaction count. Out-of-range elements are zero-filled. kHint:
/// the L2 eviction priority (above).
template <int kHint = 0>
MOETUNE_DEVICE void tma_load_2d(moe_u32 dst, const TmaDescriptor* desc, moe_u32 bar, int c0,
                                int c1) {
  if constexpr (kHint == 0) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
        "l"(reinterpret_cast<moe_u64>(desc)), "r"(bar), "r"(c0), "r"(c1)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
        " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(dst),
        "l"(reinterpret_cast<moe_u64>(desc)), "r"(bar), "r"(c0), "r"(c1), "l"(l2_policy<kHint>())
        : "memory");
  }
}
/// TMA load of a 5-D box at (c0, c1, c2, c3, c4) (c0 the innermost); as tma_load_2d otherwise.
/// The swap-AB GEMM1 (sm90_swap_kernel.cuh) loads its gate and up weight rows interleaved with it.
template <int kHint = 0>
MOETUNE_DEVICE void tma_load_5d(moe_u32 dst, const TmaDescriptor* desc, moe_u32 bar, int c0, int c1,
                                int c2, int c3, int c4) {
  if constexpr (kHint == 0) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n" ::"r"(dst),
        "l"(reinterpret_cast<moe_u64>(desc)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
        " [%0], [%1, {%3, %4, %5, %6, %7}], [%2], %8;\n" ::"r"(dst),
        "l"(reinterpret_cast<moe_u64>(desc)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4),
        "l"(l2_policy<kHint>())
        : "memory");
  }
}
/// The TMA load above, delivered to the same shared-memory offset (data and complete_tx on the
/// barrier at `bar`'s offset) in every CTA of the cluster named by `cta_mask`.
template <int kHint = 0>
MOETUNE_DEVICE void tma_load_2d_multicast(moe_u32 dst, const TmaDescriptor* desc, moe_u32 bar,
                                          int c0, int c1, unsigned short cta_mask) {
  if constexpr (kHint == 0) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(dst),
        "l"(reinterpret_cast<moe_u64>(desc)), "r"(bar), "r"(c0), "r"(c1), "h"(cta_mask)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster.L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5, %6;\n" ::"r"(dst),
        "l"(reinterpret_cast<moe_u64>(desc)), "r"(bar), "r"(c0), "r"(c1), "h"(cta_mask),
        "l"(l2_policy<kHint>())
        : "memory");
  }
}
/// This CTA's rank in its cluster.
MOETUNE_DEVICE int cluster_cta_rank() {
  moe_u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return static_cast<int>(r);
}
/// One arrival on the mbarrier at `bar`'s shared-memory offset in cluster CTA `cta`, with the
/// default semantics (release at CTA scope), as CUTLASS's ClusterBarrier::arrive(cta_id) does.
/// NOTE: `.release.cluster` here made every clustered GEMM 1.15-2.4x slower on H200 (S3 M=1024
/// GEMM2 474 -> 1123 us): a cluster-scope release waits for the thread's outstanding memory
/// operations, in the consumer that is the wgmma still in flight, so the k-loop lost its overlap.
MOETUNE_DEVICE void mbar_arrive_cluster(moe_u32 bar, int cta) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(cta)
      : "memory");
}
/// Every thread of every CTA of the cluster (barrier.cluster; also a CTA-wide barrier).
MOETUNE_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
MOETUNE_DEVICE void tma_prefetch_descriptor(const TmaDescriptor* desc) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<moe_u64>(desc)) : "memory");
}

/// Warpgroup register reallocation (every warp of the warpgroup executes it).
template <int kRegs>
MOETUNE_DEVICE void warpgroup_reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
MOETUNE_DEVICE void warpgroup_reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

}  // namespace moetune_dev
