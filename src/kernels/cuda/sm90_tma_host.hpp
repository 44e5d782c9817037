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

/// TMA map of gated weights w1 [E, 2I, K] (gate rows [0, I), up rows [I, 2I) of each expert) that
/// loads them interleaved in 8-row groups: dims (K, 8 rows, gate/up, I / 8 groups, E), box
/// (64, 8, 2, box_groups, 1). A box at group c / 8 of expert e lands as 8 gate rows of columns
/// c..c+7, their 8 up rows, then the next 8 columns: each wgmma row r < 8 of a 16-row block pairs
/// with row r + 8 (the swap-AB GEMM1, sm90_swap_kernel.cuh). Groups past I / 8 are zero-filled, so
/// a partial last tile reads nothing of the next expert or past w1. I must be a multiple of 8.
core::Status encode_tma_gated_interleave(CUtensorMap* map, const void* w1, uint64_t experts,
                                         uint64_t inter, uint64_t k, uint32_t box_groups);

}  // namespace moetune::kernels::cuda
