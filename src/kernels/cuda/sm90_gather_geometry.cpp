// Geometry of the sm90_gather family's GEMM kernels (sm90_gather_geometry.hpp): every rule
// can_implement enforces, one check per concern (tile, pipeline, wgmma schedule, warp layout,
// resources); the decode kernels' rules are in sm90_decode_geometry.cpp. (11 lines past the
// 400-line rule of thumb: the five checks share ScheduleKind, which stays file-local.)
#include "kernels/cuda/sm90_gather_geometry.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/cuda/sm90_decode_geometry.hpp"
#include "kernels/cuda/sm90_fp8_geometry.hpp"
#include "kernels/cuda/sm90_swap_geometry.hpp"

namespace moetune::kernels::cuda {
namespace {

using core::ErrorCode;

bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

core::Error reject(std::string_view gemm, std::string msg) {
  return geometry_error(gemm, std::move(msg));
}

}  // namespace

core::Error geometry_error(std::string_view gemm, std::string msg) {
  return core::make_error(core::ErrorCode::kUnsupported, "sm90_gather",
                          std::string(gemm) + "." + msg);
}

int act_id(core::Activation a) {
  switch (a) {
    case core::Activation::kSiluGated: return 0;
    case core::Activation::kRelu2: return 1;
    case core::Activation::kGelu: return 2;
    case core::Activation::kGeluTanh: return 3;
    case core::Activation::kSwigluOai: return 4;
  }
  return 0;
}

double pairs_per_expert(core::MoeProblem const& p) {
  return p.num_experts > 0 ? static_cast<double>(p.num_tokens) * p.top_k / p.num_experts : 0;
}

int decode_block_m(core::MoeProblem const& p) {
  int bm = 1;
  while (bm < 8 && bm < p.num_tokens) bm *= 2;
  return bm;
}

int64_t max_blocks(int64_t num_pairs, int64_t num_experts, int block_m) {
  return (num_pairs + block_m - 1) / block_m + std::min(num_experts, num_pairs);
}

namespace {

/// What a config's schedule makes of the wgmma paths, derived once for the checks below.
struct ScheduleKind {
  bool pp = false;    ///< pingpong
  bool ws = false;    ///< tma_ws or pingpong (TMA + warp-specialised)
  bool coop = false;  ///< cooperative, tma_ws or pingpong: a wgmma main loop
  /// tma_ws at block_m 64 with 8 warps: two consumer warpgroups split block_n (<= 2 x 256)
  bool ws_split_n = false;
  /// tma_ws at block_m 192: three consumer warpgroups of 64 rows (num_warps 12)
  bool ws192 = false;
  std::string name;  ///< for messages: "pingpong", "tma_ws" or "cooperative"
};

ScheduleKind schedule_kind(core::KernelConfig const& k) {
  ScheduleKind s;
  s.pp = k.launch.schedule == core::Schedule::kPingpong;
  s.ws = k.launch.schedule == core::Schedule::kTmaWarpSpecialized || s.pp;
  s.coop = k.launch.schedule == core::Schedule::kCooperative || s.ws;
  s.ws_split_n = s.ws && !s.pp && k.tile.block_m == 64 && k.pipeline.num_warps == 8;
  s.ws192 = s.ws && !s.pp && k.tile.block_m == 192;
  s.name = s.pp ? "pingpong" : s.ws ? "tma_ws" : "cooperative";
  return s;
}

/// Tile sizes against the schedule and the problem's K and I, and the raster.
core::Status check_tile(core::MoeProblem const& p, core::KernelConfig const& k, bool is_gemm1,
                        ScheduleKind const& s) {
  const std::string_view gemm = is_gemm1 ? "gemm1" : "gemm2";
  const int64_t k_dim = is_gemm1 ? p.hidden_size : p.intermediate_size;
  const int64_t n_dim = is_gemm1 ? p.intermediate_size : p.hidden_size;
  const auto& t = k.tile;
  const bool coop = s.coop, ws_split_n = s.ws_split_n;
  // mma.sync (schedule auto) also takes any multiple of 16 up to 128: a block sized to an
  // expert's pairs (48 where experts hold 32 +- 6, so few spill into a second block).
  const bool sized_m = !coop && t.block_m % 16 == 0 && t.block_m >= 16 && t.block_m <= 128;
  if ((t.block_m < 16 || t.block_m > 256 || !is_pow2(t.block_m)) && !s.ws192 && !sized_m) {
    return reject(gemm, "tile.block_m = " + std::to_string(t.block_m) +
                            " is not supported (mma m16 tiles); use 16, 32, 64, 128 or 256 (192 "
                            "with schedule tma_ws; other multiples of 16 up to 128 with schedule "
                            "auto)");
  }
  // wgmma takes any N that is a multiple of 8, so block_n can divide awkward sizes exactly
  // (DeepGEMM's unaligned BLOCK_N: 1856 = 8 x 232); mma.sync needs powers of two.
  if (coop ? (t.block_n < 32 || t.block_n > (ws_split_n ? 512 : 256) ||
              t.block_n % (ws_split_n ? 16 : 8) != 0)
           : (t.block_n < 16 || t.block_n > 256 || !is_pow2(t.block_n))) {
    return reject(
        gemm, "tile.block_n = " + std::to_string(t.block_n) +
                  (coop ? " is not supported with schedule cooperative, tma_ws or pingpong; use a "
                          "multiple of 8 in 32..256 (tma_ws at block_m 64 with 8 warps: a "
                          "multiple of 16 up to 512)"
                        : " is not supported; use 16, 32, 64, 128 or 256 (other multiples "
                          "of 8 need schedule cooperative or tma_ws)"));
  }
  if (t.block_k != 32 && t.block_k != 64 && t.block_k != 128) {
    return reject(gemm, "tile.block_k = " + std::to_string(t.block_k) +
                            " is not supported (swizzled smem rows); use 32, 64 or 128");
  }
  if (k_dim % t.block_k != 0) {
    return reject(
        gemm, "tile.block_k = " + std::to_string(t.block_k) + " does not divide " +
                  (is_gemm1 ? "K = " : "I = ") + std::to_string(k_dim) +
                  "; use a block_k that divides it (32 always does when it is a multiple of 32)");
  }
  if (k_dim % 32 != 0 || n_dim % 8 != 0) {
    return reject(gemm, std::string("needs K and I to be multiples of 32 and 8; saw K = ") +
                            std::to_string(p.hidden_size) +
                            ", I = " + std::to_string(p.intermediate_size));
  }
  if (t.group_m < 1 || t.group_m > 64) {
    return reject(gemm,
                  "tile.group_m = " + std::to_string(t.group_m) + " is out of range; use 1..64");
  }
  return core::Status::Ok();
}

/// split_k, stages and the cluster shape.
core::Status check_pipeline(core::KernelConfig const& k, bool is_gemm1, int64_t k_dim,
                            ScheduleKind const& s) {
  const std::string_view gemm = is_gemm1 ? "gemm1" : "gemm2";
  const bool ws = s.ws, pp = s.pp;
  const auto& pl = k.pipeline;
  if (pl.split_k != 1) {
    // GEMM2 of tma_ws: fp32 partials per split, summed by combine in a fixed order.
    if (is_gemm1 || !ws || pp) {
      return reject(gemm, "pipeline.split_k = " + std::to_string(pl.split_k) +
                              " is implemented for GEMM2 with schedule tma_ws only (GEMM1's "
                              "activation needs the whole sum); use split_k = 1");
    }
    if (pl.split_k < 1 || pl.split_k > 8 || (k_dim / 64) % pl.split_k != 0) {
      return reject(gemm, "pipeline.split_k = " + std::to_string(pl.split_k) +
                              " must be in 1..8 and divide I / 64 = " + std::to_string(k_dim / 64) +
                              " (every split takes whole 64-deep k-tiles)");
    }
  }
  if (pl.num_stages < 2 || pl.num_stages > 8) {
    return reject(gemm, "pipeline.num_stages = " + std::to_string(pl.num_stages) +
                            " is out of range; the cp.async pipeline needs 2..8 stages");
  }
  const auto& l = k.launch;
  // Clusters, tma_ws only: 2x1 (CTA pairs over m-blocks sharing the weight tile by multicast), or
  // for GEMM2 1x2 (CTA pairs over n-tiles sharing the h rows by multicast).
  const bool pair_ok = ws && !pp && pl.split_k == 1;
  const bool cluster_ok = (l.cluster_m == 1 && l.cluster_n == 1) ||
                          (l.cluster_m == 2 && l.cluster_n == 1 && pair_ok) ||
                          (l.cluster_m == 1 && l.cluster_n == 2 && pair_ok && !is_gemm1);
  if (!cluster_ok) {
    return reject(gemm, "launch.cluster = " + std::to_string(l.cluster_m) + "x" +
                            std::to_string(l.cluster_n) +
                            " is not implemented here; use 1x1, or with schedule tma_ws and "
                            "split_k 1: 2x1 (CTA pairs over m-blocks, weight tile multicast) or, "
                            "for GEMM2, 1x2 (CTA pairs over n-tiles, h rows multicast)");
  }
  return core::Status::Ok();
}

/// The wgmma schedules' own rules: block_k 64, block_m 64/128 (tma_ws also 192 and 256), warps per
/// rows.
core::Status check_wgmma(core::MoeProblem const& p, core::KernelConfig const& k, bool is_gemm1,
                         ScheduleKind const& s) {
  const std::string_view gemm = is_gemm1 ? "gemm1" : "gemm2";
  const auto& t = k.tile;
  const auto& pl = k.pipeline;
  const auto& l = k.launch;
  const bool ws = s.ws, pp = s.pp, ws_split_n = s.ws_split_n;
  const std::string& sched = s.name;
  if (t.block_k != 64) {
    return reject(gemm, "tile.block_k = " + std::to_string(t.block_k) + " with schedule " + sched +
                            " (wgmma); use 64 (one 128-byte swizzle atom)");
  }
  const bool ws256 = ws && !pp && t.block_m == 256;
  if (t.block_m != 64 && t.block_m != 128 && !ws256 && !s.ws192) {
    return reject(gemm, "tile.block_m = " + std::to_string(t.block_m) + " with schedule " + sched +
                            " (wgmma); use 64 or 128" + (ws && !pp ? " (or 192, 256)" : ""));
  }
  // block_m 192: three warpgroups of 64 rows each, a warpgroup of padding idles.
  if (s.ws192 && (pl.num_warps != 12 || pl.split_k != 1 || l.cluster_m != 1 || l.cluster_n != 1)) {
    return reject(gemm,
                  "tile.block_m = 192 with schedule tma_ws takes num_warps 12 (three "
                  "warpgroups of 64 rows), split_k 1 and cluster 1x1; saw num_warps " +
                      std::to_string(pl.num_warps) + ", split_k " + std::to_string(pl.split_k) +
                      ", cluster " + std::to_string(l.cluster_m) + "x" +
                      std::to_string(l.cluster_n));
  }
  // block_m 256: two warpgroups of two 64-row halves each, padding halves skipped.
  if (ws256 && (pl.num_warps != 8 || pl.split_k != 1 || l.cluster_m != 1)) {
    return reject(gemm,
                  "tile.block_m = 256 with schedule tma_ws takes num_warps 8 (two "
                  "warpgroups of 128 rows), split_k 1 and cluster_m 1; saw num_warps " +
                      std::to_string(pl.num_warps) + ", split_k " + std::to_string(pl.split_k) +
                      ", cluster_m " + std::to_string(l.cluster_m));
  }
  if (pl.num_stages < (ws ? 2 : 3)) {
    return reject(gemm, "pipeline.num_stages = " + std::to_string(pl.num_stages) +
                            " with schedule " + sched +
                            (ws ? "; use 2..8" : "; use 3..8 (two tiles stay in flight)"));
  }
  if (pp && pl.num_warps != 8) {
    return reject(gemm, "pipeline.num_warps = " + std::to_string(pl.num_warps) +
                            " with schedule pingpong; use 8 (two MMA warpgroups on alternate "
                            "tiles; the producer warpgroup is not counted)");
  }
  if (!pp && !ws256 && !s.ws192 && pl.num_warps != t.block_m / 16 && !ws_split_n) {
    return reject(
        gemm, "pipeline.num_warps = " + std::to_string(pl.num_warps) + " with schedule " + sched +
                  " needs one MMA warpgroup per 64 rows; use " + std::to_string(t.block_m / 16) +
                  (!ws               ? ""
                   : t.block_m == 64 ? " (or 8: two warpgroups split block_n; the producer "
                                       "warpgroup is not counted)"
                                     : " (the producer warpgroup is not counted)"));
  }
  if (is_gemm1 && core::is_gated(p.activation) && t.block_n > (ws_split_n ? 256 : 128)) {
    return reject(gemm, "tile.block_n = " + std::to_string(t.block_n) + " with schedule " + sched +
                            "; gated GEMM1 takes 32..128 per warpgroup (" +
                            (ws_split_n ? "256" : "128") + " here)");
  }
  return core::Status::Ok();
}

/// The warp layout: the most square warp tile whose sides are multiples of 16 (mma.sync), or one
/// warpgroup per 64 rows (wgmma).
core::Result<GemmGeometry> warp_layout(core::MoeProblem const& p, core::KernelConfig const& k,
                                       bool is_gemm1, ScheduleKind const& s) {
  const std::string_view gemm = is_gemm1 ? "gemm1" : "gemm2";
  const auto& t = k.tile;
  const auto& pl = k.pipeline;
  const auto& l = k.launch;
  const bool ws = s.ws, pp = s.pp, ws_split_n = s.ws_split_n, wgmma = s.coop;
  if (l.num_threads != 0) {
    return reject(gemm, "launch.num_threads = " + std::to_string(l.num_threads) +
                            " is a cpu-family knob; use 0");
  }
  const int warps = pl.num_warps;
  if ((!is_pow2(warps) || warps > 16) && !(s.ws192 && warps == 12)) {
    return reject(gemm, "pipeline.num_warps = " + std::to_string(warps) +
                            " is not 1, 2, 4, 8 or 16 (12: tma_ws at block_m 192)");
  }
  // Warp layout: the most square warp tile whose sides are multiples of 16.
  GemmGeometry g;
  g.block_m = t.block_m;
  g.block_n = t.block_n;
  g.block_k = t.block_k;
  g.stages = pl.num_stages;
  g.group_m = t.group_m;
  g.gated = is_gemm1 && core::is_gated(p.activation);
  g.mma = ws ? 2 : (wgmma ? 1 : 0);
  g.split_k = pl.split_k;
  g.cluster_m = l.cluster_m;
  g.cluster_n = l.cluster_n;
  double best = 1e9;
  bool found = false;
  for (int wm = 1; wm <= warps && !wgmma; wm *= 2) {
    const int wn = warps / wm;
    if (t.block_m % wm || t.block_n % wn) continue;
    const int tm = t.block_m / wm, tn = t.block_n / wn;
    if (tm < 16 || tm % 16 || tn < 16 || tn % 16) continue;
    const double score = std::fabs(std::log2(static_cast<double>(tm) / tn));
    if (score < best - 1e-9 || (std::fabs(score - best) < 1e-9 && wm > g.warps_m)) {
      best = score;
      g.warps_m = wm;
      g.warps_n = wn;
      found = true;
    }
  }
  if (wgmma) {
    g.warps_m = pp ? 4 : t.block_m == 256 ? 8 : t.block_m / 16;
    g.warps_n = ws_split_n ? 2 : 1;
    g.pingpong = pp;
    found = true;
  }
  if (!found) {
    return reject(gemm, "pipeline.num_warps = " + std::to_string(warps) + " cannot tile " +
                            std::to_string(t.block_m) + "x" + std::to_string(t.block_n) +
                            " with warp tiles of at least 16x16; use fewer warps or a larger tile");
  }
  return g;
}

/// Accumulator registers and shared memory of the derived geometry.
core::Status check_resources(GemmGeometry const& g, core::KernelConfig const& k, bool is_gemm1,
                             ScheduleKind const& s) {
  const std::string_view gemm = is_gemm1 ? "gemm1" : "gemm2";
  const auto& t = k.tile;
  const int warps = k.pipeline.num_warps;
  const bool ws = s.ws, pp = s.pp, wgmma = s.coop;
  // tma_ws consumers run at 232 registers (setmaxnreg) when there are two of them, at 152 when
  // there are three (block_m 192), where the accumulators stay at <= 96.
  const int reg_budget = (ws ? (g.threads() == 384   ? 224 - 40
                                : g.threads() == 512 ? 96
                                                     : std::min(255, 65536 / g.threads()) - 40)
                             : std::min(255, 65536 / g.threads()) - (wgmma ? 40 : 48));
  if (g.acc_registers() > reg_budget) {
    return reject(gemm, "tile " + std::to_string(t.block_m) + "x" + std::to_string(t.block_n) +
                            " needs " + std::to_string(g.acc_registers()) +
                            " accumulator registers per thread with " + std::to_string(warps) +
                            " warps, over the budget of " + std::to_string(reg_budget) +
                            "; use more warps or a smaller tile");
  }
  if (ws && t.block_m == 256 && g.acc_registers() > 128) {
    return reject(gemm, "tile 256x" + std::to_string(t.block_n) + " with schedule tma_ws needs " +
                            std::to_string(g.acc_registers()) +
                            " accumulator registers per thread (128 rows per warpgroup), over "
                            "128; use block_n <= 128 (<= 64 for gated GEMM1)");
  }
  if (pp && g.acc_registers() > 128) {
    return reject(gemm, "tile " + std::to_string(t.block_m) + "x" + std::to_string(t.block_n) +
                            " with schedule pingpong needs " + std::to_string(g.acc_registers()) +
                            " accumulator registers per thread (one warpgroup holds the whole "
                            "tile), over 128; use block_m 64 or a narrower block_n");
  }
  const int smem = g.smem_bytes() + (ws ? g.stages * 16 : g.block_m * 12);
  if (smem > kSm90MaxSmemBytes) {
    return reject(gemm, "needs " + std::to_string(smem) + " bytes of shared memory (" +
                            std::to_string(g.stages) + " stages), over the sm_90 limit of " +
                            std::to_string(kSm90MaxSmemBytes) +
                            "; use fewer stages or a smaller tile");
  }
  return core::Status::Ok();
}

}  // namespace

core::Result<GemmGeometry> gemm_geometry(core::MoeProblem const& p, core::KernelConfig const& k,
                                         bool is_gemm1) {
  if (p.quant != core::Quant::kNone) return fp8_gemm_geometry(p, k, is_gemm1);
  if (is_swap_ws(k)) return swap_geometry(p, k, is_gemm1);
  if (k.launch.swap_ab) return decode_geometry(p, k, is_gemm1);
  const ScheduleKind s = schedule_kind(k);
  MOETUNE_RETURN_IF_ERROR(check_tile(p, k, is_gemm1, s));
  MOETUNE_RETURN_IF_ERROR(
      check_pipeline(k, is_gemm1, is_gemm1 ? p.hidden_size : p.intermediate_size, s));
  if (s.coop) MOETUNE_RETURN_IF_ERROR(check_wgmma(p, k, is_gemm1, s));
  auto g = warp_layout(p, k, is_gemm1, s);
  if (!g.ok()) return g;
  MOETUNE_RETURN_IF_ERROR(check_resources(*g, k, is_gemm1, s));
  return g;
}

namespace {

/// Without the wgmma_mainloop fast path only schedule auto (mma.sync, decode) runs.
core::Status check_wgmma_lever(core::MoeConfig const& c, FastPaths const& fast_paths) {
  if (fast_paths.wgmma_mainloop) return core::Status::Ok();
  for (auto const* k : {&c.gemm1, &c.gemm2}) {
    if (k->launch.schedule == core::Schedule::kCooperative ||
        k->launch.schedule == core::Schedule::kTmaWarpSpecialized ||
        k->launch.schedule == core::Schedule::kPingpong) {
      return core::make_error(
          ErrorCode::kUnsupported, "sm90_gather",
          std::string(k == &c.gemm1 ? "gemm1" : "gemm2") +
              ".launch.schedule = " + std::string(core::to_string(k->launch.schedule)) +
              " needs the wgmma_mainloop fast path, which is off here; use schedule auto or "
              "turn the lever on");
    }
  }
  return core::Status::Ok();
}

/// The problem's limits that hold for every config: bf16, E <= 1024, K a multiple of 8.
core::Status check_bf16_problem(core::MoeProblem const& p) {
  MOETUNE_RETURN_IF_ERROR(core::validate(p));
  if (p.dtype != core::DType::kBf16) {
    return core::make_error(ErrorCode::kUnsupported, "sm90_gather",
                            "dtype " + std::string(core::to_string(p.dtype)) +
                                " is not implemented by sm90_gather v1; use bf16");
  }
  if (p.num_experts > 1024) {
    return core::make_error(
        ErrorCode::kUnsupported, "sm90_gather",
        "E = " + std::to_string(p.num_experts) + " exceeds the align kernel's 1024 experts");
  }
  if (p.hidden_size % 8 != 0) {
    return core::make_error(
        ErrorCode::kUnsupported, "sm90_gather",
        "K = " + std::to_string(p.hidden_size) + " is not a multiple of 8 (16-byte combine)");
  }
  return core::Status::Ok();
}

/// Which GEMM1 and GEMM2 kernels may run together: the align step's block_m, and decode with
/// decode only.
core::Status check_gemm_pair(core::MoeConfig const& c) {
  // Both GEMMs read the align step's padding (to GEMM2's block_m). A GEMM1 of tma_ws 64 or 128
  // rows (no cluster) may walk GEMM2's 256-row blocks in sub-blocks.
  const bool sub_blocks = c.gemm2.tile.block_m == 256 && c.gemm1.tile.block_m < 256 &&
                          (c.gemm1.tile.block_m == 64 || c.gemm1.tile.block_m == 128) &&
                          c.gemm1.launch.schedule == core::Schedule::kTmaWarpSpecialized &&
                          c.gemm1.launch.cluster_m == 1 && !c.gemm1.launch.swap_ab;
  if (c.gemm1.tile.block_m != c.gemm2.tile.block_m && !sub_blocks) {
    return core::make_error(
        ErrorCode::kUnsupported, "sm90_gather",
        "gemm1.tile.block_m = " + std::to_string(c.gemm1.tile.block_m) +
            " differs from gemm2.tile.block_m = " + std::to_string(c.gemm2.tile.block_m) +
            "; both GEMMs read the align step's padding, so they must be equal (or GEMM2 256 "
            "with a tma_ws GEMM1 of 64 or 128 rows and cluster 1x1)");
  }
  // The decode kernels (swap_ab, schedule auto) pair only with each other; the swap-AB wgmma
  // kernel (swap_ab, schedule tma_ws) runs on the align path beside any kernel of its block_m.
  if (is_decode(c.gemm1) != is_decode(c.gemm2)) {
    auto name = [](core::KernelConfig const& k) {
      return k.launch.swap_ab
                 ? "true with schedule " + std::string(core::to_string(k.launch.schedule))
                 : std::string("false");
    };
    return core::make_error(
        ErrorCode::kUnsupported, "sm90_gather",
        "gemm1.launch.swap_ab = " + name(c.gemm1) + " but gemm2.launch.swap_ab = " + name(c.gemm2) +
            "; the decode GEMM1 (swap_ab, schedule auto) writes h in pair order, which only the "
            "decode GEMM2 reads: set both or neither (swap_ab with schedule tma_ws is the swap-AB "
            "wgmma kernel, which pairs with any align-path kernel)");
  }
  return core::Status::Ok();
}

}  // namespace

core::Status sm90_can_implement(core::MoeProblem const& p, core::MoeConfig const& c,
                                FastPaths const& fast_paths) {
  if (p.quant != core::Quant::kNone) return fp8_can_implement(p, c);
  MOETUNE_RETURN_IF_ERROR(check_wgmma_lever(c, fast_paths));
  MOETUNE_RETURN_IF_ERROR(check_bf16_problem(p));
  MOETUNE_RETURN_IF_ERROR(check_gemm_pair(c));
  auto g1 = gemm_geometry(p, c.gemm1, true);
  if (!g1.ok()) return g1.error();
  auto g2 = gemm_geometry(p, c.gemm2, false);
  if (!g2.ok()) return g2.error();
  return core::Status::Ok();
}

std::string gemm_name_expr(GemmGeometry const& g, int act, bool is_gemm1) {
  if (g.fp8) return fp8_gemm_name_expr(g, act, is_gemm1);
  if (g.decode) {
    const std::string tail = std::to_string(g.block_n) + "," + std::to_string(g.warps_m) + "," +
                             std::to_string(g.stages) + "," + std::to_string(g.block_k / 256) + ">";
    if (!is_gemm1) return "&moetune_dev::moe_decode_gemm2_kernel<" + tail;
    return "&moetune_dev::moe_decode_gemm1_kernel<" + std::to_string(act) + "," +
           (g.gated ? "true" : "false") + "," + std::to_string(g.block_m) + "," + tail;
  }
  if (g.swap) {
    return "&moetune_dev::moe_swap_gemm_kernel<" + std::to_string(g.block_m) + "," +
           std::to_string(g.warps_m / 4) + "," + std::to_string(g.stages) + "," +
           std::to_string(g.group_m) + "," + std::to_string(is_gemm1 ? act : 0) + "," +
           (is_gemm1 ? "true" : "false") + ">";
  }
  if (g.mma == 2) {
    return "&moetune_dev::moe_ws_gemm_kernel<" + std::to_string(g.block_m) + "," +
           std::to_string(g.block_n) + "," + std::to_string(g.stages) + "," +
           std::to_string(g.group_m) + "," + std::to_string(is_gemm1 ? act : 0) + "," +
           (is_gemm1 ? "true" : "false") + "," + std::to_string(g.warps_n) + "," +
           (g.split_k > 1 ? "true" : "false") + "," + (g.pingpong ? "true" : "false") + "," +
           std::to_string(g.cluster_m) +
           (g.cluster_n > 1 ? "," + std::to_string(g.cluster_n) : std::string()) + ">";
  }
  return "&moetune_dev::moe_gemm_kernel<" + std::to_string(g.block_m) + "," +
         std::to_string(g.block_n) + "," + std::to_string(g.block_k) + "," +
         std::to_string(g.warps_m) + "," + std::to_string(g.warps_n) + "," +
         std::to_string(g.stages) + "," + std::to_string(g.group_m) + "," +
         std::to_string(is_gemm1 ? act : 0) + "," + (is_gemm1 ? "true" : "false") + "," +
         std::to_string(g.mma) + ">";
}

}  // namespace moetune::kernels::cuda
