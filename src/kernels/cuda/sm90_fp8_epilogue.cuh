// sm90_fp8_epilogue.cuh: the block-scaled fp8 GEMM1 epilogue that stores h already quantised for
// GEMM2: per row and 128-column group, hs[row, group] = max(amax, 1e-10) / 448 over the group's
// bf16 h values and hq = h / hs in e4m3: the quant kernel's rule (sm90_fp8_quant_kernel.cuh) on
// the values the bf16 epilogue would have stored, so no quant pass over h is needed. A warpgroup's
// columns must be whole groups: a quad of lanes holds a row's 128 columns (16 n8 fragments, two
// values each), so the group's amax is the lane's over its 32 values, then two xor shuffles.
// Used by the tma_ws consumers through Fp8WsMma<true, ...>::store (sm90_fp8_ws_mma.cuh).
// Covered by tests/python/test_fp8_gpu.py.
#pragma once

#include "sm90_common.cuh"
#include "sm90_moe_epilogue.cuh"

namespace moetune_dev {

/// max |v| over a packed bf16x2's two values (as floats: exact).
MOETUNE_DEVICE float bf16x2_amax(moe_u32 v) {
  return fmaxf(fabsf(bf16_to_float((moe_bf16)(v & 0xFFFF))),
               fabsf(bf16_to_float((moe_bf16)(v >> 16))));
}

/// One row's 128-column group from fragment nn0 (16 fragments): the packed bf16 h values, their
/// scale over the quad, then 8 e4m3 bytes per lane and fragment quad; lane q of the quad stores
/// the scale. pair < 0 (padding): computed (the shuffles need every lane), not stored.
template <class Mainloop, int kAct>
MOETUNE_DEVICE void fp8_store_h_group(Mainloop const& ml, int mm, int half, int nn0, int lane,
                                      int pair, unsigned char* q_row, float* s_at, int col0,
                                      int n_dim, const moe_bf16* bias) {
  moe_u32 v[16];
  float amax = 0.0f;
#pragma unroll
  for (int f = 0; f < 16; ++f) {
    const BiasPair b = load_bias_pair<kAct, true>(bias, col0 + f * 8 + (lane & 3) * 2, n_dim);
    v[f] =
        pack_bf16x2(epilogue_value<Mainloop, kAct, true>(ml, mm, nn0 + f, half * 2, 1.0f, b),
                    epilogue_value<Mainloop, kAct, true>(ml, mm, nn0 + f, half * 2 + 1, 1.0f, b));
    amax = fmaxf(amax, bf16x2_amax(v[f]));
  }
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
  const float s = __fdiv_rn(fmaxf(amax, 1e-10f), 448.0f);
#pragma unroll
  for (int g = 0; g < 4; ++g) {
    moe_u32 a[4] = {v[4 * g], v[4 * g + 1], v[4 * g + 2], v[4 * g + 3]};
    quad_transpose(a, lane);
    if (pair >= 0) {
      *reinterpret_cast<uint2*>(q_row + col0 + (4 * g + (lane & 3)) * 8) =
          make_uint2(bf16x4_to_e4m3x4(a[0], a[1], s), bf16x4_to_e4m3x4(a[2], a[3], s));
    }
  }
  if (pair >= 0 && (lane & 3) == 0) *s_at = s;
}

/// GEMM1's tile of one warpgroup (columns n0 .. n0 + kWarpTileN of h, whole 128-column groups)
/// into hq [sorted rows, n_dim] e4m3 and hs [sorted rows, n_dim / 128]. rows, tid, row0, bias as
/// moe_epilogue_store's; groups past n_dim (a tile over the edge) are skipped.
template <class Mainloop, int kAct, class Rows>
MOETUNE_DEVICE void fp8_store_h_groups(Mainloop const& ml, int tid, Rows const& rows,
                                       unsigned char* hq, float* hs, long long row0, int n0,
                                       int n_dim, const moe_bf16* bias) {
  static_assert(Mainloop::kWarpColumns == 1 && Mainloop::kMmaN % 16 == 0,
                "fp8 h groups: a warp holds whole 128-column groups of its rows");
  const int lane = tid & 31;
  const int warp_m = tid >> 5;
#pragma unroll
  for (int mm = 0; mm < Mainloop::kMmaM; ++mm) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const long long row = row0 + epilogue_tile_row<Mainloop>(warp_m, lane, mm, half);
#pragma unroll
      for (int grp = 0; grp < Mainloop::kMmaN / 16; ++grp) {
        const int col0 = n0 + grp * 128;
        if (col0 >= n_dim) break;  // uniform over the warp
        fp8_store_h_group<Mainloop, kAct>(ml, mm, half, grp * 16, lane, rows.pair[mm][half],
                                          hq + row * n_dim, hs + row * (n_dim / 128) + col0 / 128,
                                          col0, n_dim, bias);
      }
    }
  }
}

}  // namespace moetune_dev
