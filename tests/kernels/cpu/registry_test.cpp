// The backend registry and the cpu Testbed end to end (prepare, check, time).
#include <gtest/gtest.h>

#include "cpu_test_util.hpp"
#include "kernels/testbed.hpp"

namespace moetune::kernels {
namespace {

TEST(Registry, CpuBackendReportsItsFamilyAndVersion) {
  auto backend = make_backend("cpu");
  ASSERT_TRUE(backend.ok()) << backend.error().to_string();
  EXPECT_EQ((*backend)->name(), "cpu");
  EXPECT_EQ((*backend)->family(), "cpu_tiled");
  EXPECT_EQ((*backend)->family_version(), 1);
}

TEST(Registry, UnknownBackendSuggestsTheClosestName) {
  auto backend = make_backend("cpuu");
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(backend.error().message,
            "unknown backend 'cpuu' (known: cpu, cuda, triton); did you mean 'cpu'?");
  auto testbed = make_testbed("gpu");
  ASSERT_FALSE(testbed.ok());
  EXPECT_EQ(testbed.error().message.rfind("unknown backend 'gpu' (known: cpu, cuda, triton)", 0),
            0u);
}

#if !defined(MOETUNE_HAVE_CUDA)
TEST(Registry, CudaWithoutNvccSaysHowToGetIt) {
  std::string const expected =
      "backend 'cuda' is not built into this moetune (configured without nvcc); use --backend "
      "cpu or rebuild with nvcc on PATH";
  auto backend = make_backend("cuda");
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.error().message, expected);
  auto testbed = make_testbed("cuda");
  ASSERT_FALSE(testbed.ok());
  EXPECT_EQ(testbed.error().message, expected);
  EXPECT_EQ(default_backend_name(), "cpu");
}
#endif

class CpuTestbedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto testbed = make_testbed("cpu");
    ASSERT_TRUE(testbed.ok()) << testbed.error().to_string();
    testbed_ = std::move(testbed).value();
  }
  core::MoeProblem problem_ =
      cpu::testing::small_problem(33, 8, 128, 96, 2, core::Activation::kSiluGated);
  std::unique_ptr<Testbed> testbed_;
};

TEST_F(CpuTestbedTest, CheckPassesAndDigestIsStableForTheSameSeed) {
  ASSERT_TRUE(testbed_->prepare(problem_, {}, 7).ok());
  core::MoeConfig const c = testbed_->backend().default_config(problem_);
  auto first = testbed_->check(c);
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_TRUE(first->all_written);
  EXPECT_TRUE(first->all_finite);
  EXPECT_EQ(first->first_bad, -1);
  EXPECT_LT(first->rel_l2_error, tolerance_for(core::DType::kBf16).rel_l2);
  EXPECT_GT(first->rel_l2_error, 0.0);
  ASSERT_TRUE(testbed_->prepare(problem_, {}, 7).ok());
  EXPECT_EQ(testbed_->check(c)->digest, first->digest);
  ASSERT_TRUE(testbed_->prepare(problem_, {}, 8).ok());
  EXPECT_NE(testbed_->check(c)->digest, first->digest);
}

TEST_F(CpuTestbedTest, TimeReturnsOneSamplePerRepAndTheirMedian) {
  ASSERT_TRUE(testbed_->prepare(problem_, {}, 1).ok());
  auto timing = testbed_->time(testbed_->backend().default_config(problem_), 1, 5);
  ASSERT_TRUE(timing.ok()) << timing.error().to_string();
  ASSERT_EQ(timing->samples_us.size(), 5u);
  std::vector<double> sorted = timing->samples_us;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(timing->median_us, sorted[2]);
  EXPECT_GT(timing->median_us, 0.0);
}

TEST(TestbedMedian, IsTheMiddleSampleOrTheMeanOfTheMiddleTwoWhateverTheOrder) {
  EXPECT_EQ(median_us({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(median_us({4.0, 1.0, 3.0, 2.0}), 2.5);  // pooled blocks of the bench protocol
  EXPECT_EQ(median_us({7.0}), 7.0);
  EXPECT_EQ(median_us({}), 0.0);
}

TEST_F(CpuTestbedTest, RefusesToRunBeforePrepare) {
  auto result = testbed_->check(testbed_->backend().default_config(problem_));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message,
            "check() before prepare(); call prepare(problem, routing, seed) first");
}

TEST_F(CpuTestbedTest, RejectsAConfigTheFamilyCannotImplement) {
  ASSERT_TRUE(testbed_->prepare(problem_, {}, 1).ok());
  core::MoeConfig c = testbed_->backend().default_config(problem_);
  c.gemm1.launch.swap_ab = true;
  auto result = testbed_->check(c);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, core::ErrorCode::kUnsupported);
  auto timing = testbed_->time(c, 0, 1);
  ASSERT_FALSE(timing.ok());
  EXPECT_EQ(timing.error().code, core::ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace moetune::kernels
