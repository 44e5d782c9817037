// Device tests of the sm90_gather kernel families beyond one 128-row tile (label gpu; each skips
// with a reason without a GPU): swap-AB, CTA pairs over m-blocks and over GEMM2's n-tiles, and
// tma_ws tiles of 192 and 256 rows. Odd shapes are checked element by element against the CPU
// fp64 reference; at the benchmark shapes S1-S3 each gives the bits of the family it stands in for
// (or lies within the bf16 band of the fp32 GPU reference), and every config runs twice with the
// same bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_testbed.hpp"
#include "moe_shape.hpp"
#include "sm90_gather_fixture.hpp"

namespace moetune::kernels::cuda {
namespace {

using core::Activation;
using core::MoeConfig;
using core::MoeProblem;

using testing::expect_in_band_and_deterministic;
using testing::expect_matches_fp64;
using testing::fp64_reference;
using testing::moe_shape;
using testing::Sm90Gather;
using testing::swap_ws;
using testing::wgmma;

// The cluster tests' odd shapes (E not a power of two, so CTA pairs that straddle two experts;
// odd block and n-tile counts, so ghost CTAs) at M in {1, 17, 65, 256, 1000, 3000}: prepares `tb`
// (routing seed `seed` + M, data seed `data` + M) and calls check(problem, fp64 reference).
template <typename Check>
void on_odd_cluster_shapes(CudaTestbed& tb, int seed, int data, Check check) {
  for (auto base : {moe_shape(12, 320, 192, 3, Activation::kRelu2),
                    moe_shape(10, 448, 320, 4, Activation::kSiluGated)}) {
    for (int64_t m : {1, 17, 65, 256, 1000, 3000}) {
      MoeProblem p = base;
      p.num_tokens = m;
      core::RoutingProfile r;
      r.seed = static_cast<uint64_t>(seed + m);
      ASSERT_TRUE(tb.prepare(p, r, static_cast<uint64_t>(data + m)).ok());
      check(p, fp64_reference(tb));
    }
  }
}

// S1-S3 at M = 1000 and 4096 (routing and data seed M): prepares `tb` and calls check(problem).
template <typename Check>
void on_benchmark_shapes_mid_m(CudaTestbed& tb, Check check) {
  for (auto base : {moe_shape(128, 2688, 1856, 6, Activation::kRelu2),
                    moe_shape(128, 2048, 768, 8, Activation::kSiluGated),
                    moe_shape(8, 4096, 14336, 2, Activation::kSiluGated)}) {
    for (int64_t m : {1000, 4096}) {
      MoeProblem p = base;
      p.num_tokens = m;
      core::RoutingProfile r;
      r.seed = static_cast<uint64_t>(m);
      ASSERT_TRUE(tb.prepare(p, r, static_cast<uint64_t>(m)).ok());
      check(p);
    }
  }
}

// Swap-AB (launch.swap_ab with schedule tma_ws) at every block_m and consumer count it takes:
//   - the odd shapes (E not a power of two, I = 192 / 320: partial column tiles; relu^2 and gated
//     GEMM1, whose gate and up rows arrive interleaved) against fp64, element by element, twice
//     with the same bits, at M from 1 (one pair per tile: wgmma N 16) to 3000 (many tiles per
//     expert);
//   - S1-S3 at M = 1000 and 4096 against the GPU reference, deterministic.
// Also a swap-AB GEMM2 under a tma_ws GEMM1 of 128 rows (the shipped rows' pairing): at block_m
// 128, and at 256 over the GEMM1's 128-row sub-blocks, whose all-padding h rows GEMM1 leaves
// unwritten.
TEST_F(Sm90Gather, SwapAbMatchesFp64OnOddShapesAndTheGpuReferenceOnBenchmarkShapes) {
  struct Shape {
    int bm, warps, stages;
  };
  const Shape shapes[] = {{64, 12, 4}, {128, 12, 4}, {192, 12, 4}, {128, 8, 5}, {256, 8, 4}};
  // GEMM1 tma_ws 128 x 64 under a swap-AB GEMM2 of `sh`.
  auto under_tma_ws = [](MoeProblem const& p, Shape sh) {
    MoeConfig c = swap_ws(p, sh.bm, sh.warps, sh.stages, 1);
    c.gemm1 = core::KernelConfig{};
    c.gemm1.tile = {.block_m = 128, .block_n = 64, .block_k = 64, .group_m = 8};
    c.gemm1.pipeline = {.num_warps = 8, .num_stages = 4, .split_k = 1};
    c.gemm1.launch.schedule = core::Schedule::kTmaWarpSpecialized;
    return c;
  };
  const Shape mixed[] = {{128, 12, 5}, {256, 8, 4}};
  on_odd_cluster_shapes(*tb_, 5, 9, [&](MoeProblem const& p, std::vector<double> const& ref) {
    for (auto sh : shapes) {
      const MoeConfig c = swap_ws(p, sh.bm, sh.warps, sh.stages, sh.bm == 64 ? 3 : 1);
      ASSERT_TRUE(tb_->backend().can_implement(p, c).ok()) << core::short_string(c);
      expect_matches_fp64(*tb_, c, ref, "swap-AB, " + core::to_string(p));
    }
    for (auto sh : mixed) {
      const MoeConfig c = under_tma_ws(p, sh);
      ASSERT_TRUE(tb_->backend().can_implement(p, c).ok()) << core::short_string(c);
      expect_matches_fp64(*tb_, c, ref, "swap-AB GEMM2 under tma_ws, " + core::to_string(p));
    }
  });
  on_benchmark_shapes_mid_m(*tb_, [&](MoeProblem const& p) {
    for (auto sh : shapes) {
      if (sh.bm == 64) continue;
      const MoeConfig c = swap_ws(p, sh.bm, sh.warps, sh.stages);
      ASSERT_TRUE(tb_->backend().can_implement(p, c).ok()) << core::short_string(c);
      expect_in_band_and_deterministic(*tb_, c, "swap-AB, " + core::to_string(p));
    }
    for (auto sh : mixed) {
      const MoeConfig c = under_tma_ws(p, sh);
      ASSERT_TRUE(tb_->backend().can_implement(p, c).ok()) << core::short_string(c);
      expect_in_band_and_deterministic(*tb_, c,
                                       "swap-AB GEMM2 under tma_ws, " + core::to_string(p));
    }
  });
}

// tma_ws on CTA pairs (launch.cluster_m = 2: m-blocks 2j and 2j+1 of one n-tile, the weight tile
// multicast when both blocks share an expert):
//   - odd shapes (E not a power of two, so pairs that straddle two experts; odd block counts, so
//     ghost CTAs past the last block) against fp64, element by element, block_m 64 and 128;
//   - S1-S3 at M = 1000 and 4096: the bits of cooperative (the same wgmma sequence per tile).
TEST_F(Sm90Gather, ClusterPairsMatchFp64AndGiveTheBitsOfCooperative) {
  on_odd_cluster_shapes(*tb_, 7, 11, [&](MoeProblem const& p, std::vector<double> const& ref) {
    for (int bm : {64, 128}) {
      MoeConfig c = wgmma(bm, bm == 64 ? 128 : 64, bm == 64 ? 192 : 96, 8, 3, 2,
                          core::Schedule::kTmaWarpSpecialized);
      c.gemm1.launch.cluster_m = c.gemm2.launch.cluster_m = 2;
      ASSERT_TRUE(tb_->backend().can_implement(p, c).ok()) << core::short_string(c);
      expect_matches_fp64(*tb_, c, ref, "cluster 2x1, " + core::to_string(p));
    }
  });
  on_benchmark_shapes_mid_m(*tb_, [&](MoeProblem const& p) {
    MoeConfig coop;
    for (auto* k : {&coop.gemm1, &coop.gemm2}) {
      const bool wide = k == &coop.gemm2 || !core::is_gated(p.activation);
      k->tile = {.block_m = 128, .block_n = wide ? 256 : 128, .block_k = 64, .group_m = 8};
      k->pipeline = {.num_warps = 8, .num_stages = 4, .split_k = 1};
      k->launch.schedule = core::Schedule::kCooperative;
    }
    MoeConfig cl = coop;
    for (auto* k : {&cl.gemm1, &cl.gemm2}) {
      k->launch.schedule = core::Schedule::kTmaWarpSpecialized;
      k->launch.cluster_m = 2;
    }
    const std::string what = core::to_string(p);
    EXPECT_EQ(expect_in_band_and_deterministic(*tb_, cl, "tma_ws cluster 2x1, " + what),
              expect_in_band_and_deterministic(*tb_, coop, "cooperative, " + what))
        << "tma_ws cluster 2x1 vs cooperative, " << what;
  });
}

// GEMM2 on CTA pairs over n-tiles (launch.cluster_n = 2: n-tiles 2i and 2i + 1 of one m-block,
// the h rows multicast by rank 0 when both exist):
//   - odd shapes against fp64, element by element: GEMM2 block_m 64 (split N), 128 and 256 (under
//     a GEMM1 of 128-row sub-blocks), with odd n-tile counts (a ghost CTA past the last n-tile:
//     K = 320 or 448 over 64-column tiles) and even ones (96 columns at K = 320);
//   - S1-S3 at M = 1000 and 4096: the bits of the same GEMM2 tile without clusters.
TEST_F(Sm90Gather, ClusterNPairsMatchFp64AndGiveTheBitsOfUnclusteredGemm2) {
  auto gemm2 = [](int bm, int bn) {
    core::KernelConfig k;
    k.tile = {.block_m = bm, .block_n = bn, .block_k = 64, .group_m = 8};
    k.pipeline = {.num_warps = 8, .num_stages = bm == 64 ? 3 : 4, .split_k = 1};
    k.launch.schedule = core::Schedule::kTmaWarpSpecialized;
    k.launch.cluster_n = 2;
    return k;
  };
  on_odd_cluster_shapes(*tb_, 9, 13, [&](MoeProblem const& p, std::vector<double> const& ref) {
    for (int bm : {64, 128, 256}) {
      for (int bn : {64, 96}) {
        MoeConfig c = wgmma(128, 64, bn, 8, 4, 8, core::Schedule::kTmaWarpSpecialized);
        c.gemm2 = gemm2(bm, bm == 64 ? 2 * bn : bn);
        if (bm == 64) c.gemm1.tile.block_m = 64, c.gemm1.tile.block_n = 128;
        ASSERT_TRUE(tb_->backend().can_implement(p, c).ok()) << core::short_string(c);
        expect_matches_fp64(
            *tb_, c, ref, "gemm2 cluster 1x2 " + core::short_string(c) + ", " + core::to_string(p));
      }
    }
  });
  on_benchmark_shapes_mid_m(*tb_, [&](MoeProblem const& p) {
    const int bn1 = core::is_gated(p.activation) ? 64 : 128;
    for (int bm : {128, 256}) {
      MoeConfig plain =
          wgmma(128, bn1, bm == 256 ? 128 : 224, 8, 4, 8, core::Schedule::kTmaWarpSpecialized);
      plain.gemm2.tile.block_m = bm;
      MoeConfig cl = plain;
      cl.gemm2.launch.cluster_n = 2;
      const std::string what = core::short_string(cl) + ", " + core::to_string(p);
      EXPECT_EQ(expect_in_band_and_deterministic(*tb_, cl, "gemm2 cluster 1x2, " + what),
                expect_in_band_and_deterministic(*tb_, plain, "gemm2 1x1, " + what))
          << "gemm2 cluster 1x2 vs 1x1, " << what;
    }
  });
}

// Runs body(p) on S1-S3 at M 100 / 512 / 2048 / 4096 (experts of about 4 to 1024 pairs: one to
// several blocks of 128 to 256 rows, the last mostly padding), each prepared in `tb` with fresh
// uniform routing (seed seed + M) and data (seed data + M).
template <class Body>
void for_benchmark_shapes_at_mid_m(CudaTestbed& tb, int seed, int data, Body body) {
  for (auto base : {moe_shape(128, 2688, 1856, 6, Activation::kRelu2),
                    moe_shape(128, 2048, 768, 8, Activation::kSiluGated),
                    moe_shape(8, 4096, 14336, 2, Activation::kSiluGated)}) {
    for (int64_t m : {100, 512, 2048, 4096}) {
      MoeProblem p = base;
      p.num_tokens = m;
      core::RoutingProfile r;
      r.seed = seed + m;
      ASSERT_TRUE(tb.prepare(p, r, data + m).ok()) << core::to_string(p);
      body(p);
    }
  }
}

// tma_ws at block_m 256: an expert of up to 256 pairs is one tile per n-tile, each warpgroup
// multiplies only its 64-row halves that hold real rows. At the benchmark shapes' tail-heavy M
// (an expert's last 128-row block mostly padding) it gives the bits of block_m 128 at the same
// block_n (the same wgmma sequence per 64-row half), both within the bf16 band of the GPU
// reference; so does GEMM2 at 256 under GEMM1 at 128 (GEMM1 walks the 256-row blocks in 128-row
// sub-blocks, skipping those of padding). The odd shapes against fp64 are in
// MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM.
TEST_F(Sm90Gather, Tile256SkipsPaddingHalvesAndGivesTheBitsOfTile128) {
  for_benchmark_shapes_at_mid_m(*tb_, 5, 3, [&](MoeProblem const& p) {
    const int bn1 = core::is_gated(p.activation) ? 64 : 128;
    const MoeConfig t128 = wgmma(128, bn1, 128, 8, 4, 8, core::Schedule::kTmaWarpSpecialized);
    const MoeConfig t256 = wgmma(256, bn1, 128, 8, 4, 8, core::Schedule::kTmaWarpSpecialized);
    MoeConfig mixed = t256;
    mixed.gemm1 = t128.gemm1;
    ASSERT_TRUE(tb_->backend().can_implement(p, t256).ok()) << core::short_string(t256);
    ASSERT_TRUE(tb_->backend().can_implement(p, mixed).ok()) << core::short_string(mixed);
    const std::string what = core::to_string(p);
    const std::string digest128 =
        expect_in_band_and_deterministic(*tb_, t128, "tma_ws 128, " + what);
    EXPECT_EQ(expect_in_band_and_deterministic(*tb_, t256, "tma_ws 256, " + what), digest128)
        << "block_m 256 vs 128, " << what;
    EXPECT_EQ(expect_in_band_and_deterministic(*tb_, mixed, "GEMM1 128 GEMM2 256, " + what),
              digest128)
        << "GEMM1 128 in sub-blocks + GEMM2 256 vs 128, " << what;
  });
}

// tma_ws at block_m 192: three warpgroups of 64 rows, an expert of up to 192 pairs one tile per
// n-tile, a warpgroup whose rows are padding idles. At the benchmark shapes (M 100 / 512 / 2048 /
// 4096: experts of about 4 to 1024 pairs, so one to several 192-row blocks, the last mostly
// padding) it gives the bits of block_m 128 at the same block_n (the same wgmma sequence per
// 64-row half), both within the bf16 band of the GPU reference. The odd shapes against fp64 are in
// MatchesFp64ReferenceOnSmallAndOddShapesAtEveryEdgeM.
TEST_F(Sm90Gather, Tile192IdlesPaddingWarpgroupsAndGivesTheBitsOfTile128) {
  for_benchmark_shapes_at_mid_m(*tb_, 9, 4, [&](MoeProblem const& p) {
    const int bn1 = core::is_gated(p.activation) ? 96 : 192;
    const MoeConfig t128 = wgmma(128, bn1, 128, 8, 4, 8, core::Schedule::kTmaWarpSpecialized);
    const MoeConfig t192 = wgmma(192, bn1, 128, 12, 4, 8, core::Schedule::kTmaWarpSpecialized);
    ASSERT_TRUE(tb_->backend().can_implement(p, t128).ok()) << core::short_string(t128);
    ASSERT_TRUE(tb_->backend().can_implement(p, t192).ok()) << core::short_string(t192);
    const std::string what = core::to_string(p);
    EXPECT_EQ(expect_in_band_and_deterministic(*tb_, t192, "tma_ws 192, " + what),
              expect_in_band_and_deterministic(*tb_, t128, "tma_ws 128, " + what))
        << "block_m 192 vs 128, " << what;
  });
}

}  // namespace
}  // namespace moetune::kernels::cuda
