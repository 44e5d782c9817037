// The default rule of the sm90_gather family (sm90_gather_defaults.cpp): each regime of pairs per
// expert p gets the pair the H200 fit chose, a choice the shape or the fast paths refuse falls
// through, and every default is one can_implement accepts. Host-only (no GPU, no NVRTC).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "bench/csv.hpp"
#include "core/atomic_file.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"
#include "kernels/cuda/sm90_gather_defaults.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "moe_shape.hpp"

namespace moetune::kernels::cuda {
namespace {

using core::Activation;
using testing::moe_shape;

// One line of tests/kernels/cuda/default_rule_grid.csv: a shape at M tokens and the two configs the
// rule gives it, pinned so that a change of the rule shows up row by row (regenerate the grid
// with the `moetune defaults` command of tests/cli/defaults_test.cpp, which prints it verbatim).
struct GridRow {
  int line = 0;
  core::MoeProblem p;
  std::string gemm1, gemm2;
};

std::vector<GridRow> load_grid() {
  const std::string path =
      std::string(MOETUNE_SOURCE_DIR) + "/tests/kernels/cuda/default_rule_grid.csv";
  std::vector<GridRow> rows;
  auto text = core::read_file(path);
  if (!text.ok()) {
    ADD_FAILURE() << text.error().to_string();
    return rows;
  }
  auto csv = bench::parse_csv(*text, path);
  if (!csv.ok()) {
    ADD_FAILURE() << csv.error().to_string();
    return rows;
  }
  for (size_t r = 0; r < csv->rows.size(); ++r) {
    auto act = core::parse_activation(csv->at(r, "act"));
    if (!act.ok()) {
      ADD_FAILURE() << path << ":" << r + 2 << ": " << act.error().to_string();
      continue;
    }
    auto n = [&](std::string_view col) { return static_cast<int64_t>(csv->number(r, col)); };
    rows.push_back({static_cast<int>(r) + 2,  // the file's line: after the header, from 1
                    moe_shape(n("E"), n("K"), n("I"), n("top_k"), *act, n("M")),
                    csv->at(r, "gemm1"), csv->at(r, "gemm2")});
  }
  return rows;
}

/// "line N (E,K,I,top_k M): gemm1 is X, the grid says Y" for each GEMM the rule gives otherwise.
std::vector<std::string> grid_mismatches(std::vector<GridRow> const& rows) {
  std::vector<std::string> out;
  for (auto const& r : rows) {
    const core::MoeConfig c = sm90_default_config(r.p);
    const std::string where =
        "line " + std::to_string(r.line) + " (" + std::to_string(r.p.num_experts) + "," +
        std::to_string(r.p.hidden_size) + "," + std::to_string(r.p.intermediate_size) + "," +
        std::to_string(r.p.top_k) + " M=" + std::to_string(r.p.num_tokens) + "): ";
    if (core::short_string(c.gemm1) != r.gemm1)
      out.push_back(where + "gemm1 is " + core::short_string(c.gemm1) + ", the grid says " +
                    r.gemm1);
    if (core::short_string(c.gemm2) != r.gemm2)
      out.push_back(where + "gemm2 is " + core::short_string(c.gemm2) + ", the grid says " +
                    r.gemm2);
  }
  return out;
}

// S2's sizes (E 128, top-8: p = M / 16) and S3's (E 8, top-2: p = M / 4).
core::MoeProblem s2(int64_t m) { return moe_shape(128, 2048, 768, 8, Activation::kSiluGated, m); }
core::MoeProblem s3(int64_t m) { return moe_shape(8, 4096, 14336, 2, Activation::kSiluGated, m); }

TEST(Sm90DefaultRule, DecodeKernelsServeOnlyUpToHalfAPairPerExpert) {
  const core::MoeConfig d = sm90_default_config(s3(2));  // p = 0.5
  EXPECT_TRUE(d.gemm1.launch.swap_ab);
  EXPECT_EQ(d.gemm1.tile.block_n, 4);  // the decode fit: 4 columns per CTA beat 8
  EXPECT_EQ(d.gemm2.tile.block_n, 4);
  const core::MoeConfig c = sm90_default_config(s3(4));  // p = 1: mma.sync ran faster
  EXPECT_FALSE(c.gemm1.launch.swap_ab);
  EXPECT_FALSE(c.gemm2.launch.swap_ab);
  EXPECT_EQ(c.gemm1.tile.block_m, 16);
}

TEST(Sm90DefaultRule, TakesTmaWs64RowTilesFrom24To48PairsPerExpert) {
  for (int64_t m : {400, 512, 768}) {  // p = 25, 32, 48
    const core::MoeConfig c = sm90_default_config(s2(m));
    for (auto const* k : {&c.gemm1, &c.gemm2}) {
      EXPECT_EQ(k->tile.block_m, 64) << "M=" << m;
      EXPECT_EQ(k->tile.block_n, 128) << "M=" << m;
      EXPECT_EQ(k->pipeline.num_warps, 4) << "M=" << m;
      EXPECT_EQ(k->launch.schedule, core::Schedule::kTmaWarpSpecialized) << "M=" << m;
    }
  }
  EXPECT_EQ(sm90_default_config(s2(384)).gemm1.tile.block_m, 32);    // p = 24
  EXPECT_EQ(sm90_default_config(s2(1024)).gemm1.tile.block_m, 128);  // p = 64
}

TEST(Sm90DefaultRule, RunsGemm2At256RowsOnlyFrom96To160PairsPerExpert) {
  const core::MoeConfig in = sm90_default_config(s2(2048));  // p = 128, I = 768 < 10 p
  EXPECT_EQ(in.gemm2.tile.block_m, 256);
  EXPECT_EQ(in.gemm2.tile.block_n, 128);
  EXPECT_EQ(in.gemm1.tile.block_m, 128);
  EXPECT_TRUE(sm90_can_implement(s2(2048), in).ok());
  EXPECT_EQ(sm90_default_config(s2(1536)).gemm2.tile.block_m, 128);  // p = 96
  EXPECT_EQ(sm90_default_config(s2(4096)).gemm2.tile.block_m, 128);  // p = 256
}

TEST(Sm90DefaultRule, RunsBothGemmsAt192RowsGemm1SwapAbForGatedExpertsWithIAtLeast10PFrom96To160) {
  const core::MoeConfig c = sm90_default_config(s3(512));  // p = 128, I = 14336
  EXPECT_EQ(c.gemm1.tile.block_m, 192);
  EXPECT_EQ(c.gemm1.tile.block_n, 96);
  EXPECT_EQ(c.gemm1.pipeline.num_warps, 12);
  // GEMM1 on swap-AB (192 pairs per tile as wgmma's N), GEMM2 the 192-row tma_ws tile.
  EXPECT_TRUE(c.gemm1.launch.swap_ab);
  EXPECT_EQ(c.gemm1.launch.schedule, core::Schedule::kTmaWarpSpecialized);
  EXPECT_FALSE(c.gemm2.launch.swap_ab);
  EXPECT_EQ(c.gemm2.tile.block_m, 192);
  EXPECT_EQ(c.gemm2.tile.block_n, 128);  // K = 4096 is not a multiple of 192
  EXPECT_TRUE(sm90_can_implement(s3(512), c).ok());
  // Mixtral-8x22B's K = 6144 = 32 x 192: GEMM2 takes 192 columns.
  const core::MoeProblem h4 = moe_shape(8, 6144, 16384, 2, Activation::kSiluGated, 512);
  EXPECT_EQ(sm90_default_config(h4).gemm2.tile.block_n, 192);
  EXPECT_TRUE(sm90_can_implement(h4, sm90_default_config(h4)).ok());
  // Qwen3-235B at p = 128: I = 1536 >= 10 p (a 16 p bound would refuse it).
  EXPECT_EQ(sm90_default_config(moe_shape(128, 4096, 1536, 8, Activation::kSiluGated, 2048))
                .gemm1.tile.block_m,
            192);
  // Negative twins: p = 96 and 256, a narrow I (S2; OLMoE's I = 1024 < 10 p at p = 128), a
  // non-gated activation.
  EXPECT_EQ(sm90_default_config(moe_shape(64, 2048, 1024, 8, Activation::kSiluGated, 1024))
                .gemm1.tile.block_m,
            128);
  EXPECT_EQ(sm90_default_config(s3(384)).gemm1.tile.block_m, 128);
  EXPECT_EQ(sm90_default_config(s3(1024)).gemm1.tile.block_m, 128);
  EXPECT_EQ(sm90_default_config(s2(2048)).gemm1.tile.block_m, 128);
  EXPECT_EQ(
      sm90_default_config(moe_shape(8, 4096, 14336, 2, Activation::kRelu2, 512)).gemm1.tile.block_m,
      128);
}

// S1's sizes (E 128, top-6, relu^2: p = 6 M / 128).
core::MoeProblem s1(int64_t m) { return moe_shape(128, 2688, 1856, 6, Activation::kRelu2, m); }

TEST(Sm90DefaultRule, RunsGemm2OnSwapAb128x192From48To104PairsPerExpertWhereItsWavesFill) {
  for (int64_t m : {1536, 2048}) {  // p = 72, 96: 14 x 128 tiles fill the waves as 11 x 128 do
    const core::MoeConfig c = sm90_default_config(s1(m));
    EXPECT_TRUE(c.gemm2.launch.swap_ab) << "M=" << m;
    EXPECT_EQ(c.gemm2.tile.block_m, 128) << "M=" << m;
    EXPECT_EQ(c.gemm2.tile.block_n, 192) << "M=" << m;
    EXPECT_EQ(c.gemm2.pipeline.num_warps, 12) << "M=" << m;
    EXPECT_FALSE(c.gemm1.launch.swap_ab) << "M=" << m;
    EXPECT_EQ(c.gemm1.tile.block_m, 128) << "M=" << m;
    EXPECT_TRUE(sm90_can_implement(s1(m), c).ok()) << "M=" << m;
  }
  // Mixtral-8x22B at p = 64: 32 x 8 tiles in two full waves, where 24 x 8 leave a quarter idle.
  const core::MoeProblem h4 = moe_shape(8, 6144, 16384, 2, Activation::kSiluGated, 256);
  EXPECT_TRUE(sm90_default_config(h4).gemm2.launch.swap_ab);
  // Negative twins: S3's 22 x 8 tiles take two waves where 16 x 8 take one; S2's I = 768; p = 48
  // (the 64-row band) and p = 120.
  EXPECT_FALSE(sm90_default_config(s3(384)).gemm2.launch.swap_ab);
  EXPECT_FALSE(sm90_default_config(s2(1536)).gemm2.launch.swap_ab);
  EXPECT_EQ(sm90_default_config(s1(1024)).gemm2.tile.block_m, 64);
  EXPECT_FALSE(sm90_default_config(s1(2560)).gemm2.launch.swap_ab);
}

TEST(Sm90DefaultRule, RunsBothGemmsOnSwapAb256From136To224PairsPerExpertWhereKIsAtLeast2048) {
  const core::MoeProblem h4 = moe_shape(8, 6144, 16384, 2, Activation::kSiluGated, 768);
  for (const core::MoeProblem& p : {s1(3072), s1(4096), s3(768), h4}) {  // p = 144, 192, 192, 192
    const core::MoeConfig c = sm90_default_config(p);
    const std::string where = core::short_string(c.gemm1) + " at M=" + std::to_string(p.num_tokens);
    for (auto const* k : {&c.gemm1, &c.gemm2}) {
      EXPECT_TRUE(k->launch.swap_ab) << where;
      EXPECT_EQ(k->tile.block_m, 256) << where;
      EXPECT_EQ(k->pipeline.num_warps, 8) << where;
    }
    EXPECT_EQ(c.gemm1.tile.block_n, core::is_gated(p.activation) ? 64 : 128) << where;
    EXPECT_TRUE(sm90_can_implement(p, c).ok()) << where;
  }
  // Negative twins: K = 1536 (the E = 40 gelu shape at p = 192), p = 120 and p = 240.
  const core::MoeProblem h5 = moe_shape(40, 1536, 704, 5, Activation::kGeluTanh, 1536);
  EXPECT_FALSE(sm90_default_config(h5).gemm1.launch.swap_ab);
  EXPECT_FALSE(sm90_default_config(s1(2560)).gemm1.launch.swap_ab);
  EXPECT_FALSE(sm90_default_config(s1(5120)).gemm1.launch.swap_ab);
}

TEST(Sm90DefaultRule, HalvesBlockKWithFiveStagesWhereTheReductionSizeRefuses128) {
  // p = 3: both 16 x 64 x BK; I = 1856 is not a multiple of 128, K = 2688 is.
  const core::MoeProblem p = moe_shape(128, 2688, 1856, 6, Activation::kRelu2, 64);
  const core::MoeConfig c = sm90_default_config(p);
  EXPECT_EQ(c.gemm1.tile.block_k, 128);
  EXPECT_EQ(c.gemm1.pipeline.num_stages, 3);
  EXPECT_EQ(c.gemm2.tile.block_k, 64);
  EXPECT_EQ(c.gemm2.pipeline.num_stages, 5);
}

TEST(Sm90DefaultRule, FallsBackToMmaSyncWhenTheWgmmaLeverIsOff) {
  FastPaths off;
  off.wgmma_mainloop = false;
  for (int64_t m : {512, 2048, 16384}) {
    const core::MoeConfig c = sm90_default_config(s2(m), off);
    EXPECT_EQ(c.gemm1.launch.schedule, core::Schedule::kAuto) << "M=" << m;
    EXPECT_EQ(c.gemm2.launch.schedule, core::Schedule::kAuto) << "M=" << m;
    EXPECT_TRUE(sm90_can_implement(s2(m), c, off).ok()) << "M=" << m;
    // ...and the same point with the lever on does take the wgmma schedule.
    EXPECT_EQ(sm90_default_config(s2(m)).gemm1.launch.schedule, core::Schedule::kTmaWarpSpecialized)
        << "M=" << m;
  }
}

TEST(Sm90DefaultRule, FallsThroughWhereTheOutputIsNarrowerThanTheTile) {
  // I = 64: GEMM1's 128-wide tma_ws tile does not fit a 64-column output at p = 32.
  const core::MoeProblem p = moe_shape(8, 256, 64, 2, Activation::kSiluGated, 128);
  const core::MoeConfig c = sm90_default_config(p);
  EXPECT_TRUE(sm90_can_implement(p, c).ok()) << core::short_string(c);
}

// Lever batch_invariant: one family per shape (wgmma, no split-K), whose tile follows M.
std::string invariant_misfit(core::MoeProblem const& p, core::MoeConfig const& c) {
  const std::string where = "E=" + std::to_string(p.num_experts) +
                            " M=" + std::to_string(p.num_tokens) + " " + core::short_string(c) +
                            ": ";
  for (const core::KernelConfig* k : {&c.gemm1, &c.gemm2}) {
    if (!sm90_batch_invariant_family(*k)) return where + "a kernel outside the wgmma family";
    if (k->tile.block_k != 64) return where + "block_k is not 64";
  }
  if (!sm90_can_implement(p, c).ok()) return where + "can_implement refuses it";
  return "";
}

TEST(Sm90BatchInvariantConfig, IsOfTheWgmmaFamilyWithoutSplitKAtEveryM) {
  const core::MoeProblem shapes[] = {s1(0), s2(0), s3(0),
                                     moe_shape(40, 1536, 704, 5, Activation::kGeluTanh)};
  for (const core::MoeProblem& shape : shapes) {
    core::MoeProblem p = shape;
    std::vector<core::MoeConfig> seen;
    // M = 0..16384 spans every regime of the default rule (decode, mma.sync, swap-AB, 192 rows).
    for (int64_t m : {0, 1, 4, 7, 64, 512, 1000, 2048, 4096, 16384}) {
      p.num_tokens = m;
      auto c = sm90_batch_invariant_config(p);
      ASSERT_TRUE(c.ok()) << c.error().to_string();
      EXPECT_EQ(invariant_misfit(p, *c), "");
      if (pairs_per_expert(p) <= 48.0) {  // the small-M tile: swap-AB, 64 pairs
        EXPECT_TRUE(c->gemm1.launch.swap_ab && c->gemm2.launch.swap_ab) << m;
        EXPECT_EQ(c->gemm1.tile.block_m, 64) << m;
      }
      if (std::find(seen.begin(), seen.end(), *c) == seen.end()) seen.push_back(*c);
    }
    EXPECT_GE(seen.size(), 2u) << "E=" << p.num_experts << ": the tile no longer follows M";
  }
  // Negative twins: the default rule's small-M kernels (decode, mma.sync) and a split-K tma_ws
  // GEMM2 are outside the family, so the check above can fail.
  EXPECT_NE(invariant_misfit(s2(1), sm90_default_config(s2(1))), "");
  EXPECT_NE(invariant_misfit(s2(64), sm90_default_config(s2(64))), "");
  core::MoeConfig split = *sm90_batch_invariant_config(s2(4096));
  split.gemm2.pipeline.split_k = 2;
  EXPECT_FALSE(sm90_batch_invariant_family(split.gemm2));
}

TEST(Sm90BatchInvariantConfig, FallsBackToOneMmaSyncConfigWhereWgmmaCannotRun) {
  FastPaths off;
  off.wgmma_mainloop = false;
  auto c = sm90_batch_invariant_config(s2(1), off);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(core::short_string(*c), "m128n128k64g8w8s4");
  EXPECT_EQ(*sm90_batch_invariant_config(s2(4096), off), *c);
  // I = 96 is no multiple of wgmma's block_k 64: the mma.sync pair, GEMM2 at block_k 32.
  const core::MoeProblem narrow = moe_shape(8, 256, 96, 2, Activation::kSiluGated, 5);
  auto n = sm90_batch_invariant_config(narrow);
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(core::short_string(*n), "m128n128k64g8w8s4|m128n128k32g8w8s4");
  EXPECT_TRUE(sm90_can_implement(narrow, *n).ok()) << core::short_string(*n);
  core::MoeProblem wide = narrow;
  wide.num_tokens = 4096;
  EXPECT_EQ(*sm90_batch_invariant_config(wide), *n);
}

TEST(Sm90BatchInvariantConfig, RefusesFp8Problems) {
  core::MoeProblem p = s2(16);
  p.quant = core::Quant::kFp8Block;
  auto c = sm90_batch_invariant_config(p);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().to_string(),
            "sm90_gather: lever batch_invariant: quant fp8_block has no batch-invariant config "
            "(only bf16 layers do); turn the lever off for fp8 layers");
}

TEST(Sm90DefaultRule, GivesEveryShapeOfTheGridItsPinnedConfigs) {
  const std::vector<GridRow> rows = load_grid();
  ASSERT_GE(rows.size(), 100u) << "tests/kernels/cuda/default_rule_grid.csv is missing or short";
  std::string all;
  for (auto const& m : grid_mismatches(rows)) all += m + "\n";
  EXPECT_TRUE(all.empty()) << all
                           << "a changed rule: regenerate the grid with `moetune defaults` "
                              "(tests/cli/defaults_test.cpp names the command)";
}

TEST(Sm90DefaultRule, GridCheckReportsTheOneRowWhoseExpectationWasChanged) {
  std::vector<GridRow> rows = load_grid();
  ASSERT_GE(rows.size(), 100u);
  rows[40].gemm2 = "m16n64k64g8w4s4";  // no grid row expects this config
  const std::vector<std::string> m = grid_mismatches(rows);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].find("line " + std::to_string(rows[40].line)), std::string::npos) << m[0];
  EXPECT_NE(m[0].find("gemm2"), std::string::npos) << m[0];
}

}  // namespace
}  // namespace moetune::kernels::cuda
