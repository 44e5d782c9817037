// cpu_tiled against the fp64 reference over generated cases (STYLE 21), and its determinism.
#include "kernels/cpu/cpu_moe.hpp"

#include <gtest/gtest.h>

#include <tuple>

#include "cpu_test_util.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/reference.hpp"

namespace moetune::kernels::cpu {
namespace {

using testing::cpu_kernel;
using testing::small_problem;

struct Shape {
  int64_t e, k, inter, top_k;
};
constexpr Shape kEvenShape{8, 128, 96, 2};
constexpr Shape kOddShape{6, 192, 64, 3};
constexpr int64_t kTokenCounts[] = {0, 1, 2, 3, 7, 15, 16, 17, 63, 64, 65, 255};
constexpr core::Activation kActivations[] = {core::Activation::kSiluGated, core::Activation::kRelu2,
                                             core::Activation::kGelu, core::Activation::kGeluTanh,
                                             core::Activation::kSwigluOai};

/// Generates the case, runs `config` (default_config when null) and expects a pass.
void expect_matches_reference(core::MoeProblem const& p, core::RoutingProfile const& routing,
                              core::MoeConfig const* config = nullptr) {
  uint64_t const seed = testing::test_seed();
  core::MoeConfig const c = config != nullptr ? *config : cpu_tiled_default_config(p);
  SCOPED_TRACE(testing::describe(p, routing, seed, c));
  auto data = generate_moe_data(p, routing, seed);
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  auto ref = reference_moe(p, data->view());
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  testing::RunOutput out = testing::run_cpu(*data, c);
  ASSERT_TRUE(out.status.ok()) << out.status.error().to_string();
  Tolerance const tol = tolerance_for(p.dtype);
  CheckResult const r = check_output(p.dtype, out.data(), *ref, tol);
  EXPECT_TRUE(check_passed(r, tol))
      << "rel_l2=" << r.rel_l2_error << " tol=" << tol.rel_l2 << " written=" << r.all_written
      << " finite=" << r.all_finite << " " << testing::describe_bad(*data, out.data(), *ref, r);
}

class CpuMoeSweep
    : public ::testing::TestWithParam<std::tuple<core::Activation, Shape, core::DType>> {};

TEST_P(CpuMoeSweep, MatchesFp64ReferenceForEveryTokenCount) {
  auto const [act, shape, dtype] = GetParam();
  for (int64_t m : kTokenCounts) {
    core::MoeProblem const p =
        small_problem(m, shape.e, shape.k, shape.inter, shape.top_k, act, dtype);
    expect_matches_reference(p, core::RoutingProfile{});
  }
}

TEST_P(CpuMoeSweep, MatchesFp64ReferenceWithSplitKAndRaggedTiles) {
  auto const [act, shape, dtype] = GetParam();
  // block_n 32/block_k 64 leave ragged last tiles on I = 96 and K = 192; split_k 2 on both.
  core::MoeConfig const c{cpu_kernel(16, 32, 64, 2, 3, 2), cpu_kernel(16, 64, 32, 2, 2, 1)};
  for (int64_t m : {1, 17, 65}) {
    core::MoeProblem const p =
        small_problem(m, shape.e, shape.k, shape.inter, shape.top_k, act, dtype);
    expect_matches_reference(p, core::RoutingProfile{}, &c);
  }
}

std::string sweep_name(::testing::TestParamInfo<CpuMoeSweep::ParamType> const& info) {
  auto const [act, shape, dtype] = info.param;
  return std::string(core::to_string(act)) + "_E" + std::to_string(shape.e) + "K" +
         std::to_string(shape.k) + "I" + std::to_string(shape.inter) + "_" +
         std::string(core::to_string(dtype));
}

INSTANTIATE_TEST_SUITE_P(
    AllActivations, CpuMoeSweep,
    ::testing::Combine(::testing::ValuesIn(kActivations), ::testing::Values(kEvenShape, kOddShape),
                       ::testing::Values(core::DType::kBf16, core::DType::kFp32)),
    sweep_name);

// Biases on both GEMMs (gpt-oss), with split-K on both so the bias is added once, after the sum.
TEST_P(CpuMoeSweep, MatchesFp64ReferenceWithBiases) {
  auto const [act, shape, dtype] = GetParam();
  core::MoeConfig const split{cpu_kernel(16, 32, 64, 2, 3, 2), cpu_kernel(16, 64, 32, 2, 2, 1)};
  for (int64_t m : {1, 17, 65}) {
    core::MoeProblem p = small_problem(m, shape.e, shape.k, shape.inter, shape.top_k, act, dtype);
    p.has_bias = true;
    expect_matches_reference(p, core::RoutingProfile{});
    expect_matches_reference(p, core::RoutingProfile{}, &split);
  }
}

TEST(CpuMoe, BiasesChangeTheLayerAndAreRequiredWhenTheProblemHasThem) {
  core::MoeProblem p = small_problem(9, 8, 128, 96, 2, core::Activation::kSwigluOai);
  p.has_bias = true;
  auto data = generate_moe_data(p, core::RoutingProfile{}, testing::test_seed());
  ASSERT_TRUE(data.ok());
  auto with = reference_moe(p, data->view());
  core::MoeProblem q = p;
  q.has_bias = false;
  MoeInputsView v = data->view();
  v.b1 = {};
  v.b2 = {};
  auto without = reference_moe(q, v);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_NE(*with, *without);  // the negative twin: the biases reach the reference
  CpuMoeArgs args{.x = data->x_data(),
                  .topk_ids = data->routing.topk_ids.data(),
                  .topk_weights = data->routing.topk_weights.data(),
                  .w1 = data->w1_data(),
                  .w2 = data->w2_data(),
                  .out = nullptr};
  std::vector<uint16_t> out(static_cast<size_t>(p.num_tokens * p.hidden_size));
  args.out = out.data();
  CpuMoeWorkspace ws;
  core::Status const s = run_cpu_moe(p, cpu_tiled_default_config(p), args, ws, FastPaths{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("has_bias is set but b1 or b2 is null"), std::string::npos)
      << s.error().message;
}

TEST(CpuMoe, MatchesReferenceWhenEveryTokenGoesToOneExpert) {
  core::RoutingProfile routing;
  routing.kind = core::RoutingKind::kSingleExpert;
  for (int64_t m : {1, 16, 65}) {
    core::MoeProblem const p = small_problem(m, 8, 128, 96, 1, core::Activation::kSiluGated);
    auto data = generate_moe_data(p, routing, testing::test_seed());
    ASSERT_TRUE(data.ok());
    ASSERT_EQ(core::experts_hit(data->routing, p.num_experts), 1);
    expect_matches_reference(p, routing);
  }
}

TEST(CpuMoe, MatchesReferenceWhenMostExpertsGetZeroTokens) {
  core::MoeProblem const p = small_problem(3, 8, 128, 96, 1, core::Activation::kRelu2);
  auto data = generate_moe_data(p, core::RoutingProfile{}, testing::test_seed());
  ASSERT_TRUE(data.ok());
  ASSERT_LE(core::experts_hit(data->routing, p.num_experts), 3);
  expect_matches_reference(p, core::RoutingProfile{});
}

TEST(CpuMoe, MatchesReferenceWithTopKEqualToExpertCount) {
  core::MoeProblem const p = small_problem(17, 6, 192, 64, 6, core::Activation::kGelu);
  expect_matches_reference(p, core::RoutingProfile{});
}

TEST(CpuMoe, TwoRunsGiveIdenticalBits) {
  core::MoeProblem const p = small_problem(65, 8, 128, 96, 2, core::Activation::kSiluGated);
  auto data = generate_moe_data(p, core::RoutingProfile{}, testing::test_seed());
  ASSERT_TRUE(data.ok());
  core::MoeConfig const c = cpu_tiled_default_config(p);
  EXPECT_EQ(testing::run_cpu(*data, c).storage, testing::run_cpu(*data, c).storage);
}

TEST(CpuMoe, ThreadCountDoesNotChangeTheBits) {
  core::MoeProblem const p = small_problem(63, 6, 192, 64, 3, core::Activation::kGeluTanh);
  auto data = generate_moe_data(p, core::RoutingProfile{}, testing::test_seed());
  ASSERT_TRUE(data.ok());
  for (int split_k : {1, 2}) {
    core::MoeConfig c{cpu_kernel(16, 32, 64, split_k, 1), cpu_kernel(16, 64, 32, split_k, 1)};
    auto const single = testing::run_cpu(*data, c).storage;
    for (int threads : {2, 3, 7}) {
      c.gemm1.launch.num_threads = threads;
      c.gemm2.launch.num_threads = threads == 7 ? 2 : threads;
      EXPECT_EQ(testing::run_cpu(*data, c).storage, single)
          << "split_k=" << split_k << " threads=" << threads;
    }
  }
}

TEST(CpuMoe, EmptyBatchSucceedsWithoutTouchingPointers) {
  core::MoeProblem const p = small_problem(0, 8, 128, 96, 2, core::Activation::kSiluGated);
  CpuMoeWorkspace ws;
  EXPECT_TRUE(run_cpu_moe(p, cpu_tiled_default_config(p), CpuMoeArgs{}, ws).ok());
}

TEST(CpuMoe, RejectsExpertIdOutsideRangeWithTokenAndSlot) {
  core::MoeProblem const p = small_problem(2, 8, 128, 96, 2, core::Activation::kSiluGated);
  auto data = generate_moe_data(p, core::RoutingProfile{}, testing::test_seed());
  ASSERT_TRUE(data.ok());
  data->routing.topk_ids[3] = 8;
  testing::RunOutput out = testing::run_cpu(*data, cpu_tiled_default_config(p));
  ASSERT_FALSE(out.status.ok());
  EXPECT_EQ(out.status.error().message, "topk_ids[1, 1] = 8 is outside [0, 8); fix the routing");
}

TEST(CpuMoe, RejectsNullPointersWhenTokensArePresent) {
  core::MoeProblem const p = small_problem(2, 8, 128, 96, 2, core::Activation::kSiluGated);
  CpuMoeWorkspace ws;
  core::Status const s = run_cpu_moe(p, cpu_tiled_default_config(p), CpuMoeArgs{}, ws);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "a tensor pointer is null with M = 2; pass x, topk_ids, topk_weights, w1, w2 and out");
}

}  // namespace
}  // namespace moetune::kernels::cpu
