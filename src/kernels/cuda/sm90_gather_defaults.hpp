// The default config of the sm90_gather family: what a shape gets with no table row, per regime of
// pairs per expert (the rule and the H200 measurements behind it: sm90_gather_defaults.cpp,
// docs/kernels.md, docs/defaults-h200.md). Host-only, no CUDA headers.
#pragma once

#include "core/config.hpp"
#include "core/problem.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels::cuda {

/// The documented default config (configs needing a fast path that is off are avoided).
core::MoeConfig sm90_default_config(core::MoeProblem const& problem,
                                    FastPaths const& fast_paths = {});

}  // namespace moetune::kernels::cuda
