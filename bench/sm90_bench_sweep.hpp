// moetune_sm90_bench's choice of a point's config (bench/sm90_bench.cpp): the recipe's pinned row,
// or the per-GEMM sweep's best pair where it beats the default config's layer.
#pragma once

#include <fstream>
#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/recipe.hpp"
#include "kernels/cuda/cuda_testbed.hpp"

namespace moetune::bench {

/// The recipe's pinned row for p (its shape and M), if the recipe pins one.
std::optional<core::MoeConfig> pinned_config(std::optional<core::Recipe> const& recipe,
                                             core::MoeProblem const& p);

/// Per-GEMM sweep at each block_m: GEMM1 candidates timed alone (stage GEMM1), then GEMM2's; the
/// block_m space whose two winners run the whole layer fastest wins, if faster than the default
/// config's layer timed the same way, and again in an interleaved re-time against it
/// (unrestricted sweeps). `only` / `decode_only` restrict the candidates (the best of them,
/// whatever the default does); `candidates` counts the configs timed. sweep_log (--sweep-log): one
/// line per timed candidate, "shape,M,pairs_per_expert,space_block_m,gemm,config,us" (us empty when
/// the timing failed), for fitting the default rule offline.
core::MoeConfig sweep_best(kernels::cuda::CudaTestbed& tb, core::MoeProblem const& p, int reps,
                           int& candidates, std::optional<core::Schedule> only, bool decode_only,
                           std::ofstream* sweep_log, std::string const& shape);

}  // namespace moetune::bench
