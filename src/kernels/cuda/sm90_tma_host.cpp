// encode_tma_2d and encode_tma_gated_interleave (sm90_tma_host.hpp). Covered by
// tests/kernels/cuda/sm90_gather_test.cpp (every tma_ws, pingpong and swap-AB config encodes its
// maps per launch).
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

core::Error no_encoder() {
  return core::make_error(core::ErrorCode::kUnsupported, "launch_sm90_gather",
                          "cuTensorMapEncodeTiled is not available from this driver (schedule "
                          "tma_ws needs CUDA 12+); use schedule cooperative");
}

}  // namespace

core::Status encode_tma_2d(CUtensorMap* map, const void* base, uint64_t rows, uint64_t cols,
                           uint32_t box_rows, const char* what) {
  EncodeTiledFn fn = encode_tiled_fn();
  if (fn == nullptr) return no_encoder();
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

core::Status encode_tma_gated_interleave(CUtensorMap* map, const void* w1, uint64_t experts,
                                         uint64_t inter, uint64_t k, uint32_t box_groups) {
  EncodeTiledFn fn = encode_tiled_fn();
  if (fn == nullptr) return no_encoder();
  const cuuint64_t dims[5] = {k, 8, 2, inter / 8, experts};
  const cuuint64_t strides[4] = {k * 2, inter * k * 2, 8 * k * 2, 2 * inter * k * 2};  // dims 1..4
  const cuuint32_t box[5] = {64, 8, 2, box_groups, 1};
  const cuuint32_t elem[5] = {1, 1, 1, 1, 1};
  const CUresult r =
      fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 5, const_cast<void*>(w1), dims, strides, box, elem,
         CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
         CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return core::make_error(
        core::ErrorCode::kInvalidArgument, "launch_sm90_gather",
        "cuTensorMapEncodeTiled failed for the interleaved gated weights (E = " +
            std::to_string(experts) + ", I = " + std::to_string(inter) +
            ", K = " + std::to_string(k) + ", box of " + std::to_string(box_groups) +
            " groups): error " + std::to_string(static_cast<int>(r)) +
            "; the base must be 16-byte aligned, K and I multiples of 8");
  }
  return core::Status::Ok();
}

}  // namespace moetune::kernels::cuda
