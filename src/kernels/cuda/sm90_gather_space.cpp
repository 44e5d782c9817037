// The tuning space of the sm90_gather family (sm90_gather_space.hpp): block_m groups, each GEMM's
// candidates per regime of M (mma.sync, cooperative, tma_ws with CTA pairs, pingpong GEMM2,
// split-K GEMM2), the groups of 256 and 192 (both with swap-AB GEMM1s) and the decode kernels.
// Host-only: CI lists it without a GPU.
#include "kernels/cuda/sm90_gather_space.hpp"

#include <algorithm>
#include <utility>

#include "kernels/cuda/sm90_fp8_geometry.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_swap_geometry.hpp"

namespace moetune::kernels::cuda {

std::vector<int> sm90_block_m_candidates(core::MoeProblem const& p) {
  const double per_expert = pairs_per_expert(p);
  if (per_expert <= 2) return {16, 64};  // 64: wgmma tiles sized to spread weights over all SMs
  // No block sized to the experts' pairs (e.g. 48 at 32 +- 5 pairs): mma.sync runs it and tables
  // may name it, but on the H200 it lost to the best power of two at all six buckets it was offered
  // at, by 2-22%, in 28% of their tunes' measurements.
  if (per_expert <= 16) return {16, 32};
  if (per_expert <= 48) return {32, 64};
  return {64, 128};
}

namespace {

/// mma.sync tiles (schedule auto) below the compute-bound regime; none at decode block_m 64.
void add_mma_sync(core::MoeProblem const& p, int block_m, bool is_gemm1, bool ws_only,
                  std::vector<core::KernelConfig>& out) {
  struct Shape {
    int bn, warps;
  };
  std::vector<Shape> shapes;
  if ((pairs_per_expert(p) <= 2 && block_m >= 64) || ws_only) {
    // Decode at block_m 64: only the wgmma tiles below (mma.sync would waste the A tile).
  } else if (block_m <= 48) {
    shapes = {{16, 1}, {32, 2}, {64, 4}, {128, 4}, {128, 8}};
  } else if (block_m <= 96) {
    shapes = {{64, 4}, {128, 4}, {128, 8}, {256, 8}};
  } else {
    shapes = {{64, 4}, {128, 8}, {256, 8}};
  }
  for (auto s : shapes) {
    for (int bk : {64, 128}) {
      for (int stages : {3, 4, 5}) {
        for (int gm : {1, 8}) {
          core::KernelConfig k;
          k.tile = {.block_m = block_m, .block_n = s.bn, .block_k = bk, .group_m = gm};
          k.pipeline = {.num_warps = s.warps, .num_stages = stages, .split_k = 1};
          if (gemm_geometry(p, k, is_gemm1).ok()) out.push_back(k);
        }
      }
    }
  }
}

/// wgmma block_n widths: powers of two, plus the largest multiple of 8 that divides the output
/// width exactly; at decode M narrow tiles, so experts_hit x n_tiles lands near a multiple of the
/// SM count.
std::vector<int> wgmma_widths(core::MoeProblem const& p, bool is_gemm1, int max_bn, bool tiny) {
  if (tiny) return {32, 48, 64, 96, 128};
  std::vector<int> widths = {64, 128, 256};
  const int64_t n_dim = is_gemm1 ? p.intermediate_size : p.hidden_size;
  for (int bn = max_bn; bn >= max_bn * 5 / 8; bn -= 8) {
    if (n_dim % bn == 0) {
      if ((bn & (bn - 1)) != 0) widths.push_back(bn);
      break;
    }
  }
  return widths;
}

/// cp.async + wgmma (schedule cooperative): one warpgroup per 64 rows, block_k 64; at decode M
/// deep pipelines keep bytes in flight.
void add_cooperative(core::MoeProblem const& p, int block_m, bool is_gemm1,
                     std::vector<int> const& widths, int max_bn, bool tiny,
                     std::vector<core::KernelConfig>& out) {
  std::vector<int> stage_list = tiny ? std::vector<int>{4, 6, 8} : std::vector<int>{3, 4, 5};
  for (int bn : widths) {
    if (bn > max_bn) continue;
    for (int stages : stage_list) {
      for (int gm : {1, 8}) {
        core::KernelConfig k;
        k.tile = {.block_m = block_m, .block_n = bn, .block_k = 64, .group_m = gm};
        k.pipeline = {.num_warps = block_m / 16, .num_stages = stages, .split_k = 1};
        k.launch.schedule = core::Schedule::kCooperative;
        if (gemm_geometry(p, k, is_gemm1).ok()) out.push_back(k);
      }
    }
  }
}

/// TMA + warp-specialised persistent wgmma (schedule tma_ws): the compute-bound regime. Stages
/// 4-6 (fewer starve the producer; the deepest that fits is usually best) and the group_m 8
/// raster (weights reused from L2 across M-blocks); at block_m 64 also two consumer warpgroups
/// splitting block_n (less padding at mid M).
void add_tma_ws(core::MoeProblem const& p, int block_m, bool is_gemm1,
                std::vector<int> const& widths, int max_bn, std::vector<core::KernelConfig>& out) {
  for (int bn : widths) {
    if (bn > max_bn) continue;
    for (int stages : {4, 5, 6}) {
      core::KernelConfig k;
      k.tile = {.block_m = block_m, .block_n = bn, .block_k = 64, .group_m = 8};
      k.pipeline = {.num_warps = block_m / 16, .num_stages = stages, .split_k = 1};
      k.launch.schedule = core::Schedule::kTmaWarpSpecialized;
      if (gemm_geometry(p, k, is_gemm1).ok()) out.push_back(k);
    }
  }
  if (block_m != 64) return;
  for (int bn : widths) {
    if (bn > max_bn) continue;
    for (int stages : {3, 4}) {
      core::KernelConfig k;
      k.tile = {.block_m = 64, .block_n = 2 * bn, .block_k = 64, .group_m = 8};
      k.pipeline = {.num_warps = 8, .num_stages = stages, .split_k = 1};
      k.launch.schedule = core::Schedule::kTmaWarpSpecialized;
      if (gemm_geometry(p, k, is_gemm1).ok()) out.push_back(k);
    }
  }
}

/// CTA pairs (cluster 2x1: the weight tile multicast to both m-blocks of one expert) of the tma_ws
/// configs so far at stages 4 and 5, where an expert has at least two 128-row blocks. Measured on
/// H200: GEMM1 on pairs 2-3% faster at S3 M 1024-4096 in every run, parity within the run-to-run
/// spread at S1 and S2.
/// NOTE: GEMM2 pairs over n-tiles (cluster 1x2, the h rows multicast) are not offered: correct on
/// the H200 but slower or equal at every point of an A/B against the shipped tables (S1 M=4096
/// GEMM2 516 -> 553 us, S3 M=512 299 -> 315, S2 M=2048 as tma_ws 155 -> 186 against pingpong).
void add_cluster_pairs(core::MoeProblem const& p, int block_m, bool is_gemm1,
                       std::vector<core::KernelConfig>& out) {
  if (block_m != 128 || pairs_per_expert(p) < 256) return;
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    if (out[i].launch.schedule != core::Schedule::kTmaWarpSpecialized ||
        out[i].pipeline.num_stages > 5) {
      continue;
    }
    core::KernelConfig k = out[i];
    k.launch.cluster_m = 2;
    if (gemm_geometry(p, k, is_gemm1).ok()) out.push_back(k);
  }
}

/// Pingpong GEMM2 at block_m 128 x 128 (two consumer warpgroups on alternate whole tiles: stores
/// under the other's main loop). Measured on H200: in the layer it beat tma_ws GEMM2 at S2 (K =
/// 768) by 1.6-4.2% at M 2048-16384 in two A/B pairs, and lost 3-6% at S1 16384 and S3; pingpong
/// GEMM1 lost at every point alone (S1 16384 2884 vs 1679 us, S3 14865 vs 12606 us: a warpgroup's
/// own 64- or 128-row tile reloads the weight tile more often) and 64-row pingpong GEMM2 won alone
/// but lost in the layer (S1 2048 949 vs 773 us).
void add_pingpong(core::MoeProblem const& p, int block_m, bool is_gemm1,
                  std::vector<core::KernelConfig>& out) {
  if (is_gemm1 || block_m != 128) return;
  for (int stages : {4, 5}) {
    core::KernelConfig k;
    k.tile = {.block_m = 128, .block_n = 128, .block_k = 64, .group_m = 8};
    k.pipeline = {.num_warps = 8, .num_stages = stages, .split_k = 1};
    k.launch.schedule = core::Schedule::kPingpong;
    if (gemm_geometry(p, k, false).ok()) out.push_back(k);
  }
}

/// GEMM2 split over K when its output tiles fill few waves of SMs (S3's deep I = 14336 at mid M:
/// 12 blocks x 16 tiles = 192 tiles on 132 SMs): each single-CTA tma_ws GEMM2 so far, split 2, 4.
void add_split_k(core::MoeProblem const& p, int block_m, bool is_gemm1,
                 std::vector<core::KernelConfig>& out) {
  if (is_gemm1) return;
  const double est_tiles =
      (static_cast<double>(p.num_tokens) * p.top_k / block_m + static_cast<double>(p.num_experts)) *
      static_cast<double>(p.hidden_size) / 256.0;
  if (est_tiles >= 4.0 * 132) return;
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    if (out[i].launch.schedule != core::Schedule::kTmaWarpSpecialized ||
        out[i].launch.cluster_m > 1) {
      continue;  // split-K runs on single CTAs
    }
    for (int split : {2, 4}) {
      core::KernelConfig k = out[i];
      k.pipeline.split_k = split;
      if (gemm_geometry(p, k, false).ok()) out.push_back(k);
    }
  }
}

/// Swap-AB GEMMs (launch.swap_ab with schedule tma_ws, sm90_swap_kernel.cuh: block_m pairs per
/// tile as wgmma's N; num_warps 8 or 12: two or three consumer warpgroups of 64 weight rows) at
/// `stages`, group_m 1 and 8, appended to `out` where the geometry takes them.
void add_swap_gemms(core::MoeProblem const& p, int block_m, int warps, int stages, bool is_gemm1,
                    std::vector<core::KernelConfig>& out) {
  for (int gm : {1, 8}) {
    core::KernelConfig k;
    k.tile = {.block_m = block_m,
              .block_n = swap_block_n(warps, is_gemm1 && core::is_gated(p.activation)),
              .block_k = 64,
              .group_m = gm};
    k.pipeline = {.num_warps = warps, .num_stages = stages, .split_k = 1};
    k.launch.swap_ab = true;
    k.launch.schedule = core::Schedule::kTmaWarpSpecialized;
    if (gemm_geometry(p, k, is_gemm1).ok()) out.push_back(k);
  }
}

/// GEMM2 at 256 rows under a tma_ws GEMM1 of 128-row sub-blocks, where an expert's rows fill one to
/// three 128-row blocks: a 256-row GEMM2 tile multiplies only its 64-row halves with rows, and an
/// expert of up to 256 pairs loads each weight tile once. Measured on the H200 (moetune ab, 4
/// rounds x 30): 5.2% faster at S3 M=512, 3.9% at S1 M=4096, slower at S1 1024-8192, S2 1024-16384,
/// S3 1024-2048; a tma_ws GEMM1 at 256 rows was 1.5-2.2x slower everywhere (its producer gathers
/// 256 x rows a stage), so it is not searched; a swap-AB GEMM1 at 256 pairs per tile is (below).
void add_group_256(core::MoeProblem const& p, std::vector<core::GemmSpace>& out) {
  const double pe = pairs_per_expert(p);
  if (pe < 96 || pe > 320) return;
  core::GemmSpace s{.block_m = 256};
  for (core::KernelConfig const& k : sm90_gemm_candidates(p, 128, true)) {
    if (k.launch.schedule == core::Schedule::kTmaWarpSpecialized && k.launch.cluster_m == 1) {
      s.gemm1.push_back(k);
    }
  }
  // GEMM1 on swap-AB at 256 pairs per tile (two consumer warpgroups, m64 x N256): with its wgmma
  // width chosen per tile it ran at parity with the tma_ws GEMM1 at S1 M=4096 (566.8 vs 567.9 us)
  // and faster at S3 M=1024 (856.1 vs 886.4) in stage times on the H200; the tuner keeps it only
  // where it wins.
  add_swap_gemms(p, 256, 8, 4, true, s.gemm1);
  for (int bn : {64, 128}) {
    for (int stages : {3, 4}) {
      core::KernelConfig k;
      k.tile = {.block_m = 256, .block_n = bn, .block_k = 64, .group_m = 8};
      k.pipeline = {.num_warps = 8, .num_stages = stages, .split_k = 1};
      k.launch.schedule = core::Schedule::kTmaWarpSpecialized;
      if (gemm_geometry(p, k, false).ok()) s.gemm2.push_back(k);
    }
  }
  const size_t tma_ws_gemm2s = s.gemm2.size();
  // GEMM2 on swap-AB at 256 pairs per tile: with the epilogue through shared memory the layer's
  // best GEMM2 at S1 M=4096 (both GEMMs swap-AB: 994 vs 1053 us) and S2 M=2048 (under the tma_ws
  // GEMM1's sub-blocks: 422 vs 428) in a recipe A/B on the H200; slower at S2 M=4096 and S3 M=1024.
  add_swap_gemms(p, 256, 8, 4, false, s.gemm2);
  if (!s.gemm1.empty() && tma_ws_gemm2s > 0) {
    // GEMM2 256 x 128, 4 stages: the last tma_ws one (the swap-AB ones come after it).
    s.base = {.gemm1 = s.gemm1.front(), .gemm2 = s.gemm2[tma_ws_gemm2s - 1]};
    out.push_back(std::move(s));
  }
}

/// Both GEMMs at 192 rows (tma_ws, three warpgroups of 64 rows), where an expert holds 96 to 192
/// pairs: its rows then fit one 192-row tile, where 128-row tiles give about half the experts a
/// nearly empty extra tile that reloads the weight tile (S2 M=2048 and S3 M=512: 128 +- 11 pairs
/// per expert). Accumulators <= 96 registers: gated GEMM1 block_n 64 or 96, others 64..192.
/// Measured on the H200: the layer's best at S3 and Mixtral-8x22B M=512 and gpt-oss-120b M=4096 (p
/// = 128, wide gated I), slower at S2 and Qwen3-235B M=2048, and 1.1-1.4x slower at the points of
/// 64 or 256 pairs per expert it was offered at first (S2 M=1024/4096, S3 and Mixtral-8x22B M=1024,
/// Qwen3-235B M=4096), so the group starts above 96 and ends at 192.
void add_group_192(core::MoeProblem const& p, std::vector<core::GemmSpace>& out) {
  const double pe = pairs_per_expert(p);
  if (pe <= 96 || pe > 192) return;
  core::GemmSpace s{.block_m = 192};
  for (bool is_gemm1 : {true, false}) {
    const bool gated = is_gemm1 && core::is_gated(p.activation);
    const int64_t n_dim = is_gemm1 ? p.intermediate_size : p.hidden_size;
    std::vector<int> widths = gated ? std::vector<int>{64, 96} : std::vector<int>{64, 128, 192};
    for (int bn = 192; bn >= 120 && !gated; bn -= 8) {  // the widest that divides N exactly
      if (n_dim % bn == 0) {
        if (bn != 128 && bn != 192) widths.push_back(bn);
        break;
      }
    }
    for (int bn : widths) {
      for (int stages : {4, 5}) {
        core::KernelConfig k;
        k.tile = {.block_m = 192, .block_n = bn, .block_k = 64, .group_m = 8};
        k.pipeline = {.num_warps = 12, .num_stages = stages, .split_k = 1};
        k.launch.schedule = core::Schedule::kTmaWarpSpecialized;
        if (gemm_geometry(p, k, is_gemm1).ok()) (is_gemm1 ? s.gemm1 : s.gemm2).push_back(k);
      }
    }
  }
  // GEMM1 on swap-AB (sm90_swap_kernel.cuh: the tile's pairs as wgmma's N, 16-column granules), at
  // 192 pairs per tile: the layer's best at S3 M=512 under the 192-row GEMM2 (0.950x in a recipe
  // A/B, 841-855 against 877-893 us in four protocol runs), slower at S1 M=2048 and S2 M=1024/2048,
  // which the tuner then drops.
  add_swap_gemms(p, 192, 12, 4, true, s.gemm1);
  if (!s.gemm1.empty() && !s.gemm2.empty()) {
    // The base GEMM1: the last tma_ws one (the swap-AB ones come after it).
    auto base1 = std::find_if(s.gemm1.rbegin(), s.gemm1.rend(),
                              [](core::KernelConfig const& k) { return !k.launch.swap_ab; });
    s.base = {.gemm1 = base1 != s.gemm1.rend() ? *base1 : s.gemm1.back(), .gemm2 = s.gemm2.back()};
    out.push_back(std::move(s));
  }
}

}  // namespace

std::vector<core::KernelConfig> sm90_gemm_candidates(core::MoeProblem const& p, int block_m,
                                                     bool is_gemm1) {
  std::vector<core::KernelConfig> out;
  // Compute-bound M (>= 96 pairs per expert): the warp-specialised kernels only (tma_ws, and
  // pingpong GEMM2). Every H200 sweep winner from M = 1024 up was tma_ws; the mma.sync and
  // cooperative tiles there only cost the tuner compile and check time.
  const bool ws_only = pairs_per_expert(p) >= 96;
  add_mma_sync(p, block_m, is_gemm1, ws_only, out);
  if (block_m != 64 && block_m != 128) return out;
  const bool tiny = pairs_per_expert(p) <= 2;
  const int max_bn = (is_gemm1 && core::is_gated(p.activation)) ? 128 : 256;
  const std::vector<int> widths = wgmma_widths(p, is_gemm1, max_bn, tiny);
  if (!ws_only) add_cooperative(p, block_m, is_gemm1, widths, max_bn, tiny, out);
  if (tiny) return out;
  add_tma_ws(p, block_m, is_gemm1, widths, max_bn, out);
  add_cluster_pairs(p, block_m, is_gemm1, out);
  add_pingpong(p, block_m, is_gemm1, out);
  add_split_k(p, block_m, is_gemm1, out);
  return out;
}

core::KernelConfig sm90_decode_base(core::MoeProblem const& p) {
  core::KernelConfig k;
  k.tile = {.block_m = decode_block_m(p), .block_n = 8, .block_k = 256, .group_m = 1};
  k.pipeline = {.num_warps = 4, .num_stages = 2, .split_k = 1};
  k.launch.swap_ab = true;
  return k;
}

std::vector<core::KernelConfig> sm90_decode_candidates(core::MoeProblem const& p, bool is_gemm1) {
  std::vector<core::KernelConfig> out;
  if (pairs_per_expert(p) > 2) return out;  // beyond decode: the GEMM kernels reuse weights
  for (int bn : {4, 8, 16, 32}) {
    for (int warps : {4, 8}) {
      for (int rows : {1, 2, 4}) {
        for (int bk : {256, 512, 1024, 2048}) {
          if (rows * bk > 2048) continue;  // loads in flight per lane: rows x block_k / 256 <= 8
          core::KernelConfig k = sm90_decode_base(p);
          k.tile.block_n = bn;
          k.tile.block_k = bk;
          k.pipeline.num_warps = warps;
          k.pipeline.num_stages = rows;
          if (gemm_geometry(p, k, is_gemm1).ok()) out.push_back(k);
        }
      }
    }
  }
  return out;
}

std::vector<core::MoeConfig> sm90_joint_search_space(core::MoeProblem const& p) {
  if (p.quant != core::Quant::kNone) return fp8_search_space(p);
  std::vector<core::MoeConfig> out;
  for (int bm : sm90_block_m_candidates(p)) {
    auto c1 = sm90_gemm_candidates(p, bm, true);
    auto c2 = sm90_gemm_candidates(p, bm, false);
    // Joint space: pair each GEMM1 candidate with the GEMM2 candidate of the same shape when
    // there is one (the tuner tunes the GEMMs separately; this is the plain-sweep space).
    for (auto const& a : c1) {
      for (auto const& b : c2) {
        if (a == b) out.push_back({.gemm1 = a, .gemm2 = b});
      }
    }
  }
  for (auto const& k : sm90_decode_candidates(p, true)) {
    if (gemm_geometry(p, k, false).ok()) out.push_back({.gemm1 = k, .gemm2 = k});
  }
  return out;
}

std::vector<core::GemmSpace> sm90_gemm_search_space(core::MoeProblem const& p) {
  // fp8: the default per-GEMM split of the joint space (Backend::gemm_search_space's rule).
  if (p.quant != core::Quant::kNone) return core::gemm_spaces_of(fp8_search_space(p));
  std::vector<core::GemmSpace> out;
  for (int bm : sm90_block_m_candidates(p)) {
    core::GemmSpace s{.block_m = bm,
                      .gemm1 = sm90_gemm_candidates(p, bm, true),
                      .gemm2 = sm90_gemm_candidates(p, bm, false)};
    if (s.gemm1.empty() || s.gemm2.empty()) continue;
    // The base GEMM2 does not depend on M: every bucket's stage 1 at this block_m then compiles
    // the same modules (GEMM1 candidate + this GEMM2), once, into the cubin cache.
    core::KernelConfig b2;
    b2.tile = {.block_m = bm, .block_n = 64, .block_k = 64, .group_m = 8};
    b2.pipeline = {.num_warps = 4, .num_stages = 4, .split_k = 1};
    if (!gemm_geometry(p, b2, false).ok()) b2 = s.gemm2.front();
    s.base = {.gemm1 = s.gemm1.front(), .gemm2 = b2};
    // GEMM2 on swap-AB at 128 pairs per tile (three consumer warpgroups, 5 stages) where an expert
    // holds 48 to 160 pairs: with the epilogue through shared memory the layer's best GEMM2 at S1
    // M=2048 (728 vs 746 us) and S2 M=1024 (341 vs 344) in a recipe A/B on the H200.
    const double pe = pairs_per_expert(p);
    if (bm == 128 && pe >= 48 && pe <= 160) add_swap_gemms(p, 128, 12, 5, false, s.gemm2);
    out.push_back(std::move(s));
  }
  add_group_192(p, out);
  add_group_256(p, out);
  core::GemmSpace d{.block_m = decode_block_m(p),
                    .gemm1 = sm90_decode_candidates(p, true),
                    .gemm2 = sm90_decode_candidates(p, false)};
  if (!d.gemm1.empty() && !d.gemm2.empty()) {
    d.base = {.gemm1 = sm90_decode_base(p), .gemm2 = sm90_decode_base(p)};
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace moetune::kernels::cuda
