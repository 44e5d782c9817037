// encode_tma_2d (sm90_tma_host.hpp). Covered by tests/kernels/cuda/sm90_gather_test.cpp (every
// tma_ws and pingpong config encodes its maps per launch).
#include "kernels/cuda/sm90_tma_host.hpp"

#include <cuda_runtime.h>

#include <string>

namespace moetune::kernels::cuda {
namespace {

// cuTensorMapEncodeTiled, looked up once through the runtime (the project links no libcuda).
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeTiledFn encode_tiled_fn() {
  static EncodeTiledFn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return static_cast<EncodeTiledFn>(nullptr);
    }
    return reinterpret_cast<EncodeTiledFn>(f);
  }();
  return fn;
}

}  // namespace

core::Status encode_tma_2d(CUtensorMap* map, const void* base, uint64_t rows, uint64_t cols,
                           uint32_t box_rows, const char* what) {
  EncodeTiledFn fn = encode_tiled_fn();
  if (fn == nullptr) {
    return core::make_error(core::ErrorCode::kUnsupported, "launch_sm90_gather",
                            "cuTensorMapEncodeTiled is not available from this driver (schedule "
                            "tma_ws needs CUDA 12+); use schedule cooperative");
  }
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * 2};
  const cuuint32_t box[2] = {64, box_rows};
  const cuuint32_t elem[2] = {1, 1};
  const CUresult r =
      fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
         elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return core::make_error(core::ErrorCode::kInvalidArgument, "launch_sm90_gather",
                            std::string("cuTensorMapEncodeTiled failed for ") + what + " (" +
                                std::to_string(rows) + " x " + std::to_string(cols) + ", box " +
                                std::to_string(box_rows) + " x 64): error " +
                                std::to_string(static_cast<int>(r)) +
                                "; the base must be 16-byte aligned and cols a multiple of 8");
  }
  return core::Status::Ok();
}

}  // namespace moetune::kernels::cuda
