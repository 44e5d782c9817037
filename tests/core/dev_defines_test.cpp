// core::parse_dev_defines: the one reading of $MOETUNE_DEV_NVRTC_DEFINES that the JIT and
// `moetune ab`'s defines: item share.
#include "core/dev_defines.hpp"

#include <gtest/gtest.h>

namespace moetune::core {
namespace {

TEST(DevDefines, TokensAreNamesWithOptionalValues) {
  auto none = parse_dev_defines("  ");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto two = parse_dev_defines(" A_1=1.5e-3\tFLAG ");
  ASSERT_TRUE(two.ok()) << two.error().to_string();
  EXPECT_EQ(*two, (std::vector<std::string>{"A_1=1.5e-3", "FLAG"}));
}

TEST(DevDefines, AnythingThatCouldCarryAnotherOptionIsRefusedNamingTheToken) {
  for (const char* bad : {"-O3", "A=1;rm", "A=", "1A", "=1", "A=\"1\"", "A=a/b"}) {
    auto r = parse_dev_defines(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().where, "MOETUNE_DEV_NVRTC_DEFINES");
    EXPECT_NE(r.error().message.find(std::string("'") + bad + "' is not NAME or NAME=VALUE"),
              std::string::npos)
        << r.error().message;
  }
}

}  // namespace
}  // namespace moetune::core
