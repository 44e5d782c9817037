// Declared ties (search.hpp, step 4; issue 54): a finalist is tied with the winner only where the
// interval of their time ratio lies within the margin on both sides and their pooled medians, over
// every round each was timed in, lie within kTieMaxPooledGap of each other. On the cpu backend's
// real spaces and checks, with a cost model that plants one finalist beside the winner (an
// in-process worker).
#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "tuner/in_process_worker.hpp"
#include "tuner/search.hpp"
#include "tuner/stage2_pair.hpp"
#include "tuner/tuner_test_util.hpp"

namespace moetune::tuner {
namespace {

using testing::fast_options;
using testing::InProcessWorker;
using testing::tiny_task;

/// fast_options with 12 final reps: 3 a pass, a count no other timing uses (round 0 takes 1,
/// halving rounds 3, 9, then 12 as 2 + 1, 5 + 4, 6 + 6), so the model can tell a final pass.
SearchOptions tie_options() {
  SearchOptions o = fast_options();
  o.final_reps = 12;
  return o;
}
constexpr int kFinalPassReps = 3;

/// Tunes tiny_task without an incumbent (the default, 105 us or more, is beaten). stage2_pair()'s
/// first config, the winner, runs 100 us; its second, the planted one, `planted_us(reps, k)` for
/// a request of `reps` that is its k-th final pass (-1 elsewhere); every other config 105 us and
/// more (5 for a GEMM1 other than theirs, 8 for another GEMM2). The planted config is carried to
/// the final round as a stage-2 near tie wherever some stage round of it is within 2% of the
/// winner (the stage screen's twice the margin).
BucketResult tune_with(std::function<double(int, int)> planted_us) {
  testing::Stage2Pair const p = testing::stage2_pair();
  int final_passes = 0;
  InProcessWorker worker([&, p](Request const& r) {
    if (r.config == p.first) return 100.0;
    if (r.config == p.second) {
      return planted_us(r.reps, r.reps == kFinalPassReps ? final_passes++ : -1);
    }
    return 100.0 + (r.config.gemm1 == p.first.gemm1 ? 0 : 5) +
           (r.config.gemm2 == p.first.gemm2 ? 0 : 8);
  });
  auto store = Store::open(":memory:");
  auto r = tune_bucket(worker, **store, tiny_task(), tie_options());
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  if (!r.ok()) return {};
  EXPECT_EQ(r->verdict, "challenger_wins");
  EXPECT_EQ(r->winner, p.first) << core::short_string(r->winner);
  return *r;
}

/// The planted config's result (it must have reached the final round).
CandidateResult planted(BucketResult const& r) {
  core::MoeConfig const c = testing::stage2_pair().second;
  for (CandidateResult const& x : r.results) {
    if (x.config == c) {
      EXPECT_GE(x.rounds, 2) << "the planted config never reached a timing round after round 0";
      return x;
    }
  }
  ADD_FAILURE() << "the planted config is not a candidate";
  return {};
}

bool declared_tied(BucketResult const& r) {
  core::MoeConfig const c = testing::stage2_pair().second;
  return std::find(r.tied.begin(), r.tied.end(), c) != r.tied.end();
}

TEST(Tie, AFinalistThreePercentSlowerInEveryPassIsNotDeclaredTied) {
  // The planted config is 1.5% slower in the stage rounds (carried) and 1.5% or 4.5% slower in the
  // final passes (ABBA: 101.5, 104.5, 104.5, 101.5), 3% on average: slower in every pass, which
  // four passes do not show as a win (the paired interval reaches 0.997), so a rule that ties
  // whatever it cannot separate declares it tied. Its ratio's interval lies past 1.01: no tie.
  BucketResult const r = tune_with([](int reps, int k) {
    if (reps != kFinalPassReps) return 101.5;
    return k % 4 == 0 || k % 4 == 3 ? 101.5 : 104.5;
  });
  CandidateResult const c = planted(r);
  EXPECT_GT(c.stats.median_us, 102.5);  // its final median, against the winner's 100
  EXPECT_FALSE(declared_tied(r)) << "a config 3% slower in every pass was declared tied";
}

TEST(Tie, AFinalistEqualInEveryRoundIsDeclaredTied) {
  // The twin: the planted config runs 100 us like the winner in every request (the same
  // distribution): tied, and the winner is the earlier in search order of the two.
  BucketResult const r = tune_with([](int, int) { return 100.0; });
  EXPECT_TRUE(declared_tied(r));
  EXPECT_NEAR(planted(r).pooled_median_us, 100.0, 0.1);
}

TEST(Tie, AFinalistEqualInTheFinalButThreePercentSlowerPooledIsNotDeclaredTied) {
  // Equal to the winner in every final pass, so the final round's intervals call them equal; but
  // 3% slower in the stage's later halving rounds (it is carried by the first one, 1.5% slower),
  // which hold most of its samples: its pooled median is 3% above the winner's, past
  // kTieMaxPooledGap.
  BucketResult const r = tune_with([](int reps, int) {
    if (reps == kFinalPassReps) return 100.0;
    return reps <= 2 ? 101.5 : 103.0;  // round 0 and the first halving round: reps 1 and 2
  });
  CandidateResult const c = planted(r);
  EXPECT_NEAR(c.pooled_median_us, 103.0, 0.1);
  EXPECT_FALSE(declared_tied(r)) << "pooled " << c.pooled_median_us << " us against 100";
}

TEST(Tie, AFinalistEqualInTheFinalAndOnePointFivePercentSlowerPooledIsDeclaredTied) {
  // The twin: 1.5% slower in every stage round, within kTieMaxPooledGap.
  BucketResult const r =
      tune_with([](int reps, int) { return reps == kFinalPassReps ? 100.0 : 101.5; });
  CandidateResult const c = planted(r);
  EXPECT_NEAR(c.pooled_median_us, 101.5, 0.1);
  EXPECT_TRUE(declared_tied(r)) << "pooled " << c.pooled_median_us << " us against 100";
}

}  // namespace
}  // namespace moetune::tuner
