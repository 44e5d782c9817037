#include "kernels/cuda/sm90_fp8_geometry.hpp"

#include <string_view>
#include <utility>

#include "kernels/cuda/sm90_decode_geometry.hpp"
#include "kernels/cuda/sm90_swap_geometry.hpp"

namespace moetune::kernels::cuda {
namespace {

std::string str(int v) { return std::to_string(v); }

bool is_ws(core::KernelConfig const& k) {
  return k.launch.schedule == core::Schedule::kTmaWarpSpecialized;
}

/// Consumer warpgroups splitting a tile's columns: 2 for tma_ws at block_m 64 with 8 warps.
int fp8_warps_n(core::KernelConfig const& k) {
  return is_ws(k) && k.tile.block_m == 64 && k.pipeline.num_warps == 8 ? 2 : 1;
}

/// The launch and warp rules of the two fp8 schedules.
core::Status check_fp8_schedule(core::KernelConfig const& k, std::string_view gemm) {
  const auto& t = k.tile;
  const bool ws = is_ws(k);
  if ((k.launch.schedule != core::Schedule::kCooperative && !ws) || k.launch.swap_ab ||
      k.launch.cluster_m != 1 || k.launch.cluster_n != 1 || k.launch.num_threads != 0) {
    return geometry_error(gemm, "launch = (" + core::short_string(k) +
                                    "): fp8 runs schedule cooperative or tma_ws, without "
                                    "swap_ab, clusters or num_threads, or the decode kernels "
                                    "(swap_ab with schedule auto); use one of those");
  }
  if (t.block_m != 64 && t.block_m != 128) {
    return geometry_error(gemm, "tile.block_m = " + str(t.block_m) + " with fp8; use 64 or 128");
  }
  const int warps = k.pipeline.num_warps;
  const bool ok = warps == t.block_m / 16 || (ws && t.block_m == 64 && warps == 8);
  if (!ok) {
    return geometry_error(
        gemm, "pipeline.num_warps = " + str(warps) + " with fp8 block_m " + str(t.block_m) +
                  " (one consumer warpgroup per 64 rows" +
                  (ws ? std::string(", or 8 at block_m 64: two splitting the columns") : "") +
                  "); use " + str(t.block_m / 16) + (ws && t.block_m == 64 ? " or 8" : ""));
  }
  return core::Status::Ok();
}

/// The fp8 rules that concern one GEMM's knobs, in the order a user would fix them.
core::Status check_fp8_knobs(core::MoeProblem const& p, core::KernelConfig const& k,
                             bool is_gemm1) {
  const std::string_view gemm = is_gemm1 ? "gemm1" : "gemm2";
  MOETUNE_RETURN_IF_ERROR(check_fp8_schedule(k, gemm));
  const auto& t = k.tile;
  const bool block = p.quant == core::Quant::kFp8Block;
  const int split_n = fp8_warps_n(k);
  const bool gated = is_gemm1 && core::is_gated(p.activation);
  const int wg_n = t.block_n / split_n;  // a consumer warpgroup's columns
  const int width = (gated ? 2 : 1) * wg_n;
  // Block-scaled keeps partial sums too: the cp.async loop up to width 128, tma_ws up to 256 in
  // parts of 128 (sm90_fp8_ws_mma.cuh).
  const int max_width = block && !is_ws(k) ? 128 : 256;
  if (t.block_k != kFp8BlockK) {
    return geometry_error(gemm, "tile.block_k = " + str(t.block_k) + " with fp8; use 128");
  }
  if (t.block_n % (16 * split_n) != 0 || width > max_width) {
    return geometry_error(gemm, "tile.block_n = " + str(t.block_n) + " with fp8 (wgmma width " +
                                    str(width) + " per warpgroup); use a multiple of " +
                                    str(16 * split_n) + " with width <= " + str(max_width) +
                                    (block && max_width == 128
                                         ? " (block-scaled keeps partial sums too; tma_ws takes "
                                           "256)"
                                         : ""));
  }
  if (block && 128 % wg_n != 0 && (gated || wg_n != 256)) {
    return geometry_error(gemm, "tile.block_n = " + str(t.block_n) +
                                    " with fp8_block; use 16, 32, 64 or 128 columns a warpgroup "
                                    "(inside one 128-wide weight block), or 256 for a tma_ws "
                                    "GEMM2 (two whole blocks)");
  }
  if (k.pipeline.split_k != 1) {
    return geometry_error(gemm,
                          "pipeline.split_k = " + str(k.pipeline.split_k) + " with fp8; use 1");
  }
  if (k.pipeline.num_stages < 3) {
    return geometry_error(
        gemm, "pipeline.num_stages = " + str(k.pipeline.num_stages) + " with fp8; use 3 or more");
  }
  return core::Status::Ok();
}

core::KernelConfig fp8_kernel(int block_m, int block_n, int stages, int group_m,
                              core::Schedule schedule = core::Schedule::kCooperative,
                              int num_warps = 0) {
  core::KernelConfig k;
  k.tile = {.block_m = block_m, .block_n = block_n, .block_k = kFp8BlockK, .group_m = group_m};
  k.pipeline = {
      .num_warps = num_warps > 0 ? num_warps : block_m / 16, .num_stages = stages, .split_k = 1};
  k.launch.schedule = schedule;
  return k;
}

/// A decode kernel (launch.swap_ab, schedule auto): block_m pairs per pass, block_n columns per
/// CTA, block_k / 512 16-byte vectors per lane and step, `rows` rows a warp at a time.
core::KernelConfig fp8_decode_kernel(core::MoeProblem const& p, int block_n, int block_k, int warps,
                                     int rows) {
  core::KernelConfig k;
  k.tile = {.block_m = decode_block_m(p), .block_n = block_n, .block_k = block_k, .group_m = 1};
  k.pipeline = {.num_warps = warps, .num_stages = rows, .split_k = 1};
  k.launch.swap_ab = true;
  return k;
}

}  // namespace

core::Result<GemmGeometry> fp8_gemm_geometry(core::MoeProblem const& p, core::KernelConfig const& k,
                                             bool is_gemm1) {
  if (is_decode(k)) return decode_geometry(p, k, is_gemm1);
  MOETUNE_RETURN_IF_ERROR(check_fp8_knobs(p, k, is_gemm1));
  GemmGeometry g;
  g.block_m = k.tile.block_m;
  g.block_n = k.tile.block_n;
  g.block_k = kFp8BlockK;
  g.warps_n = fp8_warps_n(k);
  g.warps_m = k.pipeline.num_warps / g.warps_n;
  g.stages = k.pipeline.num_stages;
  g.group_m = k.tile.group_m;
  g.gated = is_gemm1 && core::is_gated(p.activation);
  g.mma = is_ws(k) ? 2 : 1;
  g.fp8 = fp8_mode(p.quant);
  const int smem = g.smem_bytes() + g.block_m * 28;  // + the tile's row tables
  if (smem > kSm90MaxSmemBytes) {
    return geometry_error(is_gemm1 ? "gemm1" : "gemm2",
                          "pipeline.num_stages = " + str(g.stages) + " needs " + str(smem) +
                              " bytes of shared memory, over the sm_90 limit of " +
                              str(kSm90MaxSmemBytes) + "; use fewer stages or a smaller tile");
  }
  return g;
}

core::Status fp8_can_implement(core::MoeProblem const& p, core::MoeConfig const& c) {
  MOETUNE_RETURN_IF_ERROR(core::validate(p));
  for (auto [name, v] : {std::pair{"K", p.hidden_size}, std::pair{"I", p.intermediate_size}}) {
    if (v % kFp8BlockK != 0) {
      return core::make_error(core::ErrorCode::kUnsupported, "sm90_gather",
                              std::string(name) + " = " + std::to_string(v) +
                                  " is not a multiple of 128, which the fp8 kernels' 128-byte "
                                  "k-tiles need; use quant none (bf16)");
    }
  }
  if (p.num_experts > 1024) {
    return core::make_error(
        core::ErrorCode::kUnsupported, "sm90_gather",
        "E = " + std::to_string(p.num_experts) + " exceeds the align kernel's 1024 experts");
  }
  if (is_decode(c.gemm1) != is_decode(c.gemm2)) {
    return core::make_error(core::ErrorCode::kUnsupported, "sm90_gather",
                            std::string("gemm") + (is_decode(c.gemm1) ? "1" : "2") +
                                " runs the decode kernels (swap_ab, schedule auto) but gemm" +
                                (is_decode(c.gemm1) ? "2" : "1") +
                                " does not; the decode GEMM1 writes h in pair order, which only "
                                "the decode GEMM2 reads: set both or neither");
  }
  if (!is_decode(c.gemm1) && c.gemm1.tile.block_m != c.gemm2.tile.block_m) {
    return core::make_error(core::ErrorCode::kUnsupported, "sm90_gather",
                            "gemm1.tile.block_m = " + str(c.gemm1.tile.block_m) +
                                " differs from gemm2.tile.block_m = " + str(c.gemm2.tile.block_m) +
                                " with fp8; both GEMMs read the align step's padding: make "
                                "them equal");
  }
  auto g1 = fp8_gemm_geometry(p, c.gemm1, true);
  if (!g1.ok()) return g1.error();
  auto g2 = fp8_gemm_geometry(p, c.gemm2, false);
  if (!g2.ok()) return g2.error();
  return core::Status::Ok();
}

std::string fp8_gemm_name_expr(GemmGeometry const& g, int act, bool is_gemm1) {
  const std::string block = g.fp8 == 2 ? "true" : "false";
  if (g.decode) {
    const std::string tail = str(g.block_n) + "," + str(g.warps_m) + "," + str(g.stages) + "," +
                             str(g.block_k / 512) + ">";
    if (!is_gemm1) return "&moetune_dev::moe_fp8_decode_gemm2_kernel<" + block + "," + tail;
    return "&moetune_dev::moe_fp8_decode_gemm1_kernel<" + str(act) + "," +
           (g.gated ? "true" : "false") + "," + block + "," + str(g.block_m) + "," + tail;
  }
  if (g.persistent()) {
    return "&moetune_dev::moe_fp8_ws_kernel<" + str(g.block_m) + "," + str(g.block_n) + "," +
           str(g.stages) + "," + str(g.group_m) + "," + str(is_gemm1 ? act : 0) + "," +
           (is_gemm1 ? "true" : "false") + "," + str(g.warps_n) + "," + block + ">";
  }
  return "&moetune_dev::moe_fp8_gemm_kernel<" + str(g.block_m) + "," + str(g.block_n) + "," +
         str(g.stages) + "," + str(g.group_m) + "," + str(is_gemm1 ? act : 0) + "," +
         (is_gemm1 ? "true" : "false") + "," + block + ">";
}

std::string fp8_quant_name_expr(core::Quant q) {
  return std::string("&moetune_dev::moe_fp8_quant_kernel<") +
         (q == core::Quant::kFp8Block ? "true" : "false") + ">";
}

bool fp8_gemm1_writes_hq(GemmGeometry const& g1) {
  if (!g1.persistent() || g1.decode) return false;
  return g1.fp8 == 1 || (g1.fp8 == 2 && (g1.block_n / g1.warps_n) % 128 == 0);
}

core::MoeConfig fp8_default_config(core::MoeProblem const& p) {
  const bool block = p.quant == core::Quant::kFp8Block;
  const int block_m = pairs_per_expert(p) >= kFp8Ws128PairsPerExpert ? 128 : 64;
  // Block-scaled gated GEMM1: block_n 128 (width 256 in two parts, storing hq) at 128 rows, 64 at
  // 64 rows (two warpgroups splitting the columns).
  const bool wide1 = !block || block_m == 128 || !core::is_gated(p.activation);
  const int n1 = wide1 ? 128 : 64;
  const int n2 = block ? 128 : 256;
  const int stages2 = block && block_m == 128 ? 6 : 4;  // 6 x 32 KB or 4 x 48 KB at 128 rows
  const auto ws = core::Schedule::kTmaWarpSpecialized;
  return core::MoeConfig{.gemm1 = fp8_kernel(block_m, n1, 4, 8, ws, 8),
                         .gemm2 = fp8_kernel(block_m, n2, stages2, 8, ws, 8)};
}

std::vector<core::MoeConfig> fp8_search_space(core::MoeProblem const& p) {
  std::vector<core::MoeConfig> out;
  if (p.num_tokens <= kFp8DecodeMaxTokens && pairs_per_expert(p) <= kFp8DecodePairsPerExpert) {
    for (int bn1 : {4, 8})  // the decode kernels: block_k 1024, one or two rows a warp
      for (int rows : {1, 2})
        for (int warps2 : {4, 8}) {
          core::MoeConfig c{.gemm1 = fp8_decode_kernel(p, bn1, 1024, 4, rows),
                            .gemm2 = fp8_decode_kernel(p, 4, 1024, warps2, rows)};
          if (fp8_can_implement(p, c).ok()) out.push_back(c);
        }
  }
  // tma_ws: block_m 128, or 64 with two warpgroups splitting the columns
  for (int bm : {128, 64})
    for (int bn1 : {64, 128})
      for (int bn2 : {128, 256})
        for (int stages : {4, 6}) {
          const auto ws = core::Schedule::kTmaWarpSpecialized;
          core::MoeConfig c{.gemm1 = fp8_kernel(bm, bn1, stages, 8, ws, 8),
                            .gemm2 = fp8_kernel(bm, bn2, stages, 8, ws, 8)};
          if (fp8_can_implement(p, c).ok()) out.push_back(c);
        }
  for (int bm : {64, 128})
    for (int bn1 : {64, 128})
      for (int bn2 : {64, 128})
        for (int stages : {3, 4, 6})
          for (int gm : {1, 8}) {
            core::MoeConfig c{.gemm1 = fp8_kernel(bm, bn1, stages, gm),
                              .gemm2 = fp8_kernel(bm, bn2, stages, gm)};
            if (fp8_can_implement(p, c).ok()) out.push_back(c);
          }
  return out;
}

}  // namespace moetune::kernels::cuda
