// CPU-side tests of the cuda backend's search space (label cpu: no GPU, no NVRTC): the per-GEMM
// groups of 128, 192 and 256 rows, swap-AB and cluster candidates each offered where an expert's
// pairs fill its tiles and not elsewhere, powers of two only, and every candidate implementable
// with its group's base.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>

#include "jit_test_util.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_space.hpp"
#include "kernels/cuda/sm90_swap_geometry.hpp"
#include "moe_shape.hpp"

namespace moetune::kernels::cuda {
namespace {

using testing::expect_refused;
using testing::moe_shape;
using testing::s1;
using testing::s1_with;

// The per-GEMM space has a group of 192 (both GEMMs; GEMM1 also on swap-AB) where an expert holds
// more than 96 and at most 192 pairs (S2 M=2048 and S3 M=512: 128; S1 M=4096: 192), each config
// implementable with the group's base; none at S2 M=1024 (64 pairs per expert) or S3 M=1024 (256).
TEST(Sm90Space, OffersBothGemmsAt192WhereExpertsHoldMoreThan96To192Pairs) {
  CudaBackend backend{core::DeviceInfo{}};
  auto group192 = [&](core::MoeProblem const& p) -> std::optional<core::GemmSpace> {
    for (auto const& s : backend.gemm_search_space(p)) {
      if (s.block_m == 192) return s;
    }
    return std::nullopt;
  };
  core::MoeProblem s2 = moe_shape(128, 2048, 768, 8, core::Activation::kSiluGated, 2048);
  core::MoeProblem s3 = moe_shape(8, 4096, 14336, 2, core::Activation::kSiluGated, 512);
  core::MoeProblem s1_4096 = s1_with(core::Activation::kRelu2, 4096);
  for (core::MoeProblem const& p : {s2, s3, s1_4096}) {
    auto s = group192(p);
    ASSERT_TRUE(s.has_value()) << core::to_string(p);
    EXPECT_FALSE(s->gemm1.empty());
    EXPECT_FALSE(s->gemm2.empty());
    // GEMM1 on swap-AB too (the layer's best at S3 M=512), the base's GEMM1 a tma_ws one.
    EXPECT_EQ(std::count_if(s->gemm1.begin(), s->gemm1.end(), is_swap_ws), 2) << core::to_string(p);
    EXPECT_FALSE(is_swap_ws(s->base.gemm1));
    for (auto const& k : s->gemm1) {
      EXPECT_EQ(k.tile.block_m, 192) << core::short_string(k);
      ASSERT_TRUE(sm90_can_implement(p, {.gemm1 = k, .gemm2 = s->base.gemm2}).ok())
          << core::short_string(k);
    }
    for (auto const& k : s->gemm2) {
      EXPECT_EQ(k.tile.block_m, 192) << core::short_string(k);
      ASSERT_TRUE(sm90_can_implement(p, {.gemm1 = s->base.gemm1, .gemm2 = k}).ok())
          << core::short_string(k);
    }
  }
  s2.num_tokens = 1024;
  EXPECT_FALSE(group192(s2).has_value());
  s3.num_tokens = 1024;
  EXPECT_FALSE(group192(s3).has_value());
}

// The space offers powers of two (and 192) only: a block sized to the experts' pairs, e.g. 48 at
// S3 M=128's 32 +- 5.3 pairs, lost everywhere it was measured. mma.sync still implements any
// multiple of 16 up to 128 (tables may name one); cooperative refuses it, naming the rule.
TEST(Sm90Space, OffersPowersOfTwoThoughMmaSyncRunsAMultipleOf16) {
  CudaBackend backend{core::DeviceInfo{}};
  core::MoeProblem s3 = moe_shape(8, 4096, 14336, 2, core::Activation::kSiluGated, 128);
  core::MoeProblem s2 = moe_shape(128, 2048, 768, 8, core::Activation::kSiluGated, 512);
  for (auto const& p : {s3, s2}) {
    const auto space = backend.gemm_search_space(p);
    ASSERT_FALSE(space.empty());
    for (auto const& s : space) {
      EXPECT_TRUE(std::has_single_bit(static_cast<unsigned>(s.block_m)) || s.block_m == 192)
          << s.block_m;
    }
  }
  core::KernelConfig sized;
  sized.tile = {.block_m = 48, .block_n = 64, .block_k = 64, .group_m = 8};
  sized.pipeline = {.num_warps = 4, .num_stages = 3, .split_k = 1};
  sized.launch.schedule = core::Schedule::kAuto;
  EXPECT_TRUE(sm90_can_implement(s3, {.gemm1 = sized, .gemm2 = sized}).ok());
  core::KernelConfig coop = sized;  // negative twin: the wgmma main loop takes 64 or 128 rows
  coop.launch.schedule = core::Schedule::kCooperative;
  expect_refused(s3, {.gemm1 = coop, .gemm2 = coop}, "tile.block_m = 48");
  core::KernelConfig odd = sized;  // negative twin: not a multiple of 16
  odd.tile.block_m = 40;
  expect_refused(s3, {.gemm1 = odd, .gemm2 = odd}, "tile.block_m = 40");
}

// The search space offers CTA pairs at block_m 128 for both GEMMs where an expert has at least two
// 128-row blocks (S3 at M = 1024: 256 pairs per expert), never with split-K, and none below
// (S3 at M = 512: 128 pairs per expert) or at block_m 64.
TEST(Sm90Space, OffersClusterPairsWhereAnExpertHasTwo128RowBlocks) {
  core::MoeProblem p = moe_shape(8, 4096, 14336, 2, core::Activation::kSiluGated, 64);  // S3
  auto count = [&](int64_t m, int bm, bool is_gemm1) {
    p.num_tokens = m;
    int pairs = 0;
    for (core::KernelConfig const& k : sm90_gemm_candidates(p, bm, is_gemm1)) {
      if (k.launch.cluster_m != 2) continue;
      ++pairs;
      EXPECT_EQ(k.pipeline.split_k, 1) << core::short_string(k);
      EXPECT_EQ(k.launch.schedule, core::Schedule::kTmaWarpSpecialized);
      EXPECT_LE(k.pipeline.num_stages, 5);
    }
    return pairs;
  };
  for (bool is_gemm1 : {true, false}) {
    EXPECT_GT(count(1024, 128, is_gemm1), 0) << is_gemm1;
    EXPECT_EQ(count(512, 128, is_gemm1), 0) << is_gemm1;
    EXPECT_EQ(count(4096, 64, is_gemm1), 0) << is_gemm1;
  }
}

// The per-GEMM space has a group of 256 where an expert's rows fill one to three 128-row blocks
// (S3 M=512: 128 pairs per expert; S1 M=4096: 192): GEMM2 tma_ws 256-row tiles under tma_ws GEMM1s
// of 128-row sub-blocks (no clusters), two swap-AB GEMM1s and two swap-AB GEMM2s of 256 pairs per
// tile (group_m 1 and 8), each implementable with the group's base, whose GEMMs are tma_ws ones;
// none at S1 M=1024 (48 pairs per expert) or S3 M=4096 (1024).
TEST(Sm90Space, OffersGemm2At256UnderGemm1SubBlocksWhereExpertsFillOneToThreeBlocks) {
  CudaBackend backend{core::DeviceInfo{}};
  auto group256 = [&](core::MoeProblem const& p) -> std::optional<core::GemmSpace> {
    for (auto const& s : backend.gemm_search_space(p)) {
      if (s.block_m == 256) return s;
    }
    return std::nullopt;
  };
  core::MoeProblem s3 = moe_shape(8, 4096, 14336, 2, core::Activation::kSiluGated, 64);
  for (core::MoeProblem p : {s3, s1()}) {
    p.num_tokens = p.num_experts == 8 ? 512 : 4096;
    auto s = group256(p);
    ASSERT_TRUE(s.has_value()) << core::to_string(p);
    EXPECT_FALSE(s->gemm1.empty());
    EXPECT_FALSE(s->gemm2.empty());
    EXPECT_FALSE(s->base.gemm1.launch.swap_ab);
    int swaps = 0;
    for (auto const& k : s->gemm1) {
      EXPECT_EQ(k.launch.schedule, core::Schedule::kTmaWarpSpecialized) << core::short_string(k);
      EXPECT_EQ(k.launch.cluster_m, 1);
      if (k.launch.swap_ab) {
        ++swaps;
        EXPECT_EQ(k.tile.block_m, 256) << core::short_string(k);
        EXPECT_EQ(k.pipeline.num_warps, 8) << core::short_string(k);
      } else {
        EXPECT_EQ(k.tile.block_m, 128) << core::short_string(k);
      }
      ASSERT_TRUE(sm90_can_implement(p, {.gemm1 = k, .gemm2 = s->base.gemm2}).ok())
          << core::short_string(k);
    }
    EXPECT_EQ(swaps, 2) << core::to_string(p);
    EXPECT_FALSE(s->base.gemm2.launch.swap_ab);
    swaps = 0;
    for (auto const& k : s->gemm2) {
      EXPECT_EQ(k.tile.block_m, 256) << core::short_string(k);
      if (k.launch.swap_ab) {
        ++swaps;
        EXPECT_EQ(k.pipeline.num_warps, 8) << core::short_string(k);
      }
      ASSERT_TRUE(sm90_can_implement(p, {.gemm1 = s->base.gemm1, .gemm2 = k}).ok())
          << core::short_string(k);
    }
    EXPECT_EQ(swaps, 2) << core::to_string(p);
  }
  core::MoeProblem p = s1();
  p.num_tokens = 1024;
  EXPECT_FALSE(group256(p).has_value());
  s3.num_tokens = 4096;
  EXPECT_FALSE(group256(s3).has_value());
}

// The group of 128 offers two swap-AB GEMM2s (128 pairs per tile, three consumer warpgroups,
// group_m 1 and 8), implementable with the group's base GEMM1, where an expert holds 48 to 160
// pairs (S1 M=2048: 96; S2 M=1024: 64), and none at S1 M=8192 (384) or S2 M=256 (16).
TEST(Sm90Space, OffersSwapAbGemm2sAt128RowsWhereExpertsHold48To160Pairs) {
  CudaBackend backend{core::DeviceInfo{}};
  auto swap_gemm2s = [&](core::MoeProblem const& p) {
    int n = 0;
    for (auto const& s : backend.gemm_search_space(p)) {
      if (s.block_m != 128) continue;
      for (auto const& k : s.gemm2) {
        if (!k.launch.swap_ab) continue;
        ++n;
        EXPECT_EQ(k.pipeline.num_warps, 12) << core::short_string(k);
        EXPECT_TRUE(sm90_can_implement(p, {.gemm1 = s.base.gemm1, .gemm2 = k}).ok())
            << core::short_string(k);
      }
      EXPECT_FALSE(s.base.gemm2.launch.swap_ab);
    }
    return n;
  };
  core::MoeProblem p = s1();
  p.num_tokens = 2048;
  EXPECT_EQ(swap_gemm2s(p), 2);
  p.num_tokens = 8192;
  EXPECT_EQ(swap_gemm2s(p), 0);
  core::MoeProblem s2 = moe_shape(128, 2048, 768, 8, core::Activation::kSiluGated, 1024);
  EXPECT_EQ(swap_gemm2s(s2), 2);
  s2.num_tokens = 256;
  EXPECT_EQ(swap_gemm2s(s2), 0);
}

}  // namespace
}  // namespace moetune::kernels::cuda
