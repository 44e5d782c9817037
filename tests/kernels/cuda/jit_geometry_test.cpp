// CPU-side tests of the cuda backend (label cpu: they need nvcc's NVRTC, not a GPU): what
// sm90_gather's can_implement accepts and refuses, with the reason naming the field (block_k,
// block_m across GEMMs, knobs the family lacks, tiles of 192 and 256 rows, swap-AB, clusters,
// pingpong, split-K, decode, warp counts), and that the default config is implementable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fresh_cubin_cache.hpp"
#include "jit_test_util.hpp"
#include "kernels/cuda/sm90_gather_defaults.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"
#include "kernels/cuda/sm90_gather_space.hpp"

namespace moetune::kernels::cuda {
namespace {

using testing::expect_compiles_clean;
using testing::expect_refused;
using testing::FreshCubinCache;
using testing::pingpong;
using testing::s1;
using testing::s1_with;
using testing::swap_ws;
using testing::tma_ws;

TEST(Sm90Geometry, RejectsBlockKThatDoesNotDivideK) {
  core::MoeConfig c = sm90_default_config(s1());
  c.gemm2.tile.block_k = 128;
  auto st = sm90_can_implement(s1(), c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "gemm2.tile.block_k = 128 does not divide I = 1856; use a block_k that divides it (32 "
            "always does when it is a multiple of 32)");
}

TEST(Sm90Geometry, RejectsDifferentBlockMAcrossGemms) {
  core::MoeConfig c = sm90_default_config(s1());
  c.gemm2.tile.block_m = c.gemm1.tile.block_m * 2;
  auto st = sm90_can_implement(s1(), c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("must be equal"), std::string::npos);
}

TEST(Sm90Geometry, RejectsKnobsTheFamilyLacksWithTheirNames) {
  core::MoeConfig c = sm90_default_config(s1());
  c.gemm2.launch.swap_ab = true;
  EXPECT_NE(sm90_can_implement(s1(), c).error().message.find("gemm2.launch.swap_ab"),
            std::string::npos);
  c = sm90_default_config(s1());
  c.gemm1.pipeline.split_k = 2;
  EXPECT_NE(sm90_can_implement(s1(), c).error().message.find("split_k"), std::string::npos);
  c = sm90_default_config(s1());
  c.gemm1.pipeline.num_stages = 8;
  c.gemm1.tile = {.block_m = 64, .block_n = 128, .block_k = 128, .group_m = 1};
  c.gemm1.pipeline.num_warps = 4;
  c.gemm2.tile.block_m = 64;
  EXPECT_NE(sm90_can_implement(s1(), c).error().message.find("shared memory"), std::string::npos);
}

TEST(Sm90Geometry, DefaultConfigIsImplementableForManyShapesAndM) {
  for (int64_t e : {8, 60, 128, 256}) {
    for (int64_t k : {256, 2048, 2688, 4096}) {
      for (int64_t i : {64, 768, 1856, 14336}) {
        for (int64_t m : {0, 1, 5, 64, 1000, 16384}) {
          core::MoeProblem p = s1();
          p.num_experts = e;
          p.hidden_size = k;
          p.intermediate_size = i;
          p.num_tokens = m;
          p.top_k = std::min<int64_t>(e, 8);
          auto st = sm90_can_implement(p, sm90_default_config(p));
          EXPECT_TRUE(st.ok()) << core::to_string(p) << ": " << st.error().to_string();
        }
      }
    }
  }
}

/// The negative twins block_m 192 and 256 share, one field each: GEMM1's block_n past the
/// accumulator limit, GEMM2's num_warps, split_k 2, clusters, the other schedules, 5 stages.
struct LargeTileTwins {
  int block_n;
  const char* acc_message;
  int num_warps;
  const char* warps_message;
  const char* cluster_message;
  const char* schedule_message;
};

void expect_large_tile_twins(core::MoeProblem const& p, core::MoeConfig const& c,
                             LargeTileTwins const& t) {
  auto bad = c;
  bad.gemm1.tile.block_n = t.block_n;
  expect_refused(p, bad, t.acc_message);
  bad = c;
  bad.gemm2.pipeline.num_warps = t.num_warps;
  expect_refused(p, bad, t.warps_message);
  bad = c;
  bad.gemm2.pipeline.split_k = 2;
  expect_refused(p, bad, "split_k 2");
  bad = c;
  bad.gemm1.launch.cluster_m = bad.gemm2.launch.cluster_m = 2;
  expect_refused(p, bad, t.cluster_message);
  for (auto sched : {core::Schedule::kCooperative, core::Schedule::kPingpong}) {
    bad = c;
    bad.gemm2.launch.schedule = sched;
    expect_refused(p, bad, t.schedule_message);
  }
  bad = c;
  bad.gemm1.pipeline.num_stages = bad.gemm2.pipeline.num_stages = 5;
  expect_refused(p, bad, "shared memory");
}

/// GEMM1's geometry under `k`: threads, accumulator registers per thread, shared memory.
void expect_geometry(core::MoeProblem const& p, core::KernelConfig const& k, int threads, int acc,
                     int smem) {
  auto g = gemm_geometry(p, k, true);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->threads(), threads);
  EXPECT_EQ(g->acc_registers(), acc);
  EXPECT_EQ(g->smem_bytes(), smem);
}

// can_implement of block_m 256: tma_ws only, 8 warps, split_k 1, cluster 1x1, <= 128 accumulator
// registers; each refusal names the field.
TEST(Sm90Geometry, Tile256IsTmaWsWithTwoWarpgroupsOfTwoHalves) {
  core::MoeProblem p = s1_with(core::Activation::kSiluGated, 4096);
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 would divide them
  core::MoeConfig c{.gemm1 = tma_ws(256, 64, 4), .gemm2 = tma_ws(256, 128, 4)};
  c.gemm1.pipeline.num_warps = c.gemm2.pipeline.num_warps = 8;
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  expect_geometry(p, c.gemm1, 384, 128, 4 * (256 + 128) * 128 + 1024);
  expect_large_tile_twins(p, c,
                          {128, "256 accumulator registers", 16, "num_warps 16", "cluster_m 2",
                           "tile.block_m = 256 with schedule"});
  // GEMM1 may walk GEMM2's 256-row blocks in tma_ws sub-blocks of 128 or 64 rows (cluster 1x1);
  // the align step pads to 256 and lists GEMM1's 128-row sub-blocks that hold pairs.
  auto mixed = c;
  mixed.gemm1 = tma_ws(128, 128, 4);
  ASSERT_TRUE(sm90_can_implement(p, mixed).ok())
      << sm90_can_implement(p, mixed).error().to_string();
  auto exprs = sm90_gather_name_exprs(p, mixed);
  ASSERT_TRUE(exprs.ok());
  EXPECT_EQ((*exprs)[2], "&moetune_dev::moe_align_kernel<256,128>");
  // GEMM1 at 256 reads x from a copy in sorted-row order (2 bytes x K per padded row), which
  // outweighs the sub-block list of GEMM1 at 128.
  EXPECT_GT(sm90_gather_workspace_bytes(p, c),
            sm90_gather_workspace_bytes(p, mixed) + size_t(2) * p.hidden_size * p.num_tokens);
  auto bad = mixed;  // negative twins: GEMM1 not tma_ws, or on clusters
  bad.gemm1.launch.schedule = core::Schedule::kCooperative;
  expect_refused(p, bad, "differs from gemm2.tile.block_m = 256");
  bad = mixed;
  bad.gemm1.launch.cluster_m = 2;
  expect_refused(p, bad, "differs from gemm2.tile.block_m = 256");
}

// can_implement of block_m 192: tma_ws only, 12 warps, split_k 1, cluster 1x1, <= 96 accumulator
// registers, both GEMMs at 192; each refusal names the field.
TEST(Sm90Geometry, Tile192IsTmaWsWithThreeWarpgroupsOf64Rows) {
  core::MoeProblem p = s1_with(core::Activation::kSiluGated, 2048);
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 would divide them
  const core::MoeConfig c{.gemm1 = tma_ws(192, 96, 4), .gemm2 = tma_ws(192, 192, 4)};
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  expect_geometry(p, c.gemm1, 512, 96, 4 * (192 + 192) * 128 + 1024);
  expect_large_tile_twins(p, c,
                          {104, "104 accumulator registers", 8, "num_warps 12", "cluster 2x1",
                           "192 with schedule tma_ws"});
  auto bad = c;
  bad.gemm1 = tma_ws(128, 96, 4);
  expect_refused(p, bad, "differs from gemm2.tile.block_m = 192");
}

// can_implement of swap-AB (launch.swap_ab with schedule tma_ws): both GEMMs swap-AB at one
// block_m, block_n set by the warps, block_k 64, no split-K or clusters, the stages within shared
// memory; each refusal names the field. GEMM1 gathers x's rows at block_m 64 and reads x's
// sorted copy above, which the workspace then holds.
TEST(Sm90Geometry, SwapAbTakesOneAlignBlockOfPairsPerTileAndSaysWhatItRefuses) {
  core::MoeProblem p = s1_with(core::Activation::kSiluGated, 2048);
  const core::MoeConfig c{.gemm1 = swap_ws(192, 12, 4, true), .gemm2 = swap_ws(192, 12, 4, false)};
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g1 = gemm_geometry(p, c.gemm1, true);
  auto g2 = gemm_geometry(p, c.gemm2, false);
  ASSERT_TRUE(g1.ok() && g2.ok());
  EXPECT_TRUE(g1->swap && g2->swap && !g1->decode);
  EXPECT_EQ(g1->block_n, 96);   // 3 x 64 weight rows: gate and up of 96 columns
  EXPECT_EQ(g2->block_n, 192);  // 3 x 64 output columns
  EXPECT_EQ(g1->threads(), 512);
  EXPECT_EQ(g1->acc_registers(), 96);
  EXPECT_EQ(g1->smem_bytes(), 4 * (192 + 192) * 128 + 1024);
  {  // at block_m 64 the swap-AB GEMM1 gathers x's rows; at 128 and up it reads x's sorted copy
    const core::MoeConfig swap64{.gemm1 = swap_ws(64, 12, 4, true),
                                 .gemm2 = swap_ws(64, 12, 4, false)};
    const core::MoeConfig swap128{.gemm1 = swap_ws(128, 12, 4, true),
                                  .gemm2 = swap_ws(128, 12, 4, false)};
    const core::MoeConfig ws64{.gemm1 = tma_ws(64, 128, 4), .gemm2 = tma_ws(64, 128, 4)};
    const core::MoeConfig ws128{.gemm1 = tma_ws(128, 128, 4), .gemm2 = tma_ws(128, 128, 4)};
    EXPECT_EQ(sm90_gather_workspace_bytes(p, swap64), sm90_gather_workspace_bytes(p, ws64));
    const int64_t copy =
        2 * max_blocks(core::num_pairs(p), p.num_experts, 128) * 128 * p.hidden_size;
    EXPECT_EQ(sm90_gather_workspace_bytes(p, swap128),
              sm90_gather_workspace_bytes(p, ws128) + (copy + 255) / 256 * 256);
  }
  auto mixed = c;  // beside a tma_ws kernel of its block_m, on the align path, either way round
  mixed.gemm2 = tma_ws(192, 128, 4);
  EXPECT_TRUE(sm90_can_implement(p, mixed).ok()) << core::short_string(mixed);
  mixed = c;
  mixed.gemm1 = tma_ws(192, 96, 4);
  EXPECT_TRUE(sm90_can_implement(p, mixed).ok()) << core::short_string(mixed);
  // Negative twins, one field each, and the text each refusal must hold.
  const std::pair<std::function<void(core::MoeConfig&)>, std::string> twins[] = {
      {[](core::MoeConfig& b) { b.gemm1.tile.block_n = 128; }, "tile.block_n = 96 with 12 warps"},
      {[](core::MoeConfig& b) { b.gemm2.pipeline.num_warps = 4; }, "num_warps = 8 or 12"},
      {[](core::MoeConfig& b) { b.gemm1.tile.block_m = b.gemm2.tile.block_m = 256; },
       "192 with 12 warps (96 accumulator registers at most); saw 256"},
      {[](core::MoeConfig& b) { b.gemm1.tile.block_m = b.gemm2.tile.block_m = 96; }, "saw 96"},
      {[](core::MoeConfig& b) { b.gemm2.pipeline.split_k = 2; }, "split_k 2"},
      {[](core::MoeConfig& b) { b.gemm1.launch.cluster_m = b.gemm2.launch.cluster_m = 2; },
       "cluster 2x1"},
      {[](core::MoeConfig& b) { b.gemm1.pipeline.num_stages = b.gemm2.pipeline.num_stages = 5; },
       "shared memory"},
      // the decode GEMM2 under a swap-AB GEMM1
      {[](core::MoeConfig& b) { b.gemm2.launch.schedule = core::Schedule::kAuto; },
       "set both or neither"},
      {[](core::MoeConfig& b) { b.gemm1 = swap_ws(128, 12, 4, true); },
       "differs from gemm2.tile.block_m = 192"},
      {[](core::MoeConfig& b) { b.gemm2.tile.block_k = 128; }, "block_k = 64"},
  };
  for (auto const& [mutate, text] : twins) {
    auto bad = c;
    mutate(bad);
    expect_refused(p, bad, text);
  }
}

// can_implement of clusters: 2x1 with tma_ws and split_k 1 only; each refusal names the field.
TEST(Sm90Geometry, ClusterPairIsForTmaWsWithoutSplitK) {
  core::MoeProblem p = s1();
  p.num_tokens = 4096;
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 would divide them
  core::MoeConfig c{.gemm1 = tma_ws(128, 232, 4), .gemm2 = tma_ws(128, 224, 4)};
  c.gemm1.launch.cluster_m = c.gemm2.launch.cluster_m = 2;
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  EXPECT_EQ(gemm_geometry(p, c.gemm2, false)->cluster_m, 2);
  for (int which = 0; which < 4; ++which) {  // negative twins
    auto bad = c;
    if (which == 0) bad.gemm2.launch.schedule = core::Schedule::kCooperative;
    if (which == 1) bad.gemm2 = pingpong(128, 128, 4), bad.gemm2.launch.cluster_m = 2;
    if (which == 2) bad.gemm2.pipeline.split_k = 2;
    if (which == 3) bad.gemm2.launch.cluster_n = 2;
    const std::string msg = expect_refused(p, bad, "launch.cluster");
    EXPECT_NE(msg.find("gemm2"), std::string::npos) << which << ": " << msg;
  }
}

// can_implement of cluster 1x2: GEMM2 with tma_ws (block_m 64, 128 or 256) and split_k 1 only;
// each refusal names the field and the GEMM.
TEST(Sm90Geometry, ClusterNPairIsForTmaWsGemm2WithoutSplitK) {
  core::MoeProblem p = s1();
  p.num_tokens = 4096;
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 would divide them
  core::MoeConfig c{.gemm1 = tma_ws(128, 232, 4), .gemm2 = tma_ws(128, 224, 4)};
  c.gemm2.launch.cluster_n = 2;
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g2 = gemm_geometry(p, c.gemm2, false);
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(g2->cluster_n, 2);
  EXPECT_EQ(g2->cluster_size(), 2);
  auto c256 = c;
  c256.gemm2 = tma_ws(256, 128, 4);
  c256.gemm2.pipeline.num_warps = 8;
  c256.gemm2.launch.cluster_n = 2;
  EXPECT_TRUE(sm90_can_implement(p, c256).ok()) << sm90_can_implement(p, c256).error().to_string();
  for (int which = 0; which < 5; ++which) {  // negative twins
    auto bad = c;
    std::string gemm = "gemm2";
    if (which == 0) bad.gemm2.launch.schedule = core::Schedule::kCooperative;
    if (which == 1) bad.gemm2 = pingpong(128, 128, 4), bad.gemm2.launch.cluster_n = 2;
    if (which == 2) bad.gemm2.pipeline.split_k = 2;
    if (which == 3) bad.gemm2.launch.cluster_m = 2;  // 2x2
    if (which == 4) bad.gemm1.launch.cluster_n = 2, gemm = "gemm1";
    const std::string msg = expect_refused(p, bad, "launch.cluster");
    EXPECT_NE(msg.find(gemm), std::string::npos) << which << ": " << msg;
  }
}

// can_implement of pingpong: 8 warps (two MMA warpgroups), one warpgroup's accumulators <= 128
// registers, no split-K; each refusal names the field.
TEST(Sm90Geometry, PingpongNeedsEightWarpsAndOneWarpgroupsAccumulators) {
  core::MoeProblem p = s1();
  p.num_tokens = 4096;
  core::MoeConfig c{.gemm1 = pingpong(128, 128, 4), .gemm2 = pingpong(128, 128, 4)};
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g = gemm_geometry(p, c.gemm2, false);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->threads(), 384);
  EXPECT_TRUE(g->persistent());
  EXPECT_EQ(g->acc_registers(), 128);
  auto bad = c;  // negative twins, one field each
  bad.gemm2.pipeline.num_warps = 4;
  expect_refused(p, bad, "num_warps = 4 with schedule pingpong");
  bad = c;
  bad.gemm2.tile.block_n = 256;
  expect_refused(p, bad, "256 accumulator registers");
  bad = c;
  bad.gemm2.pipeline.split_k = 2;
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 divides them
  expect_refused(p, bad, "GEMM2 with schedule tma_ws only");
}

TEST(Sm90Geometry, SplitKIsForTmaWsGemm2WhenItDividesTheKTiles) {
  core::MoeProblem p = s1();  // I = 1856: 29 k-tiles of 64, prime
  core::MoeConfig c{.gemm1 = tma_ws(128, 232, 4), .gemm2 = tma_ws(128, 224, 4)};
  c.gemm2.pipeline.split_k = 2;
  EXPECT_EQ(expect_refused(p, c, "split_k"),
            "gemm2.pipeline.split_k = 2 must be in 1..8 and divide I / 64 = 29 (every split takes "
            "whole 64-deep k-tiles)");
  p.intermediate_size = 14336;  // 224 k-tiles: 2, 4, 7, 8 divide
  c.gemm1.tile.block_n = 256;
  EXPECT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g2 = gemm_geometry(p, c.gemm2, false);
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(g2->split_k, 2);
  // The split kernel is its own instantiation (the unsplit one carries no split code) and
  // compiles without spills.
  FreshCubinCache cache("jit_split_k");
  ASSERT_TRUE(cache.ok());
  auto exprs = expect_compiles_clean(p, c, "split-K 2");
  // GEMM1, GEMM2, align, combine, the multi-CTA align's count and place, the permute pass.
  ASSERT_EQ(exprs.size(), 7u);
  // Template tail: kSplitN, kSplitK, kPingpong, kClusterM.
  EXPECT_NE(exprs[1].find(",1,true,false,1>"), std::string::npos) << exprs[1];
  EXPECT_NE(exprs[0].find(",1,false,false,1>"), std::string::npos) << exprs[0];
  c.gemm2.launch.schedule = core::Schedule::kCooperative;  // negative twin: not tma_ws
  expect_refused(p, c, "GEMM2 with schedule tma_ws only");
}

TEST(Sm90Geometry, DecodeNeedsSwapAbOnBothGemmsAndSaysWhy) {
  core::MoeProblem p = s1();
  p.num_tokens = 4;
  core::MoeConfig c{.gemm1 = sm90_decode_base(p), .gemm2 = sm90_decode_base(p)};
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  c.gemm2.launch.swap_ab = false;  // negative twin: one GEMM decode, the other not
  expect_refused(p, c, "set both or neither");
  c.gemm2 = c.gemm1;
  c.gemm1.pipeline.num_stages = 3;
  expect_refused(p, c, "gemm1.launch.swap_ab = true (decode kernels) takes pipeline.num_stages");
}

TEST(Sm90Geometry, TmaWarpSpecialisedRejectsAWrongWarpCountNamingTheProducer) {
  core::MoeProblem p = s1();
  core::MoeConfig c{.gemm1 = tma_ws(128, 232, 4), .gemm2 = tma_ws(128, 224, 4)};
  c.gemm2.pipeline.num_warps = 4;
  auto st = sm90_can_implement(p, c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "gemm2.pipeline.num_warps = 4 with schedule tma_ws needs one MMA warpgroup per 64 "
            "rows; use 8 (the producer warpgroup is not counted)");
}

// The hot path sizes its workspace from the loaded kernels' own geometry (the launchable's), the
// reserve step from the config: the two must agree for every GEMM the search can name (each
// GEMM1 candidate with its block_m's first GEMM2 and the other way round), at M = 0 too, where
// the bytes must still be a real allocation.
TEST(Sm90Geometry, WorkspaceOfLoadedKernelsEqualsTheConfigsAtEveryM) {
  int checked = 0, permuted = 0;
  for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{777}, int64_t{16384}}) {
    const core::MoeProblem p = s1_with(core::Activation::kSiluGated, m);
    std::vector<core::MoeConfig> configs;
    for (core::GemmSpace const& s : sm90_gemm_search_space(p)) {
      for (auto const& a : s.gemm1) configs.push_back({.gemm1 = a, .gemm2 = s.gemm2.front()});
      for (auto const& b : s.gemm2) configs.push_back({.gemm1 = s.gemm1.front(), .gemm2 = b});
    }
    // GEMM1s that read x's sorted copy (192 / 256 rows, swap-AB of 128 and up), beside the space.
    configs.push_back({.gemm1 = tma_ws(256, 64, 4), .gemm2 = tma_ws(256, 128, 4)});
    configs.push_back({.gemm1 = tma_ws(192, 96, 4), .gemm2 = tma_ws(192, 192, 4)});
    configs.push_back({.gemm1 = swap_ws(128, 12, 4, true), .gemm2 = swap_ws(128, 12, 4, false)});
    for (core::MoeConfig const& c : configs) {
      if (!sm90_can_implement(p, c).ok()) continue;
      auto g1 = gemm_geometry(p, c.gemm1, true);
      auto g2 = gemm_geometry(p, c.gemm2, false);
      ASSERT_TRUE(g1.ok() && g2.ok()) << core::short_string(c);
      Sm90GatherKernels k;
      k.g1 = *g1;
      k.g2 = *g2;
      const size_t bytes = sm90_gather_workspace_bytes(p, c);
      EXPECT_EQ(sm90_gather_workspace_bytes(k, p), bytes)
          << "M=" << m << " " << core::short_string(c);
      EXPECT_GT(bytes, 0u) << "M=" << m << " " << core::short_string(c);
      ++checked;
      permuted += g1->persistent() && (g1->block_m >= 192 || (g1->swap && g1->block_m >= 128));
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_GE(permuted, 2 * 4);  // GEMM1s that read x's sorted copy, at every M
}
}  // namespace
}  // namespace moetune::kernels::cuda
