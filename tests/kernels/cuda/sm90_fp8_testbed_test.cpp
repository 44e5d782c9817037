// The cuda testbed on fp8 problems (CudaFp8Layer): the drawn layer runs and passes the fp8 GPU
// reference on block-scaled and per-tensor shapes at small and sampled M, the same seed gives the
// same bits, and a corrupted output is caught (the checker's negative twin). Needs a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cuda/cuda_testbed.hpp"
#include "kernels/cuda_factory.hpp"
#include "kernels/testbed.hpp"
#include "moe_shape.hpp"

namespace moetune::kernels::cuda {
namespace {

core::MoeProblem fp8_problem(core::Quant q, int64_t m, core::Activation act) {
  core::MoeProblem p = testing::moe_shape(16, 512, 384, 4, act);
  p.quant = q;
  p.num_tokens = m;
  return p;
}

std::unique_ptr<CudaTestbed> testbed() {
  if (!cuda_device_present()) return nullptr;
  auto tb = CudaTestbed::create();
  EXPECT_TRUE(tb.ok()) << tb.error().to_string();
  return tb.ok() ? std::move(tb).value() : nullptr;
}

TEST(Sm90Fp8Testbed, DrawnLayersPassTheFp8ReferenceAndRepeatTheirBits) {
  auto tb = testbed();
  if (!tb) GTEST_SKIP() << "no CUDA device visible: fp8 testbed tests run on the device machine";
  for (auto q : {core::Quant::kFp8Block, core::Quant::kFp8Tensor}) {
    for (auto act : {core::Activation::kSiluGated, core::Activation::kRelu2}) {
      for (int64_t m : {1, 37, 300, 2048}) {
        auto const p = fp8_problem(q, m, act);
        SCOPED_TRACE(core::to_string(p));
        ASSERT_TRUE(tb->prepare(p, core::RoutingProfile{}, 7).ok());
        auto const config = tb->backend().default_config(p);
        auto r = tb->check(config);
        ASSERT_TRUE(r.ok()) << r.error().to_string();
        EXPECT_TRUE(r->all_written && r->all_finite) << r->first_bad;
        EXPECT_LT(r->rel_l2_error, tolerance_for(p).rel_l2);
        EXPECT_GT(r->rel_l2_error, 0.0);  // an fp32 reference in another order: never bit-equal
        auto again = tb->check(config);
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(again->digest, r->digest);
      }
    }
  }
}

TEST(Sm90Fp8Testbed, ACorruptedOutputFailsTheCheck) {
  auto tb = testbed();
  if (!tb) GTEST_SKIP() << "no CUDA device visible: fp8 testbed tests run on the device machine";
  auto const p = fp8_problem(core::Quant::kFp8Block, 64, core::Activation::kSiluGated);
  ASSERT_TRUE(tb->prepare(p, core::RoutingProfile{}, 3).ok());
  ASSERT_TRUE(tb->corrupt_next_output(OutputFault::kWrong));
  auto r = tb->check(tb->backend().default_config(p));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_GT(r->rel_l2_error, tolerance_for(p).rel_l2);
}

TEST(Sm90Fp8Testbed, HostInputsAreRefusedForFp8) {
  auto tb = testbed();
  if (!tb) GTEST_SKIP() << "no CUDA device visible: fp8 testbed tests run on the device machine";
  auto const p = fp8_problem(core::Quant::kFp8Tensor, 4, core::Activation::kSiluGated);
  ASSERT_TRUE(tb->prepare(p, core::RoutingProfile{}, 1).ok());
  auto h = tb->download_inputs();
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("quant = fp8_tensor"), std::string::npos);
}

}  // namespace
}  // namespace moetune::kernels::cuda
