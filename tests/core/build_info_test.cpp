// core/build_info.hpp: the commit the build was configured at, as every measurement records it.
#include "core/build_info.hpp"

#include <gtest/gtest.h>

#include <string>

namespace moetune::core {
namespace {

bool is_short_commit(std::string const& s) {
  if (s.size() != 12) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST(BuildInfo, GitCommitIsTwelveHexDigitsOrUnknown) {
  const std::string& c = git_commit();
  EXPECT_TRUE(is_short_commit(c) || c == "unknown") << "saw '" << c << "'";
}

TEST(BuildInfo, ShortCommitCheckRefusesALongOrNonHexString) {  // the check above can fail
  EXPECT_TRUE(is_short_commit("0e9ccae1b2c3"));
  EXPECT_FALSE(is_short_commit("0e9ccae1b2c3d"));  // 13 digits
  EXPECT_FALSE(is_short_commit("0e9ccae1b2cg"));   // not hex
}

}  // namespace
}  // namespace moetune::core
