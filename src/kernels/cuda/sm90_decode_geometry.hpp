// Geometry of the sm90_gather family's decode kernels (launch.swap_ab: the tiny-M path of
// sm90_decode_kernel.cuh): the rules can_implement enforces for them and the GemmGeometry they
// run with. Host-only, like sm90_gather_geometry.hpp, which calls it for swap_ab configs.
#pragma once

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"

namespace moetune::kernels::cuda {

/// Geometry of the decode GEMM1 (is_gemm1) or GEMM2 for `problem`, or why the config cannot run:
/// "gemm2.launch.swap_ab = true (decode kernels) takes tile.block_m = pairs per pass in 1, 2, 4,
/// 8, 16; saw 32".
core::Result<GemmGeometry> decode_geometry(core::MoeProblem const& problem,
                                           core::KernelConfig const& k, bool is_gemm1);

}  // namespace moetune::kernels::cuda
