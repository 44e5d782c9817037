// CudaBackend: the sm90_gather family as a core::Backend (can_implement, default config, search
// space) plus the device facts of GPU 0.
#pragma once

#include <vector>

#include "core/backend.hpp"
#include "kernels/cuda/sm90_gather_space.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels::cuda {

class CudaBackend final : public core::Backend {
 public:
  /// Reads GPU 0's properties; `device` may be left default when no GPU is present (CI compile).
  explicit CudaBackend(core::DeviceInfo device, FastPaths fast_paths = {})
      : device_(std::move(device)), fast_paths_(fast_paths) {}
  FastPaths const& fast_paths() const { return fast_paths_; }
  void set_fast_paths(FastPaths fp) { fast_paths_ = fp; }
  std::string name() const override { return "cuda"; }
  std::string family() const override;
  int family_version() const override;
  core::DeviceInfo device() const override { return device_; }
  core::Status can_implement(core::MoeProblem const& problem,
                             core::MoeConfig const& config) const override;
  core::MoeConfig default_config(core::MoeProblem const& problem) const override;
  /// sm90_batch_invariant_config under this backend's fast paths.
  core::Result<core::MoeConfig> batch_invariant_config(
      core::MoeProblem const& problem) const override;
  /// Configs with both GEMMs sharing block_m; the space around the regime of M (see .cpp).
  std::vector<core::MoeConfig> search_space(core::MoeProblem const& problem) const override;
  /// Per block_m of sm90_block_m_candidates: sm90_gemm_candidates of each GEMM (GEMM1 and GEMM2
  /// are separate launches, so each is chosen on its own); base GEMM2 = mma.sync
  /// m<block_m>n64k64g8w4s4 (else the first GEMM2 candidate), the same at every M. Where an
  /// expert has 96..320 pairs, a group of 256: tma_ws GEMM2 256-row tiles under the tma_ws GEMM1s
  /// of 128 rows (sub-blocks). At tiny M one more space: the decode kernels
  /// (sm90_decode_candidates), base sm90_decode_base.
  std::vector<core::GemmSpace> gemm_search_space(core::MoeProblem const& problem) const override;

 private:
  core::DeviceInfo device_;
  FastPaths fast_paths_;
};

/// GPU 0 as a DeviceInfo; error when no device.
core::Result<core::DeviceInfo> query_cuda_device();

}  // namespace moetune::kernels::cuda
