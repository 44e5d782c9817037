// sm90_fp8_quant_kernel.cuh: the GEMM inputs of the fp8 regime quantised to e4m3, one warp per
// row and 128-column group (32 lanes x 4 values):
//   block (kBlock): scale[row, g] = max(amax of the group, 1e-10) / 448 and q = x / scale (IEEE
//                   division, round to nearest, saturated to +-448): the engines' per-token-group
//                   quantisation, so a reference repeats it bit for bit;
//   tensor:         q = x / s with the one static scale s = *tensor_scale.
// GEMM1's input is x in token order (rows = M); GEMM2's is h in sorted-row order, where only the
// rows of the valid blocks that hold a pair are quantised (padding rows are never read into an
// output). Needs cols a multiple of 128. Covered by tests/python/test_fp8_gpu.py.
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

struct Fp8QuantParams {
  const moe_bf16* src;        // [rows, cols] bf16
  unsigned char* dst;         // [rows, cols] e4m3
  float* scale;               // block: [rows, cols / 128]; tensor: unused
  const float* tensor_scale;  // tensor: [1]; block: unused
  const int* sorted_pairs;    // h: a row is quantised only when its pair is >= 0; x: null
  const int* num_blocks;      // h: rows past *num_blocks * block_m are skipped; x: null
  int block_m;
  long long rows;  // x: M; h: the most rows the blocks can hold
  int cols;
};

/// One 128-column group quantised by one warp, each lane 4 values: `raw` holds the lane's 4 bf16
/// values (columns lane * 4 ..), dst points at the group's first column; returns the group's
/// scale (block: max(amax, 1e-10) / 448; tensor: *tensor_scale). The rule of
/// moe_fp8_quant_kernel and of the fp8 decode kernels.
template <bool kBlock>
MOETUNE_DEVICE float fp8_quantise_lanes(uint2 raw, unsigned char* dst, const float* tensor_scale) {
  const int lane = threadIdx.x & 31;
  float s;
  if (kBlock) {
    const float v[4] = {
        bf16_to_float((moe_bf16)(raw.x & 0xFFFF)), bf16_to_float((moe_bf16)(raw.x >> 16)),
        bf16_to_float((moe_bf16)(raw.y & 0xFFFF)), bf16_to_float((moe_bf16)(raw.y >> 16))};
    float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    s = __fdiv_rn(fmaxf(amax, 1e-10f), 448.0f);
  } else {
    s = *tensor_scale;
  }
  const moe_u32 q = bf16x4_to_e4m3x4(raw.x, raw.y, s);
  *reinterpret_cast<moe_u32*>(dst + lane * 4) = q;
  return s;
}

/// fp8_quantise_lanes of the group at src (its first column).
template <bool kBlock>
MOETUNE_DEVICE float fp8_quantise_group(const moe_bf16* src, unsigned char* dst,
                                        const float* tensor_scale) {
  const uint2 raw = *reinterpret_cast<const uint2*>(src + (threadIdx.x & 31) * 4);
  return fp8_quantise_lanes<kBlock>(raw, dst, tensor_scale);
}

template <bool kBlock>
__global__ void __launch_bounds__(256) moe_fp8_quant_kernel(Fp8QuantParams p) {
  pdl_launch_dependents();
  pdl_wait();  // NOTE: align's sorted pairs and GEMM1's h are visible only after this
  const int lane = threadIdx.x & 31;
  const int groups = p.cols / 128;
  const long long rows =
      p.num_blocks != nullptr ? min(p.rows, (long long)*p.num_blocks * p.block_m) : p.rows;
  const long long units = rows * groups;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long u = blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5); u < units;
       u += warps) {
    const long long row = u / groups;
    const int g = (int)(u % groups);
    if (p.sorted_pairs != nullptr && p.sorted_pairs[row] < 0) continue;
    const long long at = row * p.cols + g * 128;
    const float s = fp8_quantise_group<kBlock>(p.src + at, p.dst + at, p.tensor_scale);
    if (kBlock && lane == 0) p.scale[row * groups + g] = s;
  }
}

}  // namespace moetune_dev
