// The fp64 reference and the bf16 helpers on cases small enough to check by hand.
#include "kernels/cpu/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cpu_test_util.hpp"
#include "kernels/cpu/bf16.hpp"

namespace moetune::kernels::cpu {
namespace {

TEST(Bf16, RoundsToNearestWithTiesToEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: the tie goes to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1.0p-8f), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: ties to 1 + 2^-6 (even).
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * 0x1.0p-8f), 0x3f82);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1.0p-8f + 0x1.0p-20f), 0x3f81);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xc000);
  EXPECT_EQ(bf16_bits_to_float(0x3f81), 1.0f + 0x1.0p-7f);
}

TEST(Bf16, KeepsNanAndOverflowsToInfinity) {
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload lives only in the low 16 bits must not become inf.
  EXPECT_TRUE(
      std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::bit_cast<float>(0x7f800001u)))));
  EXPECT_TRUE(std::isinf(round_to_bf16(std::numeric_limits<float>::max())));
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
}

TEST(ReferenceActivation, MatchesClosedForms) {
  EXPECT_DOUBLE_EQ(reference_activation(core::Activation::kSiluGated, 0.0, 3.0), 0.0);
  EXPECT_DOUBLE_EQ(reference_activation(core::Activation::kSiluGated, 2.0, 3.0),
                   2.0 / (1.0 + std::exp(-2.0)) * 3.0);
  EXPECT_DOUBLE_EQ(reference_activation(core::Activation::kRelu2, -1.5, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(reference_activation(core::Activation::kRelu2, 1.5, 0.0), 2.25);
  EXPECT_NEAR(reference_activation(core::Activation::kGelu, 1.0, 0.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(reference_activation(core::Activation::kGeluTanh, 1.0, 0.0), 0.8411919906082768,
              1e-15);
}

TEST(ReferenceMoe, ComputesAHandWorkedTwoExpertCase) {
  // E=2, K=2, I=1, relu2, one token routed to both experts with weights 0.25 and 0.75.
  core::MoeProblem const p = testing::small_problem(1, 2, 2, 1, 2, core::Activation::kRelu2);
  std::vector<float> const x = {1.0f, 2.0f};
  std::vector<int32_t> const ids = {1, 0};
  std::vector<float> const weights = {0.25f, 0.75f};
  std::vector<float> const w1 = {1.0f, 1.0f,    // expert 0: h = 3 -> 9
                                 -1.0f, 1.0f};  // expert 1: h = 1 -> 1
  std::vector<float> const w2 = {1.0f, 2.0f,    // expert 0: out = (9, 18)
                                 4.0f, -1.0f};  // expert 1: out = (4, -1)
  auto out =
      reference_moe(p, {.x = x, .topk_ids = ids, .topk_weights = weights, .w1 = w1, .w2 = w2});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_DOUBLE_EQ((*out)[0], 0.25 * 4.0 + 0.75 * 9.0);
  EXPECT_DOUBLE_EQ((*out)[1], 0.25 * -1.0 + 0.75 * 18.0);
}

TEST(ReferenceMoe, RejectsWrongLengthNamingTheArray) {
  core::MoeProblem const p = testing::small_problem(1, 2, 2, 1, 2, core::Activation::kRelu2);
  std::vector<float> const x = {1.0f};
  auto out = reference_moe(p, {.x = x, .topk_ids = {}, .topk_weights = {}, .w1 = {}, .w2 = {}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message,
            "x has 1 elements, expected 2; pass arrays shaped as documented in reference.hpp");
}

}  // namespace
}  // namespace moetune::kernels::cpu
