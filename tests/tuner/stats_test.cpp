// tuner/stats: medians, seeded bootstrap intervals, and the incumbent rule with its margin.
#include "tuner/stats.hpp"

#include <cmath>
#include <utility>
#include <vector>

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

/// `s` with these pass medians (SearchOptions::paired_passes).
TimingStats with_passes(TimingStats s, std::vector<double> passes) {
  s.pass_medians_us = std::move(passes);
  return s;
}

TEST(Stats, AWinByTheIntervalsWhosePassesDisagreeIsATie) {
  // The pooled intervals separate by more than the margin (90 +- 1 against 100 +- 2), but in the
  // fourth pass the challenger ran 1% slower: the paired interval of its per-pass ratio reaches
  // past 0.99, so the four passes do not show a gain.
  TimingStats const incumbent = with_passes(stats(100, 98, 102), {100, 100, 100, 100});
  TimingStats const challenger = with_passes(stats(90, 89, 91), {88, 89, 90, 101});
  EXPECT_FALSE(paired_passes_beat(incumbent.pass_medians_us, challenger.pass_medians_us, 0.01));
  EXPECT_EQ(decide(incumbent, challenger, 0.01), Verdict::kTie);
}

TEST(Stats, AWinByTheIntervalsWhosePassesAgreeStaysAWin) {
  // The twin: the same intervals, the challenger 9-12% faster in every pass.
  TimingStats const incumbent = with_passes(stats(100, 98, 102), {100, 100, 100, 100});
  TimingStats const challenger = with_passes(stats(90, 89, 91), {88, 89, 90, 91});
  EXPECT_TRUE(paired_passes_beat(incumbent.pass_medians_us, challenger.pass_medians_us, 0.01));
  EXPECT_EQ(decide(incumbent, challenger, 0.01), Verdict::kChallengerWins);
  // Without pass medians (halving rounds; paired_passes off) the intervals alone decide.
  EXPECT_EQ(decide(stats(100, 98, 102), with_passes(stats(90, 89, 91), {88, 89, 90, 101}), 0.01),
            Verdict::kChallengerWins);
}

TEST(Stats, OverlappingIntervalsAreATieAndASlowerChallengerLoses) {
  TimingStats const incumbent = stats(100, 95, 105);
  EXPECT_EQ(decide(incumbent, stats(99, 94, 104), 0.01), Verdict::kTie);
  EXPECT_EQ(decide(incumbent, stats(101, 99, 103), 0.01), Verdict::kIncumbentFaster);
  EXPECT_EQ(to_string(Verdict::kTie), "tie");
}

TEST(Stats, ATieWhoseMediansDifferByMoreThanTheMarginNeedsSettling) {
  TimingStats const inc = stats(100, 99, 101);
  // 2% faster by the median, but its interval reaches the incumbent's: a tie more data may settle.
  TimingStats const wide = stats(98, 96, 100);
  EXPECT_EQ(decide(inc, wide, 0.01), Verdict::kTie);
  EXPECT_TRUE(needs_settling(inc, wide, 0.01));
  // Within the margin by the median: a tie, settled.
  TimingStats const near = stats(99.5, 99, 100);
  EXPECT_FALSE(needs_settling(inc, near, 0.01));
  // A clear win or a slower challenger: nothing to settle.
  TimingStats const clear = stats(95, 94.9, 95.1);
  EXPECT_FALSE(needs_settling(inc, clear, 0.01));
  EXPECT_FALSE(needs_settling(inc, stats(103, 99, 105), 0.01));
  // The twin of the first: the same medians at a 3% margin are within it.
  EXPECT_FALSE(needs_settling(inc, wide, 0.03));
}

TEST(Stats, HalvingKeepsWhatTheCutLineDoesNotBeatUpToTheCap) {
  // Fastest first; the cut after two: the third is tied with the second (same median), the fourth
  // is beaten by the third beyond both intervals and the 1% margin.
  std::vector<TimingStats> const ranked = {stats(100, 99, 101), stats(110, 109, 111),
                                           stats(110, 109, 111), stats(130, 129, 131),
                                           stats(131, 130, 132)};
  EXPECT_EQ(halving_keep(ranked, 2, 5, 0.01), 3u);
  EXPECT_EQ(halving_keep(ranked, 2, 2, 0.01), 2u);  // the cap binds
  EXPECT_EQ(halving_keep(ranked, 9, 9, 0.01), 5u);  // never past the list
  // Negative twin: the third 3% slower with tight intervals is beaten, so it goes.
  std::vector<TimingStats> beaten = ranked;
  beaten[2] = stats(113.3, 113, 113.6);
  EXPECT_EQ(halving_keep(beaten, 2, 5, 0.01), 2u);
}

TEST(Stats, HalvingCapIsHalfAgainButShrinksEveryRound) {
  EXPECT_EQ(halving_cap(20, 7, 1), 11u);  // 7 + 4
  EXPECT_EQ(halving_cap(9, 3, 2), 5u);    // 3 + 2
  EXPECT_EQ(halving_cap(6, 2, 2), 3u);    // 2 + 1
  EXPECT_EQ(halving_cap(3, 2, 1), 2u);    // a round of three drops one
  EXPECT_EQ(halving_cap(4, 2, 2), 2u);    // with the incumbent added back, four keep two
  EXPECT_EQ(halving_cap(2, 2, 1), 2u);    // never under keep
}

TEST(Stats, SpeedupMarginIsRelativeToTheIncumbent) {
  EXPECT_DOUBLE_EQ(speedup_margin(100, 90), 0.1);
  EXPECT_DOUBLE_EQ(speedup_margin(0, 90), 0);
}

/// Three passes of 5 samples of each of `times` (us), pass p scaled by drift[p], with a small
/// deterministic jitter.
std::vector<std::vector<std::vector<double>>> passes_of(std::vector<double> const& times,
                                                        std::vector<double> const& drift) {
  std::vector<std::vector<std::vector<double>>> out(times.size());
  for (size_t c = 0; c < times.size(); ++c) {
    for (double d : drift) {
      std::vector<double> pass;
      for (int r = 0; r < 5; ++r) pass.push_back(times[c] * d * (1 + 0.002 * ((r * 7 + c) % 5)));
      out[c].push_back(pass);
    }
  }
  return out;
}

TEST(Stats, DriftCommonToAllFinalistsBetweenPassesIsRemovedBeforeTheVerdict) {
  // The incumbent at 880 us and a challenger 13% faster; the second pass runs 17% slower for all.
  auto by_pass = passes_of({880, 770, 800, 900}, {1.0, 1.17, 1.0});
  std::vector<double> raw_inc, raw_ch;
  for (auto const& p : by_pass[0]) raw_inc.insert(raw_inc.end(), p.begin(), p.end());
  for (auto const& p : by_pass[1]) raw_ch.insert(raw_ch.end(), p.begin(), p.end());
  // Pooled raw, the second pass widens both intervals into each other.
  EXPECT_EQ(decide(bootstrap_median(raw_inc, 1), bootstrap_median(raw_ch, 2), 0.01), Verdict::kTie);
  auto clean = remove_pass_drift(by_pass);
  ASSERT_EQ(clean.size(), 4u);
  ASSERT_EQ(clean[0].size(), 15u);
  TimingStats const inc = bootstrap_median(clean[0], 1);
  TimingStats const ch = bootstrap_median(clean[1], 2);
  EXPECT_EQ(decide(inc, ch, 0.01), Verdict::kChallengerWins);
  EXPECT_NEAR(inc.median_us / ch.median_us, 880.0 / 770.0, 0.01);
}

TEST(Stats, ASlowdownOfOneFinalistAloneIsNotTakenForDrift) {
  // The negative twin: only the challenger is 17% slower in pass 2, the others are steady; its
  // slow pass stays in its samples (the factor is the median over finalists, 1 here).
  auto by_pass = passes_of({880, 770, 800, 900}, {1.0, 1.0, 1.0});
  for (double& s : by_pass[1][1]) s *= 1.17;
  auto clean = remove_pass_drift(by_pass);
  EXPECT_EQ(clean[1][7], by_pass[1][1][2]);
  EXPECT_EQ(clean[0], [&] {
    std::vector<double> v;
    for (auto const& p : by_pass[0]) v.insert(v.end(), p.begin(), p.end());
    return v;
  }());
}

TEST(Stats, WithFewerThanThreeFinalistsTheSamplesArePooledUnchanged) {
  auto by_pass = passes_of({880, 770}, {1.0, 1.17, 1.0});
  auto clean = remove_pass_drift(by_pass);
  EXPECT_EQ(clean[1][5], by_pass[1][1][0]);
}

}  // namespace
}  // namespace moetune::tuner
