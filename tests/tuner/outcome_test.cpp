// tuner/outcome: outcome names round-trip; --inject-fault specs parse, print back, and bad ones
// fail with a message naming the item.
#include "tuner/outcome.hpp"

#include <gtest/gtest.h>

namespace moetune::tuner {
namespace {

TEST(Outcome, EveryNameParsesBack) {
  for (int i = 0; i < kNumOutcomes; ++i) {
    auto o = static_cast<Outcome>(i);
    auto parsed = parse_outcome(to_string(o));
    ASSERT_TRUE(parsed.ok()) << to_string(o);
    EXPECT_EQ(*parsed, o);
  }
  EXPECT_FALSE(parse_outcome("crash").ok());
}

TEST(FaultPlan, ParsesIndicesAndAllAndPrintsBack) {
  auto plan = parse_fault_plan("crash@3,hang@0,wrong@all");
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  EXPECT_EQ(plan->at(3), FaultKind::kCrash);
  EXPECT_EQ(plan->at(0), FaultKind::kHang);
  EXPECT_EQ(plan->at(7), FaultKind::kWrong);  // 'all' covers the rest
  EXPECT_EQ(format_fault_plan(*plan), "hang@0,crash@3,wrong@all");
  auto again = parse_fault_plan(format_fault_plan(*plan));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *plan);
  EXPECT_TRUE(parse_fault_plan("")->empty());
}

TEST(FaultPlan, UnknownKindSuggestsTheClosest) {
  auto plan = parse_fault_plan("crahs@3");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().to_string(),
            "--inject-fault 'crahs@3': 'crahs@3' names unknown fault kind 'crahs'; expected "
            "compile, launch, crash, wrong, nan, hang or oom; did you mean 'crash'?");
}

TEST(FaultPlan, MissingAtAndBadIndexAreErrors) {
  EXPECT_EQ(parse_fault_plan("crash").error().message,
            "'crash' has no '@'; write KIND@N or KIND@all, e.g. crash@3");
  EXPECT_EQ(parse_fault_plan("nan@-1").error().message,
            "'nan@-1' has index '-1', not a candidate index >= 0 or 'all'; e.g. crash@3");
}

}  // namespace
}  // namespace moetune::tuner
