// JSON round trip of every field of every core type, and the strict parser's errors.
#include <gtest/gtest.h>

#include "core/json_text.hpp"
#include "test_values.hpp"

namespace moetune::core {
namespace {

using testing::measured_source;
using testing::odd_kernel_config;
using testing::odd_moe_config;

TEST(JsonIo, MoeProblemRoundTripsEveryField) {
  MoeProblem const p{.num_tokens = 77,
                     .hidden_size = 2048,
                     .intermediate_size = 768,
                     .num_experts = 128,
                     .top_k = 8,
                     .activation = Activation::kGeluTanh,
                     .dtype = DType::kFp16,
                     .arch = "cpu"};
  auto back = parse_moe_problem_json(to_json_text(p), "t");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, p);
  // Each field alone differs from the default, so each is really written and read.
  for (Activation a : {Activation::kSiluGated, Activation::kRelu2, Activation::kGelu}) {
    MoeProblem q = p;
    q.activation = a;
    EXPECT_EQ(*parse_moe_problem_json(to_json_text(q, -1), "t"), q);
  }
}

TEST(JsonIo, KernelAndMoeConfigRoundTripEveryField) {
  KernelConfig const k = odd_kernel_config();
  ASSERT_NE(k, KernelConfig{});
  EXPECT_EQ(*parse_kernel_config_json(to_json_text(k), "t"), k);
  MoeConfig const c = odd_moe_config();
  EXPECT_EQ(*parse_moe_config_json(to_json_text(c), "t"), c);
  for (Schedule s : {Schedule::kAuto, Schedule::kCooperative, Schedule::kTmaWarpSpecialized}) {
    KernelConfig q = k;
    q.launch.schedule = s;
    EXPECT_EQ(*parse_kernel_config_json(to_json_text(q), "t"), q);
  }
}

TEST(JsonIo, MoeConfigWithoutGemm2IsUniform) {
  auto c = parse_moe_config_json(R"({"gemm1": {"tile": {"block_m": 16}}})", "t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gemm1.tile.block_m, 16);
  EXPECT_EQ(c->gemm2, c->gemm1);
}

TEST(JsonIo, SourceRoutingPolicyKeyRoundTripEveryField) {
  Source const s = measured_source();
  EXPECT_EQ(*parse_source_json(to_json_text(s), "t"), s);

  RoutingProfile const r{.kind = RoutingKind::kBlockPermutation,
                         .seed = 18446744073709551615ull,
                         .zipf_s = 0.1 + 0.2,
                         .block = 17,
                         .trace_path = "/tmp/x"};
  EXPECT_EQ(*parse_routing_profile_json(to_json_text(r), "t"), r);

  ResolverPolicy const pol{.tiny_m_threshold = 8, .beyond_range_factor = 2.5};
  EXPECT_EQ(*parse_resolver_policy_json(to_json_text(pol), "t"), pol);
  EXPECT_EQ(*parse_resolver_policy_json(to_json_text(ResolverPolicy{}), "t"), ResolverPolicy{});

  TableKey const key{.num_experts = 128,
                     .intermediate_size = 768,
                     .hidden_size = 2048,
                     .top_k = 8,
                     .activation = Activation::kRelu2,
                     .dtype = DType::kFp32,
                     .dtype_tag = "fp8_w8a8",
                     .block_shape = std::make_pair(128, 64),
                     .device_name = "NVIDIA_H200",
                     .family = "sm90_gather",
                     .family_version = 3,
                     .toolchain = "nvcc 13.0"};
  EXPECT_EQ(*parse_table_key_json(to_json_text(key), "t"), key);
  EXPECT_EQ(*parse_table_key_json(to_json_text(TableKey{}), "t"), TableKey{});
}

TEST(JsonIo, ResolutionAndDeviceInfoRoundTripEveryField) {
  Resolution const r{.m = 115,
                     .key = 113,
                     .rule = Rule::kNearestKey,
                     .config = odd_moe_config(),
                     .source = measured_source(),
                     .explain = "M=115 -> key 113"};
  auto back = parse_resolution_json(to_json_text(r), "t");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->m, r.m);
  EXPECT_EQ(back->key, r.key);
  EXPECT_EQ(back->rule, r.rule);
  EXPECT_EQ(back->config, r.config);
  EXPECT_EQ(back->source, r.source);
  EXPECT_EQ(back->explain, r.explain);
  Resolution d;
  d.m = 1;
  d.rule = Rule::kTinyMGate;
  EXPECT_FALSE(parse_resolution_json(to_json_text(d), "t")->key.has_value());

  DeviceInfo const dev{.name = "NVIDIA H200",
                       .arch = "sm_90a",
                       .sm_count = 132,
                       .driver = "580.159.04",
                       .toolchain = "nvcc 13.0",
                       .l2_bytes = 6.0e7,
                       .smem_per_block_bytes = 232448};
  EXPECT_EQ(*parse_device_info_json(to_json_text(dev), "t"), dev);
}

TEST(JsonIo, UnknownFieldGetsDidYouMean) {
  auto r = parse_kernel_config_json(R"({"tile": {"blok_m": 16}})", "cfg.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kParse);
  EXPECT_EQ(r.error().to_string(),
            "cfg.json: tile: unknown field 'blok_m'; expected one of block_m, block_n, block_k, "
            "group_m; did you mean 'block_m'?");
}

TEST(JsonIo, WrongTypeNamesThePathAndTheExpectedType) {
  auto r = parse_moe_config_json(R"({"gemm2": {"pipeline": {"num_warps": "8"}}})", "c.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "c.json: gemm2.pipeline.num_warps: expected an integer (32-bit), got string \"8\"");
  auto f = parse_moe_problem_json(R"({"top_k": 1.5})", "p");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().to_string(), "p: top_k: expected an integer, got number 1.5");
}

TEST(JsonIo, MalformedJsonNamesFileAndLine) {
  auto r = parse_source_json("{\n  \"kind\": \"measured\",\n  \"date\": \n}", "s.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kParse);
  EXPECT_EQ(r.error().where, "s.json:4");
  EXPECT_NE(r.error().message.find("malformed JSON"), std::string::npos);
}

TEST(JsonIo, UnknownEnumValueGetsDidYouMean) {
  auto r = parse_moe_problem_json(R"({"activation": "slu"})", "p");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("p: activation: unknown activation 'slu'"),
            std::string::npos);
  EXPECT_NE(r.error().message.find("did you mean 'silu'?"), std::string::npos);
  auto s = parse_source_json(R"({"kind": "mesured"})", "s");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("did you mean 'measured'?"), std::string::npos);
}

}  // namespace
}  // namespace moetune::core
