// The reference kernels' launch (cuda_reference.hpp).
#include "kernels/cuda/cuda_reference.hpp"

#include "kernels/cuda/cuda_check.hpp"

namespace moetune::kernels::cuda {

core::Status launch_ref_warps(cudaKernel_t kernel, long long total_warps, void** params,
                              cudaStream_t stream) {
  if (total_warps <= 0) return core::Status::Ok();
  MOETUNE_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel),
                                      dim3(static_cast<unsigned>((total_warps * 32 + 255) / 256)),
                                      dim3(256), params, 0, stream));
  return core::Status::Ok();
}

}  // namespace moetune::kernels::cuda
