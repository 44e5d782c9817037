// The default config of the sm90_gather family: what a shape gets with no table row, per regime of
// pairs per expert (the rule and the H200 measurements behind it: sm90_gather_defaults.cpp,
// docs/kernels.md, docs/defaults-h200.md), and the one config every M gets under lever
// batch_invariant. Host-only, no CUDA headers.
#pragma once

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels::cuda {

/// The documented default config (configs needing a fast path that is off are avoided).
core::MoeConfig sm90_default_config(core::MoeProblem const& problem,
                                    FastPaths const& fast_paths = {});

/// The config every M runs under lever batch_invariant: a function of the shape alone
/// (problem.num_tokens is ignored), the first of these that `fast_paths` and the shape allow:
///   1. both GEMMs tma_ws (TMA + warp-specialised wgmma), block_m 128, 8 MMA warps, 4 stages,
///      group_m 8, block_k 64, GEMM1 block_n 128 (gated) / 256, GEMM2 block_n 256: the default
///      rule's large-M pair;
///   2. both mma.sync 128 x 128, 8 warps (the wgmma_mainloop lever off);
///   3. both mma.sync 16 x 64, 4 warps (what every shape takes);
/// block_k 64 where the GEMM's depth divides it, else 32 (mma.sync). All with split_k 1, cluster
/// 1x1, no swap-AB or decode kernels. NOTE: the whole config is fixed, not only the K order:
/// every element then gets the same k16 MMA sequence in ascending K from the same instruction at
/// every M; whether a wider or narrower wgmma tile would give the same bits is not established,
/// so the tile does not vary. Fails (kUnsupported) for fp8 problems, whose configs are not fixed
/// here, and where none of the three runs (the last one's reason).
core::Result<core::MoeConfig> sm90_batch_invariant_config(core::MoeProblem problem,
                                                          FastPaths const& fast_paths = {});

}  // namespace moetune::kernels::cuda
