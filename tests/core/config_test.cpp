// KernelConfig / MoeConfig: to_string covers every field, short_string, validate.
#include <gtest/gtest.h>

#include "core/config.hpp"
#include "test_values.hpp"

namespace moetune::core {
namespace {

TEST(Config, ToStringShowsEveryField) {
  EXPECT_EQ(to_string(KernelConfig{}),
            "KernelConfig(tile=(64,64,64,g1), pipe=(w4,s2,sk1), "
            "launch=(swap_ab=0,cluster=1x1,auto,t0))");
  EXPECT_EQ(to_string(testing::odd_kernel_config()),
            "KernelConfig(tile=(16,128,256,g8), pipe=(w8,s3,sk4), "
            "launch=(swap_ab=1,cluster=2x4,pingpong,t12))");
  EXPECT_EQ(to_string(uniform_config(KernelConfig{})).rfind("uniform KernelConfig(", 0), 0u);
  std::string const two = to_string(testing::odd_moe_config());
  EXPECT_EQ(two.rfind("MoeConfig(gemm1=KernelConfig(tile=(16,128,", 0), 0u);
  EXPECT_NE(two.find("gemm2=KernelConfig(tile=(16,64,"), std::string::npos);
}

TEST(Config, ShortStringAddsOnlyNonDefaultKnobs) {
  EXPECT_EQ(short_string(KernelConfig{}), "m64n64k64g1w4s2");
  EXPECT_EQ(short_string(testing::odd_kernel_config()), "m16n128k256g8w8s3sk4swapc2x4ppt12");
  EXPECT_EQ(short_string(testing::odd_moe_config()),
            "m16n128k256g8w8s3sk4swapc2x4ppt12|m16n64k256g8w8s3sk4swapc2x4ppt12");
}

TEST(Config, ValidateNamesTheFieldAndTheAllowedValues) {
  EXPECT_TRUE(validate(testing::odd_moe_config()).ok());
  KernelConfig k;
  k.tile.block_m = 88;
  Status const st = validate(uniform_config(k), "row");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().to_string(),
            "row.gemm1: tile.block_m = 88 is not allowed; expected a power of two in "
            "[1, 512], a multiple of 16 in [16, 128], or 192");
  KernelConfig sized;  // cuda mma.sync: a block sized to an expert's pairs
  sized.tile.block_m = 48;
  EXPECT_TRUE(validate(sized).ok());
  sized.tile.block_m = 144;  // negative twin: multiples of 16 stop at 128
  EXPECT_FALSE(validate(sized).ok());
  KernelConfig three_warpgroups;  // cuda tma_ws: three 64-row warpgroups
  three_warpgroups.tile.block_m = 192;
  three_warpgroups.pipeline.num_warps = 12;
  EXPECT_TRUE(validate(three_warpgroups).ok());
  KernelConfig deep;
  deep.tile.block_k = 2048;  // the decode kernels' deepest step
  EXPECT_TRUE(validate(deep).ok());
  deep.tile.block_k = 8192;
  Status const too_deep = validate(deep);
  ASSERT_FALSE(too_deep.ok());
  EXPECT_EQ(too_deep.error().message,
            "tile.block_k = 8192 is not allowed; expected a power of two in [1, 4096]");
  KernelConfig w;
  w.pipeline.num_warps = 3;
  EXPECT_FALSE(validate(w).ok());
  KernelConfig c;
  c.launch.cluster_n = 3;
  EXPECT_FALSE(validate(c).ok());
}

TEST(Config, ParseScheduleOffersDidYouMean) {
  EXPECT_EQ(*parse_schedule("pingpong"), Schedule::kPingpong);
  EXPECT_EQ(*parse_schedule("tma_ws"), Schedule::kTmaWarpSpecialized);
  EXPECT_EQ(to_string(Schedule::kTmaWarpSpecialized), "tma_ws");
  auto r = parse_schedule("pingpnog");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("did you mean 'pingpong'?"), std::string::npos);
}

}  // namespace
}  // namespace moetune::core
