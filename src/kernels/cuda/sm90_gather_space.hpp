// The tuning space of the sm90_gather family, for CudaBackend::search_space / gemm_search_space
// and the bench sweep: block_m groups per regime of M, each GEMM's candidate configs, the group of
// 256 (GEMM2 256-row tiles under 128-row GEMM1 sub-blocks) and the decode kernels. Host-only.
#pragma once

#include <vector>

#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"

namespace moetune::kernels::cuda {

/// Candidate KernelConfigs of one GEMM for block_m (used by search_space and the bench sweep).
std::vector<core::KernelConfig> sm90_gemm_candidates(core::MoeProblem const& p, int block_m,
                                                     bool is_gemm1);
/// The decode kernels (launch.swap_ab) at tiny M (pairs per expert <= 2), else none: block_m =
/// pairs per pass (M rounded up to a power of two, at most 8), GEMM1 and GEMM2 lists equal.
std::vector<core::KernelConfig> sm90_decode_candidates(core::MoeProblem const& p, bool is_gemm1);
/// The decode base config (GEMM1's stage-1 partner and a search_space entry).
core::KernelConfig sm90_decode_base(core::MoeProblem const& p);
/// block_m candidates for the regime of M: powers of two (mma.sync also runs any multiple of 16
/// up to 128, which tables may name, but the space does not offer them: measured slower).
std::vector<int> sm90_block_m_candidates(core::MoeProblem const& p);

/// Configs with both GEMMs sharing block_m, plus the decode configs (CudaBackend::search_space).
std::vector<core::MoeConfig> sm90_joint_search_space(core::MoeProblem const& p);
/// The per-GEMM groups (CudaBackend::gemm_search_space; its comment says what they hold).
std::vector<core::GemmSpace> sm90_gemm_search_space(core::MoeProblem const& p);

}  // namespace moetune::kernels::cuda
