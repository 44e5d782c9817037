// core/build_info.hpp: the commit the build was made from ("+dirty" with uncommitted changes to
// tracked files), as every measurement records it; stamped at every build, so it follows HEAD.
#include "core/build_info.hpp"

#include <gtest/gtest.h>

#include <cstdio>
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

std::string without_dirty(std::string s) {
  std::string const mark = "+dirty";
  if (s.size() > mark.size() && s.ends_with(mark)) s.resize(s.size() - mark.size());
  return s;
}

/// HEAD of the source tree, or "" where git or the repository is absent.
std::string source_head() {
  std::string const cmd =
      "git -C '" + std::string(MOETUNE_SOURCE_DIR) + "' rev-parse --short=12 HEAD 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[64] = {};
  std::string out = fgets(buf, sizeof buf, p) != nullptr ? buf : "";
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

TEST(BuildInfo, GitCommitIsTwelveHexDigitsOrUnknown) {
  const std::string& c = git_commit();
  EXPECT_TRUE(is_short_commit(without_dirty(c)) || c == "unknown") << "saw '" << c << "'";
}

TEST(BuildInfo, GitCommitIsTheSourceTreesHead) {  // a stamp made at configure time goes stale
  std::string const head = source_head();
  if (head.empty()) GTEST_SKIP() << "no git repository at " << MOETUNE_SOURCE_DIR;
  EXPECT_EQ(without_dirty(git_commit()), head)
      << "this binary was stamped with another commit than the source tree's HEAD; rebuild "
         "(scripts/build.sh) before running the tests";
}

TEST(BuildInfo, ShortCommitCheckRefusesALongOrNonHexString) {  // the check above can fail
  EXPECT_TRUE(is_short_commit("0e9ccae1b2c3"));
  EXPECT_FALSE(is_short_commit("0e9ccae1b2c3d"));  // 13 digits
  EXPECT_FALSE(is_short_commit("0e9ccae1b2cg"));   // not hex
  EXPECT_TRUE(is_short_commit(without_dirty("0e9ccae1b2c3+dirty")));
  EXPECT_FALSE(is_short_commit(without_dirty("0e9ccae1b2c3-dirty")));
}

}  // namespace
}  // namespace moetune::core
