// Settling a final round (search.hpp, step 4): an undecided verdict between the incumbent and the
// fastest challenger (no win, no tie) whose medians differ by more than the margin runs the final
// round again, pooled with the first, at most kSettleRounds times. On the cpu backend's real spaces
// and checks with a cost model whose challenger is disturbed in chosen final passes (an in-process
// worker).
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

/// fast_options with 8 final reps: 2 a pass, a count no halving round uses (1, 3, then 8), so
/// the model can tell a final pass from every other timing.
SearchOptions settle_options() {
  SearchOptions o = fast_options();
  o.final_reps = 8;
  return o;
}
constexpr int kFinalPassReps = 2;

/// The model's incumbent (100 us) and challenger: stage2_pair()'s second and first, so the search
/// builds the challenger from its stages' own configs.
struct Pair {
  core::MoeConfig incumbent, challenger;
};
Pair pair() {
  testing::Stage2Pair const p = testing::stage2_pair();
  return {.incumbent = p.second, .challenger = p.first};
}

/// Tunes tiny_task with pair()'s incumbent (100 us). Every other config costs 105 us and more
/// (5 for a GEMM1 other than the challenger's, 8 for another GEMM2), so the stages name the
/// challenger's GEMMs; the challenger runs `other_us`, except in final passes: there its k-th one
/// (counted over the main and the settling rounds) takes `final_pass_us(k)`.
BucketResult tune_with(std::function<double(int)> final_pass_us, double other_us = 96) {
  Pair const p = pair();
  int final_passes = 0;
  InProcessWorker worker([&, p](Request const& r) {
    if (r.config == p.incumbent) return 100.0;
    if (r.config != p.challenger) {
      return 100.0 + (r.config.gemm1 == p.challenger.gemm1 ? 0 : 5) +
             (r.config.gemm2 == p.challenger.gemm2 ? 0 : 8);
    }
    if (r.reps != kFinalPassReps) return other_us;
    return final_pass_us(final_passes++);
  });
  auto store = Store::open(":memory:");
  BucketTask task = tiny_task();
  task.incumbent = p.incumbent;
  auto r = tune_bucket(worker, **store, task, settle_options());
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? *r : BucketResult{};
}

TEST(Settle, AnUndecidedVerdictTheMediansCallAGainIsSettledByAnotherFinalRound) {
  // Main final: the challenger alternates 96 / 100 us between passes (median 98: 2% ahead, its
  // interval reaching the incumbent's), undecided and in need of settling; the settling round runs
  // it at 96 throughout, and the pooled samples show the gain.
  BucketResult const r = tune_with([](int k) { return k < kFinalPasses && k % 2 == 1 ? 100 : 96; });
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.settle_rounds, 1);
  EXPECT_EQ(r.verdict, "challenger_wins");
  EXPECT_EQ(core::short_string(r.winner), core::short_string(pair().challenger));
  EXPECT_FALSE(r.tie);
}

TEST(Settle, AnUnsettledVerdictStopsAfterKSettleRoundsWithTheIncumbentKept) {
  // The challenger alternates in every pass of every round: undecided it stays, bounded; 4% apart
  // in every other pass is not a tie.
  BucketResult const r = tune_with([](int k) { return k % 2 == 1 ? 100.0 : 96.0; });
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.settle_rounds, kSettleRounds);
  EXPECT_EQ(r.verdict, "undecided");
  EXPECT_FALSE(r.tie);
  EXPECT_EQ(core::short_string(r.winner), core::short_string(pair().incumbent));
}

TEST(Settle, ATieWithinTheMarginIsNotSettled) {
  // 99.5 us in every request: within the 1% margin on both sides, a tie with nothing to settle.
  BucketResult const r = tune_with([](int) { return 99.5; }, 99.5);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.settle_rounds, 0);
  EXPECT_EQ(r.verdict, "tie");
  EXPECT_TRUE(r.tie);
  EXPECT_EQ(core::short_string(r.winner), core::short_string(pair().incumbent));
}

TEST(Settle, AClearWinIsNotSettled) {
  BucketResult const r = tune_with([](int) { return 96.0; });
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.settle_rounds, 0);
  EXPECT_EQ(r.verdict, "challenger_wins");
  EXPECT_EQ(core::short_string(r.winner), core::short_string(pair().challenger));
}

}  // namespace
}  // namespace moetune::tuner
