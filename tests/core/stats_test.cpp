// core/stats: medians, seeded bootstrap intervals, and the incumbent rule with its margin: a win
// beyond both intervals, a tie only where the interval of the time ratio lies within the margin on
// both sides, else undecided.
#include "core/stats.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace moetune::core {
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
  // Negative twin: the same medians, but the challenger's interval reaches into the margin: no
  // win, and 10% apart by the medians is no tie either.
  EXPECT_EQ(decide(incumbent, stats(90, 89, 97.5), 0.01), Verdict::kUndecided);
}

/// `s` with these pass medians (SearchOptions::paired_passes).
TimingStats with_passes(TimingStats s, std::vector<double> passes) {
  s.pass_medians_us = std::move(passes);
  return s;
}

TEST(Stats, AWinByTheIntervalsWhosePassesDisagreeIsUndecided) {
  // The pooled intervals separate by more than the margin (90 +- 1 against 100 +- 2), but in the
  // fourth pass the challenger ran 1% slower: the paired interval of its per-pass ratio reaches
  // past 0.99, so the four passes do not show a gain.
  TimingStats const incumbent = with_passes(stats(100, 98, 102), {100, 100, 100, 100});
  TimingStats const challenger = with_passes(stats(90, 89, 91), {88, 89, 90, 101});
  EXPECT_FALSE(paired_passes_beat(incumbent.pass_medians_us, challenger.pass_medians_us, 0.01));
  EXPECT_EQ(decide(incumbent, challenger, 0.01), Verdict::kUndecided);
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

TEST(Stats, OverlappingIntervalsAreUndecidedNotATieAndASlowerChallengerLoses) {
  // The intervals overlap, so neither is shown faster; but their ratio may lie anywhere in
  // [94/105, 104/95] = [0.895, 1.095], far past the 1% margin on both sides: not shown equal.
  TimingStats const incumbent = stats(100, 95, 105);
  EXPECT_EQ(decide(incumbent, stats(99, 94, 104), 0.01), Verdict::kUndecided);
  EXPECT_EQ(decide(incumbent, stats(101, 99, 103), 0.01), Verdict::kIncumbentFaster);
  EXPECT_EQ(to_string(Verdict::kTie), "tie");
  EXPECT_EQ(to_string(Verdict::kUndecided), "undecided");
}

TEST(Stats, ATieNeedsTheRatiosIntervalWithinTheMarginOnBothSides) {
  TimingStats const inc = stats(100, 99.9, 100.1);
  // [99.6 / 100.1, 100.3 / 99.9] = [0.995, 1.004]: inside [0.99, 1.01], a tie whichever median
  // is lower.
  EXPECT_TRUE(within_margin(inc, stats(99.9, 99.6, 100.3), 0.01));
  EXPECT_EQ(decide(inc, stats(99.9, 99.6, 100.3), 0.01), Verdict::kTie);
  EXPECT_EQ(decide(inc, stats(100.1, 99.6, 100.3), 0.01), Verdict::kTie);
  // Negative twins: the upper side past 1.01 (the lower side inside), then the lower side past
  // 0.99 (the upper inside). A rule that tests one side calls one of them a tie.
  EXPECT_FALSE(within_margin(inc, stats(100.4, 99.6, 101.2), 0.01));
  EXPECT_EQ(decide(inc, stats(100.4, 99.6, 101.2), 0.01), Verdict::kIncumbentFaster);
  EXPECT_FALSE(within_margin(inc, stats(99.6, 98.8, 100.3), 0.01));
  EXPECT_EQ(decide(inc, stats(99.6, 98.8, 100.3), 0.01), Verdict::kUndecided);
  // No samples: no interval, no tie.
  EXPECT_FALSE(within_margin(TimingStats{}, stats(100, 99.9, 100.1), 0.01));
}

TEST(Stats, ATieByTheIntervalsWhosePassesDisagreeIsNoTie) {
  // Pooled intervals within 0.5% of each other, but pass by pass the challenger is 3% faster, then
  // 3% slower: the paired interval of the per-pass ratio reaches past the margin on both sides.
  TimingStats const inc = with_passes(stats(100, 99.9, 100.1), {100, 100, 100, 100});
  TimingStats const swings = with_passes(stats(100, 99.7, 100.3), {97, 103, 97, 103});
  EXPECT_FALSE(within_margin(inc, swings, 0.01));
  EXPECT_EQ(decide(inc, swings, 0.01), Verdict::kIncumbentFaster);
  // The twin: passes within 0.2% of the incumbent's, a tie.
  TimingStats const steady = with_passes(stats(100, 99.7, 100.3), {99.8, 100.2, 99.9, 100.1});
  EXPECT_TRUE(within_margin(inc, steady, 0.01));
  EXPECT_EQ(decide(inc, steady, 0.01), Verdict::kTie);
}

/// 16 samples around `median_us`, spread evenly over +-`spread` (a fraction) in a fixed shuffled
/// order.
std::vector<double> spread_samples(double median_us, double spread) {
  std::vector<double> out;
  for (int i = 0; i < 16; ++i) out.push_back(median_us * (1 + spread * ((i * 7 % 16) - 7.5) / 7.5));
  return out;
}

TEST(Stats, AConfigThreePercentSlowerIsNotTiedEitherWay) {
  // The planted config: 3% slower, samples spread +-3% (as at large M on the H200), so the two
  // bootstrap intervals cannot show a win either way, which the old rule called a tie.
  TimingStats const fast = bootstrap_median(spread_samples(100, 0.03), 1);
  TimingStats const slow = bootstrap_median(spread_samples(103, 0.03), 2);
  ASSERT_GT(fast.ci_high_us, slow.ci_low_us * 0.99);  // no win by the intervals
  EXPECT_FALSE(within_margin(fast, slow, 0.01));
  EXPECT_FALSE(within_margin(slow, fast, 0.01));
  EXPECT_EQ(decide(slow, fast, 0.01), Verdict::kUndecided);
  EXPECT_EQ(decide(fast, slow, 0.01), Verdict::kIncumbentFaster);
  // With pass medians too: slower in every pass, by 1.5-4.5%, which four passes do not show as a
  // win (t(0.975, 3) = 3.18), and do not show as equal either.
  TimingStats const fast_p = with_passes(fast, {100, 100, 100, 100});
  TimingStats const slow_p = with_passes(slow, {101.5, 104.5, 104.5, 101.5});
  EXPECT_FALSE(paired_passes_beat(slow_p.pass_medians_us, fast_p.pass_medians_us, 0.01));
  EXPECT_EQ(decide(slow_p, fast_p, 0.01), Verdict::kUndecided);
  EXPECT_EQ(decide(fast_p, slow_p, 0.01), Verdict::kIncumbentFaster);
}

TEST(Stats, AConfigFromTheSameDistributionIsTied) {
  // The twin: the same samples (+-0.4%, the H200's per-sample noise) in another order, bootstrapped
  // with another seed: the ratio's interval lies within the 1% margin, a tie both ways.
  std::vector<double> const a = spread_samples(100, 0.004);
  std::vector<double> const b(a.rbegin(), a.rend());
  TimingStats const x = with_passes(bootstrap_median(a, 1), {100.1, 99.9, 100.0, 100.2});
  TimingStats const y = with_passes(bootstrap_median(b, 2), {100.0, 100.1, 99.8, 100.1});
  EXPECT_TRUE(within_margin(x, y, 0.01));
  EXPECT_TRUE(within_margin(y, x, 0.01));
  EXPECT_EQ(decide(x, y, 0.01), Verdict::kTie);
  EXPECT_EQ(decide(y, x, 0.01), Verdict::kTie);
}

TEST(Stats, AnUndecidedVerdictWhoseMediansDifferByMoreThanTheMarginNeedsSettling) {
  TimingStats const inc = stats(100, 99, 101);
  // 2% faster by the median, but its interval reaches the incumbent's: undecided, and more data
  // may settle it.
  TimingStats const wide = stats(98, 96, 100);
  EXPECT_EQ(decide(inc, wide, 0.01), Verdict::kUndecided);
  EXPECT_TRUE(needs_settling(inc, wide, 0.01));
  // Within the margin by the median: undecided, not settled (the incumbent stays).
  TimingStats const near = stats(99.5, 99, 100);
  EXPECT_EQ(decide(inc, near, 0.01), Verdict::kUndecided);
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
  // Pooled raw, the second pass widens both intervals into each other: no win.
  EXPECT_EQ(decide(bootstrap_median(raw_inc, 1), bootstrap_median(raw_ch, 2), 0.01),
            Verdict::kUndecided);
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
}  // namespace moetune::core
