// tuner/stats: medians, seeded bootstrap intervals, and the incumbent rule with its margin.
#include "tuner/stats.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace moetune::tuner {
namespace {

TEST(Stats, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(Stats, BootstrapIsSeededAndBracketsTheMedian) {
  std::vector<double> samples;
  for (int i = 0; i < 31; ++i) samples.push_back(100 + (i * 7919 % 13));
  TimingStats a = bootstrap_median(samples, 42);
  TimingStats b = bootstrap_median(samples, 42);
  EXPECT_EQ(a.ci_low_us, b.ci_low_us);
  EXPECT_EQ(a.ci_high_us, b.ci_high_us);
  EXPECT_LE(a.ci_low_us, a.median_us);
  EXPECT_GE(a.ci_high_us, a.median_us);
  EXPECT_LT(a.ci_low_us, a.ci_high_us);  // spread samples give a real interval
  EXPECT_EQ(a.samples, 31);
}

TEST(Stats, OneSampleGivesAPointIntervalAndNaNSamplesAreDropped) {
  TimingStats s = bootstrap_median({5.0, NAN}, 1);
  EXPECT_EQ(s.samples, 1);
  EXPECT_EQ(s.median_us, 5.0);
  EXPECT_EQ(s.ci_low_us, 5.0);
  EXPECT_EQ(s.ci_high_us, 5.0);
}

TimingStats stats(double median, double low, double high) {
  return TimingStats{.median_us = median, .ci_low_us = low, .ci_high_us = high, .samples = 10};
}

TEST(Stats, ChallengerWinsOnlyBeyondBothIntervalsAndTheMargin) {
  TimingStats const incumbent = stats(100, 98, 102);
  EXPECT_EQ(decide(incumbent, stats(90, 89, 91), 0.01), Verdict::kChallengerWins);
  // Negative twin: the same medians, but the challenger's interval reaches into the margin.
  EXPECT_EQ(decide(incumbent, stats(90, 89, 97.5), 0.01), Verdict::kTie);
}

TEST(Stats, OverlappingIntervalsAreATieAndASlowerChallengerLoses) {
  TimingStats const incumbent = stats(100, 95, 105);
  EXPECT_EQ(decide(incumbent, stats(99, 94, 104), 0.01), Verdict::kTie);
  EXPECT_EQ(decide(incumbent, stats(101, 99, 103), 0.01), Verdict::kIncumbentFaster);
  EXPECT_EQ(to_string(Verdict::kTie), "tie");
}

TEST(Stats, SpeedupMarginIsRelativeToTheIncumbent) {
  EXPECT_DOUBLE_EQ(speedup_margin(100, 90), 0.1);
  EXPECT_DOUBLE_EQ(speedup_margin(0, 90), 0);
}

}  // namespace
}  // namespace moetune::tuner
