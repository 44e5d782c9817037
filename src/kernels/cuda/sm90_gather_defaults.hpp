// The default config of the sm90_gather family: what a shape gets with no table row, per regime of
// pairs per expert (the rule and the H200 measurements behind it: sm90_gather_defaults.cpp,
// docs/kernels.md, docs/defaults-h200.md), and the configs of one family every M gets under lever
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

/// Whether a GEMM's kernel is of the batch-invariant family: the bf16 wgmma main loop (schedule
/// tma_ws, swap-AB or not, or cooperative) without split-K. Every element of its output is then
/// one chain of k16 wgmma steps in ascending K into an fp32 accumulator, whatever the tile: on one
/// H100, eight such kernels (tma_ws 64 / 128 rows, 4 or 8 MMA warps, block_n 64-256; cooperative;
/// swap-AB 64 / 128 pairs) gave every row the bits it had in a batch of 4096 at S1-S3 and
/// M = 1-2048, wherever the shape took them (bench/batch_invariant_bench.py); decode and
/// mma.sync kernels did not.
bool sm90_batch_invariant_family(core::KernelConfig const& kernel);

/// The config M runs under lever batch_invariant. The family is chosen from the shape alone
/// (problem.num_tokens is not consulted for it), the first that `fast_paths` and the shape allow:
///   1. the wgmma family above, when its anchor runs the shape (both GEMMs tma_ws, block_m 128,
///      8 MMA warps, 4 stages, group_m 8, block_k 64, GEMM1 block_n 128 gated / 256, GEMM2 256);
///      then the tile follows M: at <= 48 pairs per expert both GEMMs swap-AB with 64 pairs per
///      tile (8 warps, 5 stages), above that the default rule's pair where it is of the family,
///      else the anchor;
///   2. both mma.sync 128 x 128, 8 warps (the wgmma_mainloop lever off), at every M;
///   3. both mma.sync 16 x 64, 4 warps (what every shape takes), at every M;
/// block_k 64 where the GEMM's depth divides it, else 32 (mma.sync). All with split_k 1; top_k is
/// combined in slot order. Fails (kUnsupported) for fp8 problems, whose configs are not fixed
/// here, and where none runs (the last one's reason).
core::Result<core::MoeConfig> sm90_batch_invariant_config(core::MoeProblem problem,
                                                          FastPaths const& fast_paths = {});

}  // namespace moetune::kernels::cuda
