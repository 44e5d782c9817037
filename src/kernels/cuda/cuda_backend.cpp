#include "kernels/cuda/cuda_backend.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_gather_defaults.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"

namespace moetune::kernels::cuda {

std::string CudaBackend::family() const { return kSm90GatherFamily; }
int CudaBackend::family_version() const { return kSm90GatherVersion; }

core::Status CudaBackend::can_implement(core::MoeProblem const& p, core::MoeConfig const& c) const {
  return sm90_can_implement(p, c, fast_paths_);
}

core::MoeConfig CudaBackend::default_config(core::MoeProblem const& p) const {
  return sm90_default_config(p, fast_paths_);
}

core::Result<core::MoeConfig> CudaBackend::batch_invariant_config(core::MoeProblem const& p) const {
  return sm90_batch_invariant_config(p, fast_paths_);
}

std::vector<core::MoeConfig> CudaBackend::search_space(core::MoeProblem const& p) const {
  return sm90_joint_search_space(p);
}

std::vector<core::GemmSpace> CudaBackend::gemm_search_space(core::MoeProblem const& p) const {
  return sm90_gemm_search_space(p);
}

core::Result<core::DeviceInfo> query_cuda_device() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return core::make_error(core::ErrorCode::kNotFound, "cuda",
                            "no CUDA device is visible; use --backend cpu");
  }
  cudaDeviceProp prop{};
  MOETUNE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  core::DeviceInfo d;
  d.name = prop.name;
  d.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
           (prop.major == 9 ? "a" : "");
  d.sm_count = prop.multiProcessorCount;
  int drv = 0;
  cudaDriverGetVersion(&drv);
  d.driver = std::to_string(drv / 1000) + "." + std::to_string((drv % 1000) / 10);
  d.toolchain = "nvrtc " + nvrtc_version();
  d.l2_bytes = prop.l2CacheSize;
  d.smem_per_block_bytes = prop.sharedMemPerBlockOptin;
  return d;
}

}  // namespace moetune::kernels::cuda
