// Host side of sm90_tma.cuh: the TMA tensor maps the warp-specialised kernels read (encoded per
// launch from that launch's pointers, passed as __grid_constant__ kernel parameters).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "core/result.hpp"

namespace moetune::kernels::cuda {

/// TMA map of a row-major bf16 matrix [rows, cols] read in boxes of box_rows x 64 columns
/// (128 bytes, the 128-byte swizzle atom the wgmma descriptors expect). `what` names the matrix
/// in the error ("weights", "h").
core::Status encode_tma_2d(CUtensorMap* map, const void* base, uint64_t rows, uint64_t cols,
                           uint32_t box_rows, const char* what);

}  // namespace moetune::kernels::cuda
