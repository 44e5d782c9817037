// cpu_tiled's rules: every rejected knob names itself, the default config is always accepted,
// and the search space survives pruning.
#include "kernels/cpu/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "cpu_test_util.hpp"
#include "kernels/cpu/output_check.hpp"
#include "kernels/testbed.hpp"

namespace moetune::kernels::cpu {
namespace {

using testing::cpu_kernel;

core::MoeProblem demo_problem(int64_t m) {
  return testing::small_problem(m, 8, 256, 256, 2, core::Activation::kSiluGated);
}

/// The reason can_implement gives for the default config changed by `edit`, or "ok".
std::string reason(std::function<void(core::MoeConfig&)> const& edit,
                   core::MoeProblem const& p =
                       testing::small_problem(16, 8, 128, 96, 2, core::Activation::kSiluGated)) {
  core::MoeConfig c{cpu_kernel(16, 64, 64), cpu_kernel(16, 64, 64)};
  edit(c);
  core::Status const s = cpu_tiled_can_implement(p, c);
  if (s.ok()) return "ok";
  EXPECT_EQ(s.error().code, core::ErrorCode::kUnsupported);
  EXPECT_EQ(s.error().where, "cpu_tiled");
  return s.error().message;
}

TEST(CpuTiledCanImplement, AcceptsThePlainConfig) {
  EXPECT_EQ(reason([](core::MoeConfig&) {}), "ok");
}

TEST(CpuTiledCanImplement, RejectsBlockSizesThatAreNotPowersOfTwoInRange) {
  EXPECT_EQ(reason([](auto& c) { c.gemm1.tile.block_m = c.gemm2.tile.block_m = 12; }),
            "gemm1.tile.block_m = 12 is not a power of two in [8, 256]; use 8, 16, 32, 64, 128 or "
            "256");
  EXPECT_EQ(reason([](auto& c) { c.gemm2.tile.block_n = 512; }),
            "gemm2.tile.block_n = 512 is not a power of two in [8, 256]; use 8, 16, 32, 64, 128 or "
            "256");
  EXPECT_EQ(reason([](auto& c) { c.gemm1.tile.block_k = 4; }),
            "gemm1.tile.block_k = 4 is not a power of two in [8, 256]; use 8, 16, 32, 64, 128 or "
            "256");
}

TEST(CpuTiledCanImplement, RejectsDifferentBlockMBecauseAlignPadsToIt) {
  EXPECT_EQ(reason([](auto& c) { c.gemm2.tile.block_m = 32; }),
            "gemm1.tile.block_m = 16 differs from gemm2.tile.block_m = 32; they must be equal "
            "since align pads each expert to block_m; set both to the same value");
}

TEST(CpuTiledCanImplement, RejectsSplitKBeyondTheBlockKSteps) {
  EXPECT_EQ(reason([](auto& c) { c.gemm1.pipeline.split_k = 4; }),
            "gemm1.pipeline.split_k = 4 exceeds ceil(K / block_k) = 2 (K = 128, block_k = 64); "
            "use split_k <= 2 so every split gets a block_k step");
  EXPECT_EQ(reason([](auto& c) { c.gemm2.pipeline.split_k = 3; }),
            "gemm2.pipeline.split_k = 3 is not one of 1, 2, 4, 8; use one of those");
}

TEST(CpuTiledCanImplement, RejectsEveryKnobTheFamilyLacksByName) {
  EXPECT_EQ(reason([](auto& c) { c.gemm1.launch.swap_ab = true; }),
            "gemm1.launch.swap_ab = 1 is a knob cpu_tiled does not have (allowed: 0); set it to 0 "
            "or use the cuda backend");
  EXPECT_EQ(reason([](auto& c) { c.gemm2.launch.cluster_m = 2; }),
            "gemm2.launch.cluster_m = 2 is a knob cpu_tiled does not have (allowed: 1); set it to "
            "1 or use the cuda backend");
  EXPECT_EQ(reason([](auto& c) { c.gemm1.launch.cluster_n = 4; }),
            "gemm1.launch.cluster_n = 4 is a knob cpu_tiled does not have (allowed: 1); set it to "
            "1 or use the cuda backend");
  EXPECT_EQ(reason([](auto& c) { c.gemm1.launch.schedule = core::Schedule::kPingpong; }),
            "gemm1.launch.schedule = pingpong is a knob cpu_tiled does not have (allowed: auto); "
            "set it to auto or use the cuda backend");
  EXPECT_EQ(reason([](auto& c) { c.gemm2.pipeline.num_warps = 8; }),
            "gemm2.pipeline.num_warps = 8 is a knob cpu_tiled does not have (allowed: 4); set it "
            "to 4 or use the cuda backend");
  EXPECT_EQ(reason([](auto& c) { c.gemm1.pipeline.num_stages = 3; }),
            "gemm1.pipeline.num_stages = 3 is a knob cpu_tiled does not have (allowed: 2); set it "
            "to 2 or use the cuda backend");
}

TEST(CpuTiledCanImplement, RejectsOutOfRangeGroupMAndThreads) {
  EXPECT_EQ(reason([](auto& c) { c.gemm1.tile.group_m = 0; }),
            "gemm1.tile.group_m = 0 is outside [1, 64]; use 1 (row-major raster) or 8");
  EXPECT_EQ(reason([](auto& c) { c.gemm2.launch.num_threads = -1; }),
            "gemm2.launch.num_threads = -1 is outside [0, 256]; use 0 for all hardware threads");
}

TEST(CpuTiledCanImplement, RejectsFp16AndInvalidProblems) {
  core::MoeProblem p =
      testing::small_problem(4, 8, 128, 96, 2, core::Activation::kSiluGated, core::DType::kFp16);
  EXPECT_EQ(reason([](auto&) {}, p),
            "problem.dtype = fp16 is not supported (allowed: bf16, fp32); use bf16 or fp32");
  p.dtype = core::DType::kBf16;
  p.top_k = 9;
  EXPECT_FALSE(cpu_tiled_can_implement(p, cpu_tiled_default_config(p)).ok());
}

TEST(CpuTiledDefaultConfig, IsAcceptedForEveryShapeAndTokenCount) {
  int checked = 0;
  for (int64_t e : {1, 2, 8, 64, 256}) {
    for (int64_t k : {1, 7, 64, 100, 2048, 7168}) {
      for (int64_t inter : {1, 33, 96, 768, 2048}) {
        for (int64_t top_k : {int64_t{1}, std::min<int64_t>(e, 8)}) {
          for (int64_t m : {0, 1, 2, 15, 16, 17, 100, 1000, 4096, 65536, 1 << 20}) {
            for (auto act : {core::Activation::kSiluGated, core::Activation::kRelu2}) {
              core::MoeProblem const p = testing::small_problem(m, e, k, inter, top_k, act);
              core::Status const s = cpu_tiled_can_implement(p, cpu_tiled_default_config(p));
              ASSERT_TRUE(s.ok()) << core::to_string(p) << ": " << s.error().to_string();
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 5 * 6 * 5 * 2 * 11 * 2);
}

TEST(CpuTiledDefaultConfig, FollowsTheDocumentedBlockMRule) {
  // P = ceil(M * top_k / E) with E = 8, top_k = 2.
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(1)).gemm1.tile.block_m, 8);     // P = 1
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(64)).gemm1.tile.block_m, 16);   // P = 16
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(128)).gemm1.tile.block_m, 32);  // P = 32
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(129)).gemm1.tile.block_m, 64);  // P = 33
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(4096)).gemm2.tile.group_m, 8);  // P = 1024
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(64)).gemm2.tile.group_m, 1);
}

TEST(CpuTiledDefaultConfig, RunsTinyProblemsOnOneThreadAndTheRestOnAll) {
  // 2 * M * top_k * (N1*K + K*I) = M * 786432 flops: M = 10 is below 8 MFLOP, M = 11 above.
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(1)).gemm1.launch.num_threads, 1);
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(10)).gemm2.launch.num_threads, 1);
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(11)).gemm1.launch.num_threads, 0);
  EXPECT_EQ(cpu_tiled_default_config(demo_problem(4096)).gemm2.launch.num_threads, 0);
}

TEST(CpuTiledBatchInvariantConfig, IsTheDefaultWithoutSplitKAtEveryM) {
  // Only split_k changes an element's sum order on cpu_tiled (cpu_backend.hpp); the tiles may
  // follow M. tests/runtime/runner_batch_invariant_test.cpp checks the bits.
  for (int64_t m : {0, 1, 7, 64, 1000, 4096}) {
    core::MoeProblem const p = demo_problem(m);
    auto c = cpu_tiled_batch_invariant_config(p);
    ASSERT_TRUE(c.ok()) << c.error().to_string();
    EXPECT_EQ(*c, cpu_tiled_default_config(p)) << "M=" << m;
    EXPECT_EQ(c->gemm1.pipeline.split_k, 1) << "M=" << m;
    EXPECT_EQ(c->gemm2.pipeline.split_k, 1) << "M=" << m;
    EXPECT_EQ(*CpuBackend{}.batch_invariant_config(p), *c) << "M=" << m;
  }
  core::MoeProblem fp8 = demo_problem(4);
  fp8.quant = core::Quant::kFp8Block;
  auto refused = cpu_tiled_batch_invariant_config(fp8);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().where, "cpu_tiled");
}

TEST(CpuTiledSearchSpace, EntriesAreDistinctAndSurvivorsOfPruningRunCorrectly) {
  auto testbed = make_testbed("cpu");
  ASSERT_TRUE(testbed.ok());
  for (int64_t m : {1, 64, 4096}) {
    core::MoeProblem const p = demo_problem(m);
    std::vector<core::MoeConfig> const space = cpu_tiled_search_space(p);
    EXPECT_GE(space.size(), 50u) << "M=" << m;
    EXPECT_LE(space.size(), 160u) << "M=" << m;
    std::vector<core::MoeConfig> survivors;
    for (auto const& c : space) {
      EXPECT_EQ(std::count(space.begin(), space.end(), c), 1) << core::to_string(c);
      if (cpu_tiled_can_implement(p, c).ok()) survivors.push_back(c);
    }
    EXPECT_GE(survivors.size(), 50u) << "M=" << m;
    EXPECT_TRUE(std::any_of(survivors.begin(), survivors.end(),
                            [](auto const& c) { return !(c.gemm1 == c.gemm2); }));
    if (m == 4096) continue;  // running 100+ configs at M = 4096 would cost seconds each
    ASSERT_TRUE((*testbed)->prepare(p, {}, testing::test_seed()).ok());
    for (auto const& c : survivors) {
      auto r = (*testbed)->check(c);
      ASSERT_TRUE(r.ok()) << r.error().to_string();
      EXPECT_TRUE(check_passed(*r, tolerance_for(p.dtype)))
          << "M=" << m << " " << core::to_string(c) << " rel_l2=" << r->rel_l2_error;
    }
  }
}

TEST(CpuTiledSearchSpace, OffersSplitKOnlyForTinyBatches) {
  auto has_split = [](std::vector<core::MoeConfig> const& space) {
    return std::any_of(space.begin(), space.end(),
                       [](auto const& c) { return c.gemm1.pipeline.split_k > 1; });
  };
  EXPECT_TRUE(has_split(cpu_tiled_search_space(demo_problem(1))));
  EXPECT_FALSE(has_split(cpu_tiled_search_space(demo_problem(4096))));
}

}  // namespace
}  // namespace moetune::kernels::cpu
