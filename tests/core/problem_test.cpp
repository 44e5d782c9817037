// MoeProblem: spec parse/format, validate, derived sizes, to_string.
#include <gtest/gtest.h>

#include "core/problem.hpp"

namespace moetune::core {
namespace {

TEST(Problem, SpecParseFormatRoundTrips) {
  auto p = parse_problem_spec("E=128,K=2048,I=768,topk=8,act=silu,dtype=bf16,M=16");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->num_experts, 128);
  EXPECT_EQ(p->hidden_size, 2048);
  EXPECT_EQ(p->intermediate_size, 768);
  EXPECT_EQ(p->top_k, 8);
  EXPECT_EQ(p->num_tokens, 16);
  MoeProblem const q{.num_tokens = 3,
                     .hidden_size = 7,
                     .intermediate_size = 5,
                     .num_experts = 4,
                     .top_k = 2,
                     .activation = Activation::kRelu2,
                     .dtype = DType::kFp32,
                     .arch = "cpu"};
  EXPECT_EQ(*parse_problem_spec(format_problem_spec(q)), q);
  MoeProblem biased = q;
  biased.activation = Activation::kSwigluOai;
  biased.has_bias = true;
  EXPECT_EQ(format_problem_spec(biased),
            "E=4,K=7,I=5,topk=2,act=swigluoai,dtype=fp32,M=3,arch=cpu,bias=1");
  EXPECT_EQ(*parse_problem_spec(format_problem_spec(biased)), biased);
  EXPECT_TRUE(is_gated(Activation::kSwigluOai));
  auto bad = parse_problem_spec("E=4,K=8,I=4,topk=2,act=silu,bias=yes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("bias='yes'; expected 0 or 1"), std::string::npos)
      << bad.error().message;
}

TEST(Problem, SpecUnknownKeyGetsDidYouMean) {
  auto p = parse_problem_spec("E=128,K=2048,I=768,top_k=8,act=silu");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("unknown key 'top_k'"), std::string::npos);
  EXPECT_NE(p.error().message.find("did you mean 'topk'?"), std::string::npos);
}

// Each malformed spec is refused with where (the spec) and what (the item); the well-formed
// twin of each parses.
TEST(Problem, SpecMalformedItemsAreRefusedNamingTheSpecAndTheItem) {
  const std::string good = "E=8,K=64,I=32,topk=2,act=silu";
  ASSERT_TRUE(parse_problem_spec(good).ok());
  struct Case {
    std::string spec, says;
  };
  for (Case const& c : {Case{"E=8,,K=64,I=32,topk=2,act=silu", "empty item between commas"},
                        Case{good + ",", "ends with a comma; remove it"},
                        Case{"E=8,K64,I=32,topk=2,act=silu", "item 'K64' has no '='"},
                        Case{good + ",E=16", "key 'E' given twice"},
                        Case{"E=8,K=64,I=32,act=silu", "missing required key 'topk'"},
                        Case{"E=8,K=6x4,I=32,topk=2,act=silu", "K='6x4' is not an integer"},
                        Case{good + ",M=", "M='' is not an integer"}}) {
    auto p = parse_problem_spec(c.spec);
    ASSERT_FALSE(p.ok()) << c.spec;
    EXPECT_EQ(p.error().where, "problem '" + c.spec + "'");
    EXPECT_NE(p.error().message.find(c.says), std::string::npos) << p.error().message;
  }
}

TEST(Problem, ValidateRejectsZeroNegativeAndAbsurdSizes) {
  EXPECT_FALSE(parse_problem_spec("E=0,K=2048,I=768,topk=1,act=silu").ok());
  EXPECT_FALSE(parse_problem_spec("E=8,K=-1,I=768,topk=1,act=silu").ok());
  EXPECT_FALSE(parse_problem_spec("E=8,K=16,I=768,topk=9,act=silu").ok());
  auto big = parse_problem_spec("E=8,K=16,I=16,topk=1,act=silu,M=999999999");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("num_tokens (M) = 999999999"), std::string::npos);
  EXPECT_TRUE(parse_problem_spec("E=8,K=16,I=16,topk=1,act=silu,M=0").ok());
}

TEST(Problem, DerivedSizesFollowTheActivation) {
  MoeProblem p{
      .num_tokens = 2, .hidden_size = 4, .intermediate_size = 3, .num_experts = 8, .top_k = 2};
  EXPECT_EQ(gemm1_n(p), 6);
  EXPECT_EQ(num_pairs(p), 4);
  EXPECT_DOUBLE_EQ(flops(p), 2.0 * 4 * (6 * 4 + 4 * 3));
  EXPECT_DOUBLE_EQ(expert_weight_bytes(p), (6 * 4 + 4 * 3) * 2.0);
  p.activation = Activation::kRelu2;
  EXPECT_EQ(gemm1_n(p), 3);
}

TEST(Problem, QuantRoundTripsAndIsCheckedAgainstDtypeAndTheBlock) {
  auto p = parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,quant=fp8_block");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(p->quant, Quant::kFp8Block);
  EXPECT_EQ(*parse_problem_spec(format_problem_spec(*p)), *p);
  EXPECT_NE(to_string(*p).find(", quant=fp8_block)"), std::string::npos) << to_string(*p);
  // 1 byte per element plus one fp32 scale per 128x128 block: (256*256 + 256*128) / 16384 blocks.
  EXPECT_DOUBLE_EQ(expert_weight_bytes(*p), 256.0 * 256 + 256 * 128 + 4.0 * 6);
  auto tensor = parse_problem_spec("E=8,K=100,I=60,topk=2,act=gelu,quant=fp8_tensor");
  ASSERT_TRUE(tensor.ok()) << tensor.error().to_string();  // no block: any K and I
  EXPECT_DOUBLE_EQ(expert_weight_bytes(*tensor), 60.0 * 100 * 2 + 4.0 * 2);

  auto unaligned = parse_problem_spec("E=8,K=192,I=128,topk=2,act=silu,quant=fp8_block");
  ASSERT_FALSE(unaligned.ok());
  EXPECT_NE(unaligned.error().message.find("hidden_size (K) = 192"), std::string::npos)
      << unaligned.error().message;
  auto fp32 = parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,dtype=fp32,quant=fp8_tensor");
  ASSERT_FALSE(fp32.ok());
  EXPECT_NE(fp32.error().message.find("dtype = fp32"), std::string::npos) << fp32.error().message;
  auto typo = parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,quant=fp8_blok");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("did you mean 'fp8_block'"), std::string::npos)
      << typo.error().message;
}

TEST(Problem, ToStringShowsEveryField) {
  MoeProblem const p{.num_tokens = 16,
                     .hidden_size = 2048,
                     .intermediate_size = 768,
                     .num_experts = 128,
                     .top_k = 8,
                     .activation = Activation::kGelu,
                     .dtype = DType::kFp16,
                     .arch = "sm_90a"};
  EXPECT_EQ(to_string(p),
            "MoeProblem(M=16, K=2048, I=768, E=128, top_k=8, act=gelu, dtype=fp16, arch=sm_90a)");
}

}  // namespace
}  // namespace moetune::core
