// Geometry of the sm90_gather family's decode kernels (launch.swap_ab, sm90_decode_kernel.cuh):
// which configs they can run and the GemmGeometry they run with.
#include "kernels/cuda/sm90_decode_geometry.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace moetune::kernels::cuda {
namespace {

bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

core::Error reject(std::string_view gemm, std::string msg) {
  return geometry_error(gemm, std::move(msg));
}

constexpr std::string_view kPre = "launch.swap_ab = true (decode kernels) ";

/// The config's knobs against what the decode kernels take.
core::Status check_decode_config(core::MoeProblem const& p, core::KernelConfig const& k,
                                 bool is_gemm1) {
  const std::string_view gemm = is_gemm1 ? "gemm1" : "gemm2";
  const auto& t = k.tile;
  const auto& pl = k.pipeline;
  const auto& l = k.launch;
  const std::string pre(kPre);
  if (l.schedule != core::Schedule::kAuto) {
    return reject(gemm, pre + "runs CUDA-core dot products, not " +
                            std::string(core::to_string(l.schedule)) + "; use schedule auto");
  }
  if (t.block_m < 1 || t.block_m > 16 || !is_pow2(t.block_m)) {
    return reject(gemm, pre + "takes tile.block_m = pairs per pass in 1, 2, 4, 8, 16; saw " +
                            std::to_string(t.block_m));
  }
  if (t.block_n < 1 || t.block_n > 256) {
    return reject(gemm, pre + "takes tile.block_n = columns per CTA in 1..256; saw " +
                            std::to_string(t.block_n));
  }
  if (t.block_k < 256 || t.block_k > 2048 || !is_pow2(t.block_k)) {
    return reject(gemm, pre +
                            "takes tile.block_k = 256, 512, 1024 or 2048 (1..8 16-byte "
                            "vectors per lane and step); saw " +
                            std::to_string(t.block_k));
  }
  if (t.group_m != 1 || pl.split_k != 1) {
    return reject(gemm, pre + "has no raster or split-K; use group_m = 1 and split_k = 1");
  }
  if (pl.num_stages != 1 && pl.num_stages != 2 && pl.num_stages != 4) {
    return reject(gemm, pre +
                            "takes pipeline.num_stages = rows each warp streams at once in 1, "
                            "2, 4; saw " +
                            std::to_string(pl.num_stages));
  }
  if (!is_pow2(pl.num_warps) || pl.num_warps > 16) {
    return reject(
        gemm, "pipeline.num_warps = " + std::to_string(pl.num_warps) + " is not 1, 2, 4, 8 or 16");
  }
  if (l.cluster_m != 1 || l.cluster_n != 1 || l.num_threads != 0) {
    return reject(gemm, pre + "uses no cluster and no cpu threads; use cluster 1x1, threads 0");
  }
  if (p.hidden_size % 8 != 0 || p.intermediate_size % 8 != 0) {
    return reject(gemm, pre + "reads 16-byte vectors: K and I must be multiples of 8; saw K = " +
                            std::to_string(p.hidden_size) +
                            ", I = " + std::to_string(p.intermediate_size));
  }
  const int64_t n_dim = is_gemm1 ? p.intermediate_size : p.hidden_size;
  if ((n_dim + t.block_n - 1) / t.block_n > 65535) {
    return reject(gemm, pre + "launches one grid row per " + std::to_string(t.block_n) +
                            " columns: " + std::to_string(n_dim) +
                            " columns need more than 65535; use a larger block_n");
  }
  return core::Status::Ok();
}

}  // namespace

core::Result<GemmGeometry> decode_geometry(core::MoeProblem const& p, core::KernelConfig const& k,
                                           bool is_gemm1) {
  MOETUNE_RETURN_IF_ERROR(check_decode_config(p, k, is_gemm1));
  const std::string_view gemm = is_gemm1 ? "gemm1" : "gemm2";
  const auto& t = k.tile;
  const auto& pl = k.pipeline;
  const std::string pre(kPre);
  GemmGeometry g;
  g.decode = true;
  g.block_m = t.block_m;
  g.block_n = t.block_n;
  g.block_k = t.block_k;
  g.warps_m = pl.num_warps;
  g.warps_n = 1;
  g.stages = pl.num_stages;
  g.group_m = 1;
  g.gated = is_gemm1 && core::is_gated(p.activation);
  const int vec = t.block_k / 256;
  const int regs =
      is_gemm1 ? g.stages * (g.gated ? 2 : 1) * (g.block_m + 4 * vec) : g.stages * (1 + 4 * vec);
  if (regs > 160) {
    return reject(gemm, pre + "needs " + std::to_string(regs) +
                            " registers per lane for accumulators and loads (rows x halves x "
                            "(block_m + 4 x block_k / 256)), over 160; use fewer rows "
                            "(num_stages), a smaller block_m or block_k 256");
  }
  if (!is_gemm1) {
    g.decode_smem = static_cast<int>(p.top_k) * g.block_n * 4;
    if (g.decode_smem > 48 * 1024) {
      return reject(gemm, pre + "keeps top_k x block_n partial dots in shared memory: " +
                              std::to_string(g.decode_smem) +
                              " bytes, over 48 KB; use a smaller block_n");
    }
  }
  return g;
}

}  // namespace moetune::kernels::cuda
