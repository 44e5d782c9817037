// Geometry of the sm90_gather family's decode kernels (launch.swap_ab, sm90_decode_kernel.cuh;
// fp8: sm90_fp8_decode_kernel.cuh): which configs they can run and the GemmGeometry they run with.
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

/// Values in one 16-byte vector: 8 bf16, or 16 e4m3 for a quantised problem.
int vector_elems(core::MoeProblem const& p) { return p.quant == core::Quant::kNone ? 8 : 16; }

/// Dynamic shared memory of a decode kernel. bf16: GEMM2's top_k x block_n fp32 partial dots.
/// fp8: GEMM1 also stages block_m quantised x rows (K bytes and K / 128 scales each); GEMM2 the
/// token's top_k quantised h rows and their scales, each array padded to 16 bytes
/// (sm90_fp8_decode_kernel.cuh).
int64_t decode_smem_bytes(core::MoeProblem const& p, GemmGeometry const& g, bool is_gemm1) {
  auto pad4 = [](int64_t floats) { return (floats + 3) / 4 * 4; };
  const bool fp8 = p.quant != core::Quant::kNone;
  if (is_gemm1) return fp8 ? g.block_m * (p.hidden_size + p.hidden_size / 32) : 0;
  const int64_t dots = 4 * pad4(p.top_k * g.block_n);
  if (!fp8) return dots;
  const int64_t i = p.intermediate_size;
  return dots + 4 * pad4(p.top_k * (i / 128)) + p.top_k * i;
}

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
  const int step = vector_elems(p) * 32;  // block_k of one 16-byte vector per lane
  if (t.block_k < step || t.block_k > 2048 || !is_pow2(t.block_k)) {
    return reject(gemm, pre + "takes tile.block_k = " + std::to_string(step) + ".." +
                            "2048, a power of two (1.." + std::to_string(2048 / step) +
                            " 16-byte vectors per lane and step" +
                            (p.quant != core::Quant::kNone ? ", 16 e4m3 values each" : "") +
                            "); saw " + std::to_string(t.block_k));
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
  const bool fp8 = p.quant != core::Quant::kNone;
  const int vec = t.block_k / (vector_elems(p) * 32);
  // fp8: 16 weight scales per lane a step (GEMM1: per row and half) and 16 floats of x
  const int per_vec = fp8 ? 5 : 4;
  const int regs = (is_gemm1 ? g.stages * (g.gated ? 2 : 1) * (g.block_m + per_vec * vec)
                             : g.stages * (1 + per_vec * vec)) +
                   (fp8 ? 16 : 0);
  if (regs > 160) {
    return reject(gemm, pre + "needs " + std::to_string(regs) +
                            " registers per lane for accumulators and loads (rows x halves x "
                            "(block_m + " +
                            std::to_string(per_vec) +
                            " x vectors per lane and step)), over 160; use fewer rows "
                            "(num_stages), a smaller block_m or a smaller block_k");
  }
  const int64_t smem = decode_smem_bytes(p, g, is_gemm1);
  const int64_t limit = fp8 ? kSm90MaxSmemBytes - 1024 : 48 * 1024;
  if (smem > limit) {
    const std::string what = is_gemm1 ? "block_m quantised x rows"
                                      : std::string("top_k x block_n partial dots") +
                                            (fp8 ? " and top_k quantised h rows" : "");
    return reject(gemm, pre + "keeps " + what + " in shared memory: " + std::to_string(smem) +
                            " bytes, over " + std::to_string(limit) + "; use a smaller " +
                            (is_gemm1 ? "block_m" : "block_n") +
                            (fp8 ? ", or the align-path kernels (swap_ab false)" : ""));
  }
  g.decode_smem = static_cast<int>(smem);
  g.fp8 = fp8_mode(p.quant);
  return g;
}

}  // namespace moetune::kernels::cuda
