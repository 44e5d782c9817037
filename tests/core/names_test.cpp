// Edit distance and "did you mean".
#include <gtest/gtest.h>

#include "core/names.hpp"

namespace moetune::core {
namespace {

TEST(Names, EditDistanceCountsInsertDeleteAndSubstitute) {
  EXPECT_EQ(edit_distance("", ""), 0);
  EXPECT_EQ(edit_distance("block_m", "block_m"), 0);
  EXPECT_EQ(edit_distance("block_m", "blok_m"), 1);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
  EXPECT_EQ(edit_distance("", "abc"), 3);
}

TEST(Names, DidYouMeanOffersTheClosePlausibleName) {
  EXPECT_EQ(did_you_mean("blok_m", {"block_m", "block_n"}), "; did you mean 'block_m'?");
  EXPECT_EQ(did_you_mean("zzzzzzzz", {"block_m", "block_n"}), "");
  EXPECT_EQ(closest_name("topk", {"top_k", "E"}), "top_k");
}

TEST(Names, OneLineEscapesControlBytesAndInvalidUtf8AndKeepsTheRest) {
  EXPECT_EQ(one_line("plain \xC3\xA9 text"), "plain \xC3\xA9 text");
  EXPECT_EQ(one_line("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(one_line(std::string("x\x01y\x7Fz", 5)), "x\\x01y\\x7Fz");
  EXPECT_EQ(one_line("dev\xFF"), "dev\\xFF");              // 0xFF is never UTF-8
  EXPECT_EQ(one_line("\xC3"), "\\xC3");                    // a sequence cut short
  EXPECT_EQ(one_line("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // a UTF-16 surrogate
  EXPECT_EQ(one_line("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(Names, ClipMiddleReturnsOneLineHoweverTheMessageIsMade) {
  std::string const message = "moetune show: bad '" + std::string(5000, 'x') + "\n\xFF'; fix it";
  std::string const line = clip_middle(message);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_LT(line.size(), 1100u);
  EXPECT_TRUE(line.ends_with("\\n\\xFF'; fix it")) << line;
}

}  // namespace
}  // namespace moetune::core
