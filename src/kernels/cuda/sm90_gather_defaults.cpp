// sm90_default_config (sm90_gather_defaults.hpp). Covered by
// tests/kernels/cuda/jit_compile_test.cpp (every regime's default is implementable and compiles,
// held-out shapes too).
#include "kernels/cuda/sm90_gather_defaults.hpp"

#include <algorithm>

#include "kernels/cuda/sm90_gather_geometry.hpp"

namespace moetune::kernels::cuda {

// Default rule (measured on H200, see docs/kernels.md once tuned tables exist):
//   pairs per expert p = M * top_k / E.
//   M <= 4 and p <= 1: the decode kernels (launch.swap_ab), GEMM1 n8 k512 4 warps 1 row, GEMM2
//               n4 k512 8 warps 1 row (won at M = 1 on S1-S3 and M = 4 on S1/S2:
//               bench/results/raw/2026-11-29-c35ea3c-decode-sweep.csv)
//   p <= 1      tiny:  BM 16, GEMM1 BN 32 (2 warps) / GEMM2 BN 64 (4 warps), BK 128
//   p <= 48     small: BM 16..64 matched to p, BN 64, BK 64, 4 warps, 4 stages
//   otherwise   large: TMA + warp-specialised wgmma (tma_ws) BM 128, BN 128 (gated GEMM1) /
//               256, BK 64, 8 MMA warps, 4 stages, group_m 8 (beat cooperative at every M >= 1024
//               measured on H200: bench/results/raw/2026-11-29-9989eea-pinned-as-tma_ws.csv)
core::MoeConfig sm90_default_config(core::MoeProblem const& p, FastPaths const& fast_paths) {
  const double per_expert = pairs_per_expert(p);
  core::KernelConfig g1, g2;
  auto set = [](core::KernelConfig& k, int bm, int bn, int bk, int warps, int stages, int gm) {
    k.tile = {.block_m = bm, .block_n = bn, .block_k = bk, .group_m = gm};
    k.pipeline = {.num_warps = warps, .num_stages = stages, .split_k = 1};
  };
  const int bk_small = (p.hidden_size % 128 == 0 && p.intermediate_size % 128 == 0) ? 128 : 64;
  if (p.num_tokens <= 4 && per_expert <= 1.0) {
    // Decode kernels: no align or combine launch, weights streamed by CUDA-core dot products.
    set(g1, decode_block_m(p), 8, 512, 4, 1, 1);
    set(g2, decode_block_m(p), 4, 512, 8, 1, 1);
    g1.launch.swap_ab = g2.launch.swap_ab = true;
    if (gemm_geometry(p, g1, true).ok() && gemm_geometry(p, g2, false).ok()) {  // decode rules
      return {.gemm1 = g1, .gemm2 = g2};
    }
    g1 = g2 = core::KernelConfig{};  // K or I not a multiple of 8: the mma.sync rule below
  }
  if (per_expert <= 1.0) {
    set(g1, 16, 32, bk_small, 2, 4, 1);
    set(g2, 16, 64, bk_small, 4, 4, 1);
  } else if (per_expert <= 48.0) {
    const int bm = per_expert <= 16 ? 16 : (per_expert <= 32 ? 32 : 64);
    set(g1, bm, 64, 64, 4, 4, 8);
    set(g2, bm, 64, 64, 4, 4, 8);
  } else {
    // TMA + warp-specialised wgmma (schedule tma_ws), one MMA warpgroup per 64 rows.
    set(g1, 128, core::is_gated(p.activation) ? 128 : 256, 64, 8, 4, 8);
    set(g2, 128, 256, 64, 8, 4, 8);
    g1.launch.schedule = core::Schedule::kTmaWarpSpecialized;
    g2.launch.schedule = core::Schedule::kTmaWarpSpecialized;
  }
  core::MoeConfig c{.gemm1 = g1, .gemm2 = g2};
  // Fall back to the smallest safe block_k when the shape does not divide the choice.
  for (auto* k : {&c.gemm1, &c.gemm2}) {
    const bool is_g1 = k == &c.gemm1;
    const int64_t kd = is_g1 ? p.hidden_size : p.intermediate_size;
    while (k->tile.block_k > 32 && kd % k->tile.block_k != 0) k->tile.block_k /= 2;
    if (k->launch.schedule != core::Schedule::kAuto &&
        (k->tile.block_k != 64 || !fast_paths.wgmma_mainloop)) {
      k->launch.schedule = core::Schedule::kAuto;  // wgmma needs block_k 64; mma.sync does not
      k->tile.block_n = std::min(k->tile.block_n, 128);
    }
  }
  return c;
}

}  // namespace moetune::kernels::cuda
