// Device tests of the sm90_gather family (label gpu; each skips with a reason without a GPU).
// Small shapes are checked element by element against the CPU fp64 reference; the benchmark
// shapes S1-S3 against the fp32 GPU reference on sampled tokens. Every run poisons the output and
// the workspace first; every config also runs twice and must give identical bits. Also the
// testbed's own checks (launches of shared kernels, seeded inputs, the checker) and the levers'
// evidence. Swap-AB, clusters and tiles of 192 and 256 rows: sm90_gather_families_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cpu/reference.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_testbed.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"
#include "moe_shape.hpp"
#include "sm90_gather_fixture.hpp"

namespace moetune::kernels::cuda {
namespace {

using core::Activation;
using core::MoeConfig;
using core::MoeProblem;

using testing::bf16f;
using testing::expect_in_band_and_deterministic;
using testing::expect_matches_fp64;
using testing::fp64_reference;
using testing::moe_shape;
using testing::Sm90Gather;
using testing::swap_ws;
using testing::wgmma;

// A decode (launch.swap_ab) config: block_m pairs per pass, block_n columns per CTA, `rows` rows
// per warp in flight, block_k 256 x vec.
MoeConfig decode(int bm, int bn, int warps, int rows, int bk) {
  core::KernelConfig k;
  k.tile = {.block_m = bm, .block_n = bn, .block_k = bk, .group_m = 1};
  k.pipeline = {.num_warps = warps, .num_stages = rows, .split_k = 1};
  k.launch.swap_ab = true;
  return {.gemm1 = k, .gemm2 = k};
}

TEST_F(Sm90Gather, MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM) {
  const MoeProblem shapes[] = {
      moe_shape(8, 256, 128, 2, Activation::kSiluGated),
      moe_shape(12, 320, 192, 3,
                Activation::kRelu2),  // E not a power of two, K/I not multiples of 128
      moe_shape(6, 192, 64, 2, Activation::kGelu),
      moe_shape(10, 448, 320, 4, Activation::kGeluTanh),
      moe_shape(16, 256, 128, 8, Activation::kSiluGated)};  // top_k 8: two rounds of combine loads
  for (auto base : shapes) {
    for (int64_t m : {0, 1, 2, 3, 7, 15, 16, 17, 63, 64, 65, 255, 256, 1000, 3000}) {
      MoeProblem p = base;
      p.num_tokens = m;
      core::RoutingProfile r;
      r.seed = 7 + m;
      ASSERT_TRUE(tb_->prepare(p, r, 11 + m).ok());
      std::vector<MoeConfig> cfgs = {tb_->backend().default_config(p)};
      for (int bm : {16, 48, 64, 128}) {  // 48: a block sized to an expert's pairs
        MoeConfig c;
        c.gemm1.tile = {.block_m = bm, .block_n = 64, .block_k = 64, .group_m = 4};
        c.gemm1.pipeline = {.num_warps = 4, .num_stages = 3, .split_k = 1};
        c.gemm2 = c.gemm1;
        c.gemm2.tile.block_n = 32;
        c.gemm2.pipeline.num_warps = 2;
        cfgs.push_back(c);
      }
      for (int bm : {64, 128}) {  // wgmma main loop (schedule cooperative)
        cfgs.push_back(
            wgmma(bm, 64, bm == 64 ? 128 : 32, bm / 16, 3, 2, core::Schedule::kCooperative));
      }
      // wgmma with block_n a multiple of 8 that is not a power of two (partial tiles too).
      cfgs.push_back(wgmma(128, 40, 200, 8, 4, 8, core::Schedule::kCooperative));
      // tma_ws at block_m 64 with two consumer warpgroups splitting block_n.
      cfgs.push_back(wgmma(64, 96, 160, 8, 3, 8, core::Schedule::kTmaWarpSpecialized));
      // Decode kernels at every M (several passes and gather rounds at large M): one pair per
      // pass, and 4 pairs with 2 / 4 rows per warp, 1024 / 2048-wide steps (longer than K and
      // I here: masked lanes) and partial column chunks.
      cfgs.push_back(decode(1, 8, 4, 1, 256));
      {
        MoeConfig c = decode(4, 24, 8, 2, 1024);
        c.gemm2.tile.block_n = 40;
        c.gemm2.tile.block_k = 2048;
        c.gemm2.pipeline.num_stages = 4;
        cfgs.push_back(c);
      }
      for (int split : {2, 3}) {  // tma_ws GEMM2 split over K (fp32 partials, combine sums)
        MoeConfig c = wgmma(128, 64, 96, 8, 4, 8, core::Schedule::kTmaWarpSpecialized);
        c.gemm2.pipeline.split_k = split;  // where it divides I / 64 (else can_implement skips)
        cfgs.push_back(c);
      }
      for (int bm : {64, 128}) {  // TMA + warp-specialised persistent wgmma (schedule tma_ws)
        cfgs.push_back(wgmma(bm, bm == 64 ? 64 : 40, bm == 64 ? 256 : 200, bm / 16,
                             bm == 64 ? 2 : 4, 3, core::Schedule::kTmaWarpSpecialized));
      }
      // tma_ws at block_m 256 (two warpgroups of two 64-row halves; halves of padding skipped,
      // a warpgroup with no real rows idles through the stages), full and partial column tiles.
      cfgs.push_back(wgmma(256, 64, 120, 8, 3, 3, core::Schedule::kTmaWarpSpecialized));
      cfgs.push_back(wgmma(256, 40, 128, 8, 2, 1, core::Schedule::kTmaWarpSpecialized));
      // tma_ws at block_m 192 (three warpgroups of 64 rows; one of padding idles through the
      // stages), full and partial column tiles.
      cfgs.push_back(wgmma(192, 64, 120, 12, 4, 3, core::Schedule::kTmaWarpSpecialized));
      cfgs.push_back(wgmma(192, 40, 192, 12, 2, 1, core::Schedule::kTmaWarpSpecialized));
      // GEMM2 at 256 under a tma_ws GEMM1 of 128 / 64 rows walking its blocks in sub-blocks.
      for (int bm1 : {128, 64}) {
        MoeConfig c = wgmma(256, 64, 120, 8, 3, 3, core::Schedule::kTmaWarpSpecialized);
        c.gemm1 = wgmma(bm1, 64, 64, bm1 / 16, 3, 2, core::Schedule::kTmaWarpSpecialized).gemm1;
        cfgs.push_back(c);
      }
      // swap-AB (weights on wgmma's M side, a tile's pairs its N, chosen per tile): 64 pairs per
      // tile with three consumer warpgroups, 256 with two.
      cfgs.push_back(swap_ws(p, 64, 12, 4, 3));
      cfgs.push_back(swap_ws(p, 256, 8, 3, 1));
      for (int bm : {64, 128}) {  // pingpong: two consumer warpgroups on alternate tiles
        cfgs.push_back(wgmma(bm, bm == 64 ? 96 : 40, bm == 64 ? 200 : 120, 8, bm == 64 ? 2 : 4, 3,
                             core::Schedule::kPingpong));
      }
      const auto ref = fp64_reference(*tb_);
      for (auto const& c : cfgs) {
        if (!tb_->backend().can_implement(p, c).ok()) continue;
        expect_matches_fp64(*tb_, c, ref, core::to_string(p));
      }
    }
  }
}

TEST_F(Sm90Gather, HandlesAllTokensOnOneExpertAndTopK1) {
  MoeProblem p = moe_shape(16, 256, 128, 1, Activation::kSiluGated);
  for (int64_t m : {1, 17, 300}) {
    p.num_tokens = m;
    core::RoutingProfile r;
    r.kind = core::RoutingKind::kSingleExpert;
    ASSERT_TRUE(tb_->prepare(p, r, 3).ok());
    const auto ref = fp64_reference(*tb_);
    expect_matches_fp64(*tb_, tb_->backend().default_config(p), ref,
                        "single expert top1 M=" + std::to_string(m));
    // Decode: one CTA owns all M pairs (gather rounds of 128 at M = 300).
    expect_matches_fp64(*tb_, decode(8, 16, 4, 2, 256), ref,
                        "decode single expert top1 M=" + std::to_string(m));
  }
  p.top_k = 4;
  p.num_tokens = 129;
  core::RoutingProfile r;
  r.kind = core::RoutingKind::kZipf;  // many experts with zero tokens
  ASSERT_TRUE(tb_->prepare(p, r, 5).ok());
  const auto ref = fp64_reference(*tb_);
  expect_matches_fp64(*tb_, tb_->backend().default_config(p), ref, "zipf top4");
  expect_matches_fp64(*tb_, decode(2, 8, 4, 4, 512), ref, "decode zipf top4");
}

TEST_F(Sm90Gather, BenchmarkShapesMatchTheGpuReferenceAndAreDeterministic) {
  const MoeProblem shapes[] = {moe_shape(128, 2688, 1856, 6, Activation::kRelu2),
                               moe_shape(128, 2048, 768, 8, Activation::kSiluGated),
                               moe_shape(8, 4096, 14336, 2, Activation::kSiluGated)};
  for (auto base : shapes) {
    for (int64_t m : {1, 64, 1000, 4096}) {
      MoeProblem p = base;
      p.num_tokens = m;
      core::RoutingProfile r;
      r.seed = m;
      ASSERT_TRUE(tb_->prepare(p, r, m).ok());
      auto cfg = tb_->backend().default_config(p);
      if (m >= 1000) {  // the wgmma path at the sizes it serves
        for (auto* k : {&cfg.gemm1, &cfg.gemm2}) {
          // Fresh configs: the default there may be swap-AB (its own test, SwapAb... in
          // sm90_gather_families_test.cpp).
          *k = core::KernelConfig{};
          k->tile = {
              .block_m = 128, .block_n = k == &cfg.gemm1 ? 128 : 256, .block_k = 64, .group_m = 8};
          k->pipeline = {.num_warps = 8, .num_stages = 4, .split_k = 1};
          k->launch.schedule = core::Schedule::kCooperative;
        }
        if (core::is_gated(p.activation)) cfg.gemm1.tile.block_n = 128;
      }
      const std::string what = core::to_string(p);
      const std::string digest = expect_in_band_and_deterministic(*tb_, cfg, what);
      if (m <= 64) {  // the decode kernels at the benchmark shapes
        expect_in_band_and_deterministic(*tb_, decode(m == 1 ? 1 : 8, 8, 8, 2, 512),
                                         "decode, " + what);
      }
      if (m >= 1000) {
        // 64-row tiles split over two consumer warpgroups.
        auto split = cfg;
        for (auto* k : {&split.gemm1, &split.gemm2}) {
          k->tile.block_m = 64;
          k->tile.block_n *= 2;
          k->pipeline = {.num_warps = 8, .num_stages = 3, .split_k = 1};
          k->launch.schedule = core::Schedule::kTmaWarpSpecialized;
        }
        expect_in_band_and_deterministic(*tb_, split, "split-N tma_ws, " + what);
        // tma_ws issues the same wgmma sequence per tile as cooperative: identical bits.
        auto ws = cfg;
        ws.gemm1.launch.schedule = core::Schedule::kTmaWarpSpecialized;
        ws.gemm2.launch.schedule = core::Schedule::kTmaWarpSpecialized;
        EXPECT_EQ(expect_in_band_and_deterministic(*tb_, ws, "tma_ws, " + what), digest)
            << "tma_ws vs cooperative, " << what;
        // pingpong at the same wgmma widths (GEMM2 128 wide, so one warpgroup holds the tile;
        // expert-last tiles with an all-padding second half run one m64 wgmma): identical bits.
        auto coop128 = cfg;
        coop128.gemm2.tile.block_n = 128;
        auto pp = coop128;
        pp.gemm1.launch.schedule = core::Schedule::kPingpong;
        pp.gemm2.launch.schedule = core::Schedule::kPingpong;
        if (!core::is_gated(p.activation))
          pp.gemm1.tile.block_n = coop128.gemm1.tile.block_n = 128;
        else
          pp.gemm1.tile.block_n = coop128.gemm1.tile.block_n = 64;
        EXPECT_EQ(expect_in_band_and_deterministic(*tb_, pp, "pingpong, " + what),
                  expect_in_band_and_deterministic(*tb_, coop128, "cooperative n128, " + what))
            << "pingpong vs cooperative, " << what;
        // GEMM2 split over K (where it divides I / 64).
        auto sk = ws;
        sk.gemm2.pipeline.split_k = p.intermediate_size % 256 == 0 ? 4 : 2;
        if (tb_->backend().can_implement(p, sk).ok()) {
          expect_in_band_and_deterministic(*tb_, sk, "split-K tma_ws, " + what);
        }
      }
    }
  }
}

// Kernels are shared by every config and problem with the same name expressions, their launches
// are not. The bench's order on the H200 failed (cudaErrorInvalidValue): S2's M = 1 row, then at
// S3 a row sharing its decode GEMM2 (which lowered the kernel's shared-memory limit to S3's 32
// bytes), then S3's default, whose names equal S2's row (served S2's cached 128-byte launch).
// Also split-K 2 and 4 of one tile share names but not the split a launch uses.
TEST_F(Sm90Gather, ConfigsSharingKernelsAcrossProblemsKeepTheirOwnLaunches) {
  MoeConfig s2_row = decode(1, 8, 4, 1, 512);
  s2_row.gemm2.tile.block_n = 4;
  s2_row.gemm2.pipeline.num_warps = 8;
  MoeConfig s3_row = s2_row;
  s3_row.gemm1.tile.block_n = 4;
  s3_row.gemm1.tile.block_k = 2048;
  MoeProblem s2 = moe_shape(128, 2048, 768, 8, Activation::kSiluGated);
  MoeProblem s3 = moe_shape(8, 4096, 14336, 2, Activation::kSiluGated);
  s2.num_tokens = s3.num_tokens = 1;
  ASSERT_TRUE(tb_->prepare(s2, {}, 1).ok());
  auto a = tb_->check(s2_row);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_TRUE(tb_->prepare(s3, {}, 1).ok());
  for (MoeConfig const& c : {s3_row, s2_row}) {
    auto chk = tb_->check(c);
    ASSERT_TRUE(chk.ok()) << core::short_string(c) << ": " << chk.error().to_string();
    EXPECT_LE(chk->rel_l2_error, tolerance_for(core::DType::kBf16).rel_l2);
    auto t = tb_->time(c, 1, 3);
    ASSERT_TRUE(t.ok()) << core::short_string(c) << ": " << t.error().to_string();
  }
  MoeProblem big = s3;
  big.num_tokens = 512;
  MoeConfig split = wgmma(128, 128, 256, 8, 4, 8, core::Schedule::kTmaWarpSpecialized);
  for (int parts : {2, 4}) {
    split.gemm2.pipeline.split_k = parts;
    auto k = load_sm90_gather(big, split);
    ASSERT_TRUE(k.ok()) << k.error().to_string();
    EXPECT_EQ((*k)->g2.split_k, parts);
  }
  // Exactly 48 KB of mma.sync stages ((32 + 64) x 64 x 2 bytes x 4) plus the kernel's static row
  // tables: over the limit a launch has without the attribute (a launch that skipped it failed here
  // on the device with cudaErrorInvalidValue, the S1-S3 defaults at M = 128..512 among them).
  MoeConfig at48 = wgmma(32, 64, 64, 4, 4, 8, core::Schedule::kAuto);
  big.num_tokens = 256;
  ASSERT_TRUE(tb_->prepare(big, {}, 1).ok());
  auto chk48 = tb_->check(at48);
  ASSERT_TRUE(chk48.ok()) << core::short_string(at48) << ": " << chk48.error().to_string();
  EXPECT_LE(chk48->rel_l2_error, tolerance_for(core::DType::kBf16).rel_l2);
}

// Testbed::prepare draws every input from its seed alone, so a point's inputs (and a bench digest)
// do not depend on the points prepared before it; its negative twin: another seed, other weights.
TEST_F(Sm90Gather, PrepareDrawsTheWeightsFromItsOwnSeedWhateverCameBefore) {
  MoeProblem p = moe_shape(8, 256, 128, 2, Activation::kSiluGated);
  p.num_tokens = 9;
  ASSERT_TRUE(tb_->prepare(p, {}, 7).ok());
  auto first = tb_->download_inputs();
  MoeProblem q = p;
  q.num_tokens = 33;
  ASSERT_TRUE(tb_->prepare(q, {}, 8).ok());  // the same shape at another point, another seed
  auto other = tb_->download_inputs();
  ASSERT_TRUE(tb_->prepare(p, {}, 7).ok());
  auto again = tb_->download_inputs();
  ASSERT_TRUE(first.ok() && other.ok() && again.ok());
  EXPECT_EQ(first->w1, again->w1);
  EXPECT_EQ(first->w2, again->w2);
  EXPECT_EQ(first->x, again->x);
  EXPECT_NE(first->w1, other->w1);
  EXPECT_NE(first->w2, other->w2);
}

TEST_F(Sm90Gather, CheckerCatchesOneCorruptedElement) {
  // Negative twin of the checks above: the same comparison on an output with one element changed.
  MoeProblem p = moe_shape(8, 256, 128, 2, Activation::kSiluGated);
  p.num_tokens = 9;
  ASSERT_TRUE(tb_->prepare(p, {}, 1).ok());
  auto chk = tb_->check(tb_->backend().default_config(p));
  ASSERT_TRUE(chk.ok());
  auto in = tb_->download_inputs();
  ASSERT_TRUE(in.ok());
  cpu::MoeInputsView view{in->x, in->topk_ids, in->topk_weights, in->w1, in->w2};
  auto ref = cpu::reference_moe(p, view);
  ASSERT_TRUE(ref.ok());
  auto out = tb_->last_output();
  out[5 * 256 + 17] ^= 0x4000;  // flip an exponent bit
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double d = bf16f(out[i]) - (*ref)[i];
    num += d * d;
    den += (*ref)[i] * (*ref)[i];
  }
  EXPECT_GT(std::sqrt(num / den), tolerance_for(core::DType::kBf16).rel_l2);
}

TEST_F(Sm90Gather, EveryDefaultAndSearchSpaceConfigCompilesForS2) {
  MoeProblem p = moe_shape(128, 2048, 768, 8, Activation::kSiluGated);
  for (int64_t m : {1, 64, 4096}) {
    p.num_tokens = m;
    ASSERT_TRUE(tb_->prepare(p, {}, 1).ok());
    auto space = tb_->backend().search_space(p);
    EXPECT_FALSE(space.empty());
    for (size_t i = 0; i < space.size(); i += 7) {
      EXPECT_TRUE(tb_->compile(space[i]).ok()) << core::short_string(space[i]);
    }
  }
}

// Lever evidence (docs/levers.md): align_multi_cta is bitwise, wgmma_mainloop is numeric. The
// expert counts cover each way the place kernel splits the counts' rows over its threads: 2, 4 and
// 32 threads per expert (E = 128, 60, 8) and one thread for several experts (E = 300).
TEST_F(Sm90Gather, MultiCtaAlignAndPdlLeversGiveTheSameBitsAsTheirOffPaths) {
  for (auto base : {moe_shape(128, 2048, 768, 8, Activation::kSiluGated),
                    moe_shape(60, 512, 256, 6, Activation::kRelu2),
                    moe_shape(8, 1024, 512, 4, Activation::kSiluGated),
                    moe_shape(300, 512, 256, 8, Activation::kRelu2)}) {
    for (int64_t m : {1100, 5000}) {
      MoeProblem p = base;
      p.num_tokens = m;
      core::RoutingProfile r;
      r.seed = 40 + m;
      ASSERT_TRUE(tb_->prepare(p, r, m).ok());
      auto cfg = tb_->backend().default_config(p);
      tb_->set_fast_paths({.align_multi_cta = true});
      auto on = tb_->check(cfg);
      tb_->set_fast_paths({.align_multi_cta = false});
      auto off = tb_->check(cfg);
      tb_->set_fast_paths({.pdl = false});
      auto no_pdl = tb_->check(cfg);
      tb_->set_fast_paths({});
      ASSERT_TRUE(on.ok() && off.ok() && no_pdl.ok());
      EXPECT_EQ(on->digest, off->digest) << core::to_string(p);
      EXPECT_EQ(on->digest, no_pdl->digest) << "pdl lever " << core::to_string(p);
      EXPECT_LE(on->rel_l2_error, tolerance_for(core::DType::kBf16).rel_l2);
    }
  }
}

TEST_F(Sm90Gather, WgmmaLeverStaysWithinTheBf16BandOfTheMmaSyncPath) {
  MoeProblem p = moe_shape(128, 2048, 768, 8, Activation::kSiluGated);
  p.num_tokens = 2048;
  ASSERT_TRUE(tb_->prepare(p, {}, 9).ok());
  auto wg = tb_->backend().default_config(p);
  ASSERT_EQ(wg.gemm1.launch.schedule, core::Schedule::kTmaWarpSpecialized);
  auto a = tb_->check(wg);
  ASSERT_TRUE(a.ok());
  auto out_wg = tb_->last_output();
  tb_->set_fast_paths({.wgmma_mainloop = false});
  EXPECT_FALSE(tb_->check(wg).ok());  // refused with the lever off
  auto ms = tb_->backend().default_config(p);
  EXPECT_EQ(ms.gemm1.launch.schedule, core::Schedule::kAuto);
  auto b = tb_->check(ms);
  tb_->set_fast_paths({});
  ASSERT_TRUE(b.ok());
  auto const& out_ms = tb_->last_output();
  double num = 0, den = 0;
  for (size_t i = 0; i < out_ms.size(); ++i) {
    const double d = bf16f(out_wg[i]) - bf16f(out_ms[i]);
    num += d * d;
    den += double(bf16f(out_ms[i])) * bf16f(out_ms[i]);
  }
  const double rel = std::sqrt(num / den);
  RecordProperty("wgmma_vs_mma_sync_rel_l2", std::to_string(rel));
  std::printf("lever wgmma_mainloop: rel L2 vs mma.sync path %.3e\n", rel);
  EXPECT_LE(rel, tolerance_for(core::DType::kBf16).rel_l2);
  EXPECT_LE(a->rel_l2_error, tolerance_for(core::DType::kBf16).rel_l2);
  EXPECT_LE(b->rel_l2_error, tolerance_for(core::DType::kBf16).rel_l2);
}

}  // namespace
}  // namespace moetune::kernels::cuda
