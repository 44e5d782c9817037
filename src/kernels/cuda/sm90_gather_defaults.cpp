// sm90_default_config and sm90_batch_invariant_config (sm90_gather_defaults.hpp). Covered by
// tests/kernels/cuda/jit_default_rule_test.cpp (each band's choice and the fall-through; the
// batch-invariant configs of one family at every M),
// tests/kernels/cuda/jit_geometry_test.cpp (every regime's default is implementable),
// tests/kernels/cuda/jit_compile_test.cpp (the defaults compile, H1-H5 too) and
// tests/kernels/cuda/sm90_gather_test.cpp (defaults on the device).
#include "kernels/cuda/sm90_gather_defaults.hpp"

#include <string>
#include <vector>

#include "kernels/cuda/sm90_fp8_geometry.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"

namespace moetune::kernels::cuda {

// Default rule, per regime of pairs per expert p = M * top_k / E. Fitted on H200 to every
// candidate the per-GEMM sweep timed on eight shapes, S1-S3 and H1-H5 (its whole fitting set: none
// of them is held out) (bench/fit_defaults.py over the sweep's --sweep-log): each
// regime's pair is the one with the lowest geomean of (GEMM1 + GEMM2) / (best GEMM1 + best GEMM2)
// over the points in it; over the 82 points outside decode that geomean went from 1.065 (the
// rule before) to 1.027, worst point 1.29 -> 1.10. "BK" = 128 where the GEMM's reduction size
// divides it, else 64 with 5 stages.
//   M <= 4 and p <= 0.5: the decode kernels (launch.swap_ab), GEMM1 n4 k512 4 warps 1 row, GEMM2
//             n4 k512 8 warps 1 row (the decode candidates' fit over the 14 points there: GEMM1
//             n4 1.039 against n8's 1.090, GEMM2 1.027; at p = 1, S3 and Mixtral-8x22B at M = 4,
//             mma.sync below ran the layer 8-10% faster than decode)
//   p <= 1    GEMM1 16x64xBK group 8, 4 warps, 3 stages; GEMM2 16x128xBK group 8, 4 warps, 3 stages
//             (16x32x64 on 2 warps lost 7% of the layer at Mixtral-8x22B M = 4, 4% at S3 M = 4)
//   p <= 4    GEMM1 as above; GEMM2 16x64xBK group 8, 4 warps, 5 stages
//   p <= 12   both 16x64x64, 4 warps, 5 stages (the fit's runner-up by 0.1% of geomean, 1.03
//             against 1.10 at its worst point; with GEMM1 16x64x128 the layer lost 9% at M = 64 of
//             the E = 40 shape in the A/B)
//   p <= 24   GEMM1 32x128xBK 8 warps 3 stages; GEMM2 32x64xBK 4 warps 4 stages
//   p <= 48   both TMA + warp-specialised wgmma (tma_ws) 64x128x64, one MMA warpgroup, 5 stages
//             (the mma.sync 32/64-row tiles before lost 15-29% here)
//   p > 48    tma_ws 128 rows, GEMM1 block_n 128 (gated) / 256, GEMM2 256, 8 MMA warps, 4 stages,
//             group_m 8; at 96 < p <= 160 GEMM2 at 256 rows x 128 (an expert's rows fit one
//             block: its weight tile is read once and only 64-row granules of padding multiply),
//             and there for a gated GEMM1 with I >= 10 p both GEMMs at 192 rows (three
//             warpgroups of 64; GEMM1 192x96, GEMM2 192x192 where K divides it, else 192x128;
//             4 stages): the sweep's pick at all three such points it timed, Mixtral-8x7B (S3)
//             and Mixtral-8x22B at M = 512 and gpt-oss-120b at M = 4096 (layer 3.6-5% faster),
//             and slower at the three with a narrower I (S2 and Qwen3-235B at M = 2048, where
//             GEMM1's copy of x in sorted order costs more next to the weights); out of sample,
//             DBRX-like M = 512 and DeepSeek-V3-like M = 4096 ran 4-6% faster than the rule
//             before. There GEMM1 runs swap-AB (sm90_swap_kernel.cuh, 192 pairs per tile,
//             group_m 1): the layer 0.948-0.991x the 192-row tma_ws GEMM1 at S3, Mixtral-8x22B
//             and DBRX-like M = 512 and gpt-oss-120b M = 4096, faster in both rounds of a
//             two-build A/B at each; the tma_ws pair stays next in line. The I bound is 10 p, not
//             16 p: at p = 128 the pair ran 0.96-0.97x the rule's layer at Qwen3-235B (I = 1536,
//             the held-out sweep's pick there), DeepSeek-V2-Lite (1408) and DeepSeek-V2-like
//             (1536), 1.03x at S2 (768) and 1.05x at OLMoE (1024).
//   48 < p <= 104, I >= 1024: GEMM2 on swap-AB, 128 pairs x 192 columns, 12 warps, 5 stages
//             (GEMM1 the tma_ws 128-row tile), where its tiles fill the 132 SMs' waves at least as
//             well as the tma_ws GEMM2's 256-column ones, less 0.05 (wave_fill): the layer
//             0.93-0.98x the rule before at S1, Qwen3-235B, gpt-oss-120b and Mixtral-8x22B at
//             p = 64-96; refused by the conditions where it did not win: I = 704 / 768 (the E = 40
//             gelu shape 1.05-1.06x, S2 0.99-1.00x), S3's 176 tiles in two waves (1.04-1.07x),
//             DeepSeek-V2-Lite's 704 tiles (0.99-1.01x)
//   136 < p <= 224, K >= 2048: both GEMMs on swap-AB, 256 pairs per tile, 8 warps, 4 stages (an
//             expert's pairs in one tile: its weights are read once): the layer 0.77-0.98x the
//             rule before at all eight such points of S1-S3 and four held-out models; at K = 1536
//             (the E = 40 gelu shape) 1.26x, so refused there. At p = 128 and 256 it won at one
//             shape and lost at the others, so the band stops short of both.
// A choice the shape or the fast paths refuse (block_n wider than the output, wgmma lever off)
// falls through to the next in the list, ending in mma.sync tiles every shape takes.
namespace {

/// A persistent GEMM of `tiles` equal tiles on the 132 SMs of an H100 SXM / H200: the fraction of
/// its waves' SM slots that hold a tile (1 when the last wave is full).
double wave_fill(int64_t tiles) {
  constexpr int64_t kSms = 132;
  const int64_t waves = (tiles + kSms - 1) / kSms;
  return waves > 0 ? static_cast<double>(tiles) / static_cast<double>(waves * kSms) : 1.0;
}

/// One GEMM's config: tile bm x bn x bk with raster group gm, `warps` warps, `stages` stages,
/// split_k 1, no cluster.
core::KernelConfig kc(int bm, int bn, int bk, int warps, int stages, int gm,
                      core::Schedule schedule = core::Schedule::kAuto) {
  core::KernelConfig k;
  k.tile = {.block_m = bm, .block_n = bn, .block_k = bk, .group_m = gm};
  k.pipeline = {.num_warps = warps, .num_stages = stages, .split_k = 1};
  k.launch.schedule = schedule;
  return k;
}

/// The swap-AB kernel (sm90_swap_kernel.cuh): block_m pairs per tile, 64 weight rows per MMA
/// warpgroup (block_n = those rows, half of them for a gated GEMM1), group_m 1.
core::KernelConfig swap(int bm, int bn, int warps, int stages) {
  core::KernelConfig c = kc(bm, bn, 64, warps, stages, 1, core::Schedule::kTmaWarpSpecialized);
  c.launch.swap_ab = true;
  return c;
}

/// The choices below 48 pairs per expert, in order: the decode kernels at tiny M, then one
/// mma.sync pair per band, or tma_ws 64 at p <= 48.
void small_m_choices(core::MoeProblem const& p, double per_expert,
                     std::vector<core::MoeConfig>& choices) {
  constexpr auto kTw = core::Schedule::kTmaWarpSpecialized;
  if (p.num_tokens <= 4 && per_expert <= 0.5) {
    // Decode kernels: no align or combine launch, weights streamed by CUDA-core dot products.
    core::MoeConfig d{.gemm1 = kc(decode_block_m(p), 4, 512, 4, 1, 1),
                      .gemm2 = kc(decode_block_m(p), 4, 512, 8, 1, 1)};
    d.gemm1.launch.swap_ab = d.gemm2.launch.swap_ab = true;
    choices.push_back(d);  // refused when K or I is not a multiple of 8
  }
  if (per_expert <= 1.0) {
    choices.push_back({.gemm1 = kc(16, 64, 128, 4, 3, 8), .gemm2 = kc(16, 128, 128, 4, 3, 8)});
  } else if (per_expert <= 4.0) {
    choices.push_back({.gemm1 = kc(16, 64, 128, 4, 3, 8), .gemm2 = kc(16, 64, 128, 4, 5, 8)});
  } else if (per_expert <= 12.0) {
    choices.push_back({.gemm1 = kc(16, 64, 64, 4, 5, 1), .gemm2 = kc(16, 64, 64, 4, 5, 1)});
  } else if (per_expert <= 24.0) {
    choices.push_back({.gemm1 = kc(32, 128, 128, 8, 3, 1), .gemm2 = kc(32, 64, 128, 4, 4, 1)});
  } else {
    choices.push_back(
        {.gemm1 = kc(64, 128, 64, 4, 5, 8, kTw), .gemm2 = kc(64, 128, 64, 4, 5, 8, kTw)});
    choices.push_back({.gemm1 = kc(64, 64, 64, 4, 4, 8), .gemm2 = kc(64, 64, 64, 4, 4, 8)});
  }
}

/// The choices above 48 pairs per expert, in order (the bands of the rule above), ending in the
/// tma_ws 128-row pair and mma.sync 128-row tiles.
void large_m_choices(core::MoeProblem const& p, double per_expert,
                     std::vector<core::MoeConfig>& choices) {
  constexpr auto kTw = core::Schedule::kTmaWarpSpecialized;
  const bool gated = core::is_gated(p.activation);
  const int bn1 = gated ? 128 : 256;
  const int64_t hidden = p.hidden_size, experts = p.num_experts;
  // Swap-AB GEMM2 of 128 pairs x 192 output columns (three MMA warpgroups), where its tiles (one
  // align block per expert at this p) fill the waves about as well as 256-column ones.
  if (per_expert <= 104.0 && p.intermediate_size >= 1024 &&
      wave_fill((hidden + 191) / 192 * experts) >=
          wave_fill((hidden + 255) / 256 * experts) - 0.05) {
    choices.push_back({.gemm1 = kc(128, bn1, 64, 8, 4, 8, kTw), .gemm2 = swap(128, 192, 12, 5)});
  }
  if (per_expert > 96.0 && per_expert <= 160.0 && gated &&
      static_cast<double>(p.intermediate_size) >= 10.0 * per_expert) {
    const int bn2 = hidden % 192 == 0 ? 192 : 128;
    choices.push_back({.gemm1 = swap(192, 96, 12, 4), .gemm2 = kc(192, bn2, 64, 12, 4, 8, kTw)});
    choices.push_back(
        {.gemm1 = kc(192, 96, 64, 12, 4, 8, kTw), .gemm2 = kc(192, bn2, 64, 12, 4, 8, kTw)});
  }
  // Both GEMMs on swap-AB, 256 pairs per tile: an expert's pairs in one tile, its weights read
  // once, where GEMM1's reduction (K) is long enough to carry the tile's epilogue.
  if (per_expert > 136.0 && per_expert <= 224.0 && hidden >= 2048) {
    choices.push_back({.gemm1 = swap(256, gated ? 64 : 128, 8, 4), .gemm2 = swap(256, 128, 8, 4)});
  }
  if (per_expert > 96.0 && per_expert <= 160.0) {
    choices.push_back(
        {.gemm1 = kc(128, bn1, 64, 8, 4, 8, kTw), .gemm2 = kc(256, 128, 64, 8, 4, 8, kTw)});
  }
  choices.push_back(
      {.gemm1 = kc(128, bn1, 64, 8, 4, 8, kTw), .gemm2 = kc(128, 256, 64, 8, 4, 8, kTw)});
  // Without the wgmma main loop (lever off) or for narrow outputs: mma.sync 128-row tiles.
  choices.push_back({.gemm1 = kc(128, 128, 64, 8, 4, 8), .gemm2 = kc(128, 128, 64, 8, 4, 8)});
}

/// block_k 128 where the GEMM's reduction size divides it, else the largest power of two that
/// does (not below 32), with 5 stages (measured: at K = 2880, 16x64x64 with 5 stages ran GEMM1
/// 2-3% faster than with 3). Swap-AB and decode configs keep theirs.
void fit_block_k(core::MoeProblem const& p, core::MoeConfig& c) {
  for (auto* k : {&c.gemm1, &c.gemm2}) {
    if (k->launch.swap_ab) continue;
    const int64_t kd = k == &c.gemm1 ? p.hidden_size : p.intermediate_size;
    while (k->tile.block_k > 32 && kd % k->tile.block_k != 0) {
      k->tile.block_k /= 2;
      k->pipeline.num_stages = 5;
    }
  }
}

}  // namespace

core::MoeConfig sm90_default_config(core::MoeProblem const& p, FastPaths const& fast_paths) {
  if (p.quant != core::Quant::kNone) return fp8_default_config(p);
  const double per_expert = pairs_per_expert(p);
  std::vector<core::MoeConfig> choices;
  if (per_expert <= 48.0) {
    small_m_choices(p, per_expert, choices);
  } else {
    large_m_choices(p, per_expert, choices);
  }
  // What every shape takes (block_k halved until it divides K and I).
  choices.push_back({.gemm1 = kc(16, 64, 64, 4, 4, 8), .gemm2 = kc(16, 64, 64, 4, 4, 8)});
  for (core::MoeConfig& c : choices) {
    fit_block_k(p, c);
    if (sm90_can_implement(p, c, fast_paths).ok()) return c;
  }
  return choices.back();
}

bool sm90_batch_invariant_family(core::KernelConfig const& k) {
  return (k.launch.schedule == core::Schedule::kTmaWarpSpecialized ||
          k.launch.schedule == core::Schedule::kCooperative) &&
         k.pipeline.split_k == 1;
}

namespace {

/// The wgmma tile for M under the lever (p = pairs per expert): at p <= 48 both GEMMs on swap-AB
/// with 64 pairs per tile (on one H100 at S1-S3, p <= 48, it ran 0.99-1.18x the tables' layer,
/// where the 128-row tile ran 1.02-1.41x: bench/batch_invariant_bench.py); above, the default
/// rule's pair where it is of the family (its tma_ws and swap-AB bands), else `anchor`.
core::MoeConfig invariant_tile(core::MoeProblem const& p, core::MoeConfig const& anchor,
                               FastPaths const& fast_paths) {
  core::MoeConfig c;
  if (pairs_per_expert(p) <= 48.0) {
    for (auto* k : {&c.gemm1, &c.gemm2}) {
      const bool gated = k == &c.gemm1 && core::is_gated(p.activation);
      *k = kc(64, gated ? 64 : 128, 64, 8, 5, 1, core::Schedule::kTmaWarpSpecialized);
      k->launch.swap_ab = true;
    }
  } else {
    c = sm90_default_config(p, fast_paths);
  }
  const bool fits = sm90_batch_invariant_family(c.gemm1) && sm90_batch_invariant_family(c.gemm2) &&
                    sm90_can_implement(p, c, fast_paths).ok();
  return fits ? c : anchor;
}

}  // namespace

core::Result<core::MoeConfig> sm90_batch_invariant_config(core::MoeProblem p,
                                                          FastPaths const& fast_paths) {
  if (p.quant != core::Quant::kNone) {
    return core::make_error(core::ErrorCode::kUnsupported, "sm90_gather",
                            "lever batch_invariant: quant " +
                                std::string(core::to_string(p.quant)) +
                                " has no batch-invariant config (only bf16 layers do); turn the "
                                "lever off for fp8 layers");
  }
  const int64_t m = p.num_tokens;
  p.num_tokens = 0;  // the family is the shape's, whatever M: that is the lever's whole claim
  constexpr auto kTw = core::Schedule::kTmaWarpSpecialized;
  auto bk = [](int64_t depth) { return depth % 64 == 0 ? 64 : 32; };
  const int bk1 = bk(p.hidden_size), bk2 = bk(p.intermediate_size);
  const core::MoeConfig anchor{
      .gemm1 = kc(128, core::is_gated(p.activation) ? 128 : 256, 64, 8, 4, 8, kTw),
      .gemm2 = kc(128, 256, 64, 8, 4, 8, kTw)};
  core::Status last = sm90_can_implement(p, anchor, fast_paths);
  if (last.ok()) {
    p.num_tokens = m;
    return invariant_tile(p, anchor, fast_paths);
  }
  const core::MoeConfig fallbacks[] = {
      {.gemm1 = kc(128, 128, bk1, 8, 4, 8), .gemm2 = kc(128, 128, bk2, 8, 4, 8)},
      {.gemm1 = kc(16, 64, bk1, 4, 4, 8), .gemm2 = kc(16, 64, bk2, 4, 4, 8)}};
  for (core::MoeConfig const& c : fallbacks) {
    last = sm90_can_implement(p, c, fast_paths);
    if (last.ok()) return c;
  }
  return core::make_error(
      core::ErrorCode::kUnsupported, "sm90_gather",
      "lever batch_invariant: none of its configs runs E=" + std::to_string(p.num_experts) +
          ",K=" + std::to_string(p.hidden_size) + ",I=" + std::to_string(p.intermediate_size) +
          " (the last: " + last.error().message + "); turn the lever off for this layer");
}

}  // namespace moetune::kernels::cuda
