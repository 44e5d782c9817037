// sm90_ws_kernel.cuh: the warp-specialised, persistent GEMM kernel of the sm90_gather family
// (schedules tma_ws and pingpong), for the compute-bound regime, composed of its collectives:
//   sm90_ws_shape.cuh     what the template parameters imply, checked once;
//   sm90_ws_pipeline.cuh  the stage ring (full / empty barriers, cursor);
//   sm90_ws_schedule.cuh  the static tile walk (group_m raster, clusters, split-K, sub-blocks);
//   sm90_ws_producer.cuh  warpgroup 0: TMA and cp.async loads into the ring;
//   sm90_ws_consumer.cuh  warpgroups 1..: cooperative or pingpong, over an MMA policy;
//   sm90_ws_mma.cuh       the bf16 MMA policy (the fp8 kernel brings its own:
//                         sm90_fp8_ws_kernel.cuh).
// kSplitK: GEMM2 split over K (g.split_k parts, fp32 partials); a separate instantiation so the
// unsplit kernels carry no split arithmetic or epilogue branch. kPingpong: schedule pingpong (two
// consumer warpgroups on alternate whole tiles; kSplitN 1, no split-K). kClusterM 2:
// launch.cluster_m = 2 (tma_ws only): a pair of CTAs takes m-blocks 2j and 2j+1 of one n-tile;
// when both belong to one expert, rank 0 loads the weight tile once for both (TMA multicast).
// kClusterN 2: launch.cluster_n = 2 (tma_ws GEMM2 only): a pair of CTAs takes n-tiles 2i and
// 2i + 1 of one m-block, and rank 0 loads the h rows once for both (TMA multicast), which cuts
// the L2-to-SM traffic of a tile by its A share (a third at 128 x 256, two thirds at 256 x 128).
// On the H200 it was slower or equal in the layer, so no table or search space uses it.
// Covered by tests/kernels/cuda/sm90_gather_test.cpp and sm90_gather_families_test.cpp (configs
// with schedule tma_ws / pingpong).
#pragma once

#include "sm90_common.cuh"
#include "sm90_gather_kernel.cuh"
#include "sm90_tma.cuh"
#include "sm90_ws_consumer.cuh"
#include "sm90_ws_mma.cuh"
#include "sm90_ws_params.cuh"
#include "sm90_ws_pipeline.cuh"
#include "sm90_ws_producer.cuh"
#include "sm90_ws_schedule.cuh"
#include "sm90_ws_shape.cuh"

namespace moetune_dev {

/// The body of a warp-specialised GEMM of shape S with MMA policy `ml` (its accumulators and
/// whatever the policy carries, such as fp8 scales): ring set up, then the producer and the
/// consumers each walk the CTA's tiles.
template <class S, class Acc>
MOETUNE_DEVICE void ws_gemm(WsGemmParams const& p, Acc& ml) {
  extern __shared__ __align__(1024) char smem_raw[];
  __shared__ __align__(8) WsRing<S::kStages> ring;
  char* smem =
      reinterpret_cast<char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  const int wg = threadIdx.x >> 7;
  const int tid = threadIdx.x & 127;
  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(&p.tma_b);
    if (!S::kGather) tma_prefetch_descriptor(&p.tma_a);
    // Clusters: a stage is free once the consumers of both CTAs released it (the peer's
    // multicast writes into it).
    ring.init(S::kGather ? 1 + 128 : 1, S::kPingpong ? 1 : S::kConsumers * S::kCluster);
  }
  // Clusters: the peer's barriers are initialised before any multicast or remote arrival.
  if constexpr (S::kCluster == 2) {
    cluster_sync();
  } else {
    __syncthreads();
  }
  pdl_launch_dependents();
  pdl_wait();  // NOTE: align / GEMM1 outputs are visible only after this
  const WsTileWalk<S> walk(p.g, S::kCluster == 2 ? cluster_cta_rank() : 0);
  if (wg == 0) {
    WsProducer<S>::run(p, walk, ring, smem, tid);
  } else if constexpr (S::kPingpong) {
    WsPingpongConsumer<S, Acc>{ring, walk, smem, wg, tid}.run(p.g, ml);
  } else {
    WsCooperativeConsumer<S, Acc>{ring, walk, smem, wg, tid}.run(p.g, ml);
  }
  // Clusters: neither CTA leaves while its peer may still multicast into its shared memory or
  // arrive on its barriers.
  if constexpr (S::kCluster == 2) cluster_sync();
}

template <int kBlockM, int kBlockN, int kStages, int kGroupM, int kAct, bool kIsGemm1, int kSplitN,
          bool kSplitK, bool kPingpong = false, int kClusterM = 1, int kClusterN = 1>
__global__ void __launch_bounds__((ws_consumers<kBlockM, kSplitN, kPingpong>() + 1) * 128, 1)
    moe_ws_gemm_kernel(const __grid_constant__ WsGemmParams p) {
  using S = WsShape<kBlockM, kBlockN, kStages, kGroupM, kAct, kIsGemm1, kSplitN, kSplitK, kPingpong,
                    kClusterM, kClusterN>;
  WsAccumulators<S::kWgN, S::kGated, S::kHalves> ml;
  ws_gemm<S>(p, ml);
}

}  // namespace moetune_dev
