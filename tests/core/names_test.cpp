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

}  // namespace
}  // namespace moetune::core
