// tuner/search end to end on the cpu backend through a real worker: pruning is reported, every
// candidate ends in one outcome, each injected fault ends in its own outcome and never wins, a
// bucket where everything fails ends in time, a rerun on the same store measures nothing, and a
// run's budget lets a costly bucket overrun an even share while later buckets keep half of one,
// and timing rounds alternate direction.
#include "tuner/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "kernels/testbed.hpp"
#include "tuner/tuner_test_util.hpp"

namespace moetune::tuner {
namespace {

using testing::cpu_worker;
using testing::fast_options;
using testing::tiny_task;

class SearchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One clean run: the baseline winner and which indices are feasible.
    WorkerClient worker(cpu_worker());
    auto store = Store::open(":memory:");
    auto r = tune_bucket(worker, **store, tiny_task(), fast_options());
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    clean_ = new BucketResult(*r);
  }
  static void TearDownTestSuite() { delete clean_; }

  /// The index of the clean winner, and a feasible non-incumbent index that is not it.
  static int winner_index() {
    for (CandidateResult const& c : clean_->results) {
      if (c.config == clean_->winner) return c.index;
    }
    return -1;
  }
  static int other_feasible_index() {
    for (CandidateResult const& c : clean_->results) {
      if (c.outcome == Outcome::kOk && c.index != 0 && c.config != clean_->winner) return c.index;
    }
    return -1;
  }

  BucketResult run_with(std::string const& faults, SearchOptions options = fast_options()) {
    options.faults = *parse_fault_plan(faults);
    WorkerClient worker(cpu_worker());
    auto store = Store::open(":memory:");
    auto r = tune_bucket(worker, **store, tiny_task(), options);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? *r : BucketResult{};
  }

  static BucketResult* clean_;
};
BucketResult* SearchTest::clean_ = nullptr;

TEST_F(SearchTest, EveryCandidateEndsInOneOutcomeAndPruningIsCountedByReason) {
  BucketResult const& r = *clean_;
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.results.size(), static_cast<size_t>(r.candidates));
  int counted = 0;
  for (auto const& [outcome, n] : r.outcomes) counted += n;
  EXPECT_EQ(counted, r.candidates);
  int pruned = 0;
  for (auto const& [why, n] : r.pruned) pruned += n;
  EXPECT_EQ(pruned, r.outcomes.count(Outcome::kRejected) ? r.outcomes.at(Outcome::kRejected) : 0);
  EXPECT_GT(pruned, 0);  // K = 64 leaves split_k 2 with block_k 64 nothing to split
  EXPECT_EQ(r.pruned.count("gemm1.pipeline.split_k"), 1u);
  for (CandidateResult const& c : r.results) {
    if (c.outcome == Outcome::kRejected) EXPECT_FALSE(c.reason.empty()) << c.index;
  }
  EXPECT_EQ(r.results.front().index, 0);  // the incumbent leads the search order
  EXPECT_TRUE(r.incumbent_ok);
  EXPECT_LE(r.winner_stats.ci_low_us, r.winner_stats.median_us);
  EXPECT_FALSE(r.digest.empty());
}

TEST_F(SearchTest, OnTheCpuBackendEachGemmIsSearchedOnItsOwn) {
  BucketResult const& r = *clean_;
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.per_gemm);
  ASSERT_EQ(r.groups.size(), 4u);  // block_m 8, 16, 32, 64
  EXPECT_GT(r.measured, 0);
  EXPECT_LT(r.measured * 10, r.joint_product) << r.measured << " of " << r.joint_product;
  for (GroupResult const& g : r.groups) {
    ASSERT_TRUE(g.ok) << g.block_m;
    EXPECT_EQ(g.winner.gemm1, g.gemm1_winner.gemm1) << g.block_m;  // stage 2 keeps GEMM1
    int const top = 1 + kStageTiesCarried;
    EXPECT_LE(g.carried, top * top - 1) << g.block_m;  // the rest of the cross product
  }
  auto stage2_has = [&](int group, core::KernelConfig const& gemm2) {
    return std::any_of(r.results.begin(), r.results.end(), [&](CandidateResult const& o) {
      return o.stage == 2 * group + 1 && o.config.gemm2 == gemm2;
    });
  };
  int carried_gemm1 = 0;
  for (CandidateResult const& c : r.results) {
    if (c.stage == kAnchorStage) continue;
    GroupResult const& g = r.groups.at(c.stage / 2);
    if (c.stage % 2 == 0) {
      if (c.config.gemm2 == g.base.gemm2) continue;  // stage 1: GEMM2 at the base
      // else a cross-product pair: a stage-1 GEMM1 with a GEMM2 of the group's stage 2
      EXPECT_TRUE(stage2_has(c.stage / 2, c.config.gemm2)) << c.index;
      EXPECT_NE(c.config.gemm1, g.gemm1_winner.gemm1) << c.index;  // those pairs are stage 2's
      ++carried_gemm1;
    } else {
      EXPECT_EQ(c.config.gemm1, g.gemm1_winner.gemm1) << c.index;  // stage 2: GEMM1 at the fastest
    }
  }
  // Every stage 1, then every stage 2, then the cross product's new pairs (anchors compile alone).
  EXPECT_EQ(r.precompiles, carried_gemm1 > 0 ? 3 : 2);
}

TEST_F(SearchTest, EachInjectedFaultEndsInItsOutcomeAndNeverWins) {
  int const w = winner_index();
  int const other = other_feasible_index();
  ASSERT_GE(w, 0);
  ASSERT_GT(other, 0);
  struct Case {
    char const* kind;
    Outcome outcome;
  };
  for (Case c : {Case{"compile", Outcome::kCompileFailed}, Case{"launch", Outcome::kLaunchFailed},
                 Case{"crash", Outcome::kCrashed}, Case{"wrong", Outcome::kWrongResult},
                 Case{"nan", Outcome::kWrongResult}, Case{"oom", Outcome::kOom},
                 Case{"hang", Outcome::kTimedOut}}) {
    SCOPED_TRACE(c.kind);
    // The clean winner and one other candidate fail; the rest still decides the bucket.
    std::string const spec =
        std::string(c.kind) + "@" + std::to_string(w) + "," + c.kind + "@" + std::to_string(other);
    SearchOptions options = fast_options();
    options.timeout_s = 0.5;
    BucketResult r = run_with(spec, options);
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.results[w].outcome, c.outcome) << r.results[w].reason;
    EXPECT_EQ(r.results[other].outcome, c.outcome) << r.results[other].reason;
    EXPECT_NE(r.winner, r.results[w].config);
    EXPECT_NE(r.winner, r.results[other].config);
    EXPECT_EQ(r.outcomes.at(c.outcome),
              2 + (clean_->outcomes.count(c.outcome) ? clean_->outcomes.at(c.outcome) : 0));
  }
}

TEST_F(SearchTest, AFaultyIncumbentLosesItsPlace) {
  BucketResult r = run_with("crash@0");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.results[0].outcome, Outcome::kCrashed);
  EXPECT_FALSE(r.incumbent_ok);
  EXPECT_EQ(r.verdict, "no_incumbent");
  EXPECT_NE(r.winner, r.results[0].config);
}

TEST_F(SearchTest, WhenEveryCandidateFailsThereIsNoWinnerAndASummary) {
  BucketResult r = run_with("launch@all");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.outcomes.count(Outcome::kOk), 0u);
  EXPECT_NE(r.summary.find("launch_failed"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("rejected"), std::string::npos) << r.summary;
}

TEST_F(SearchTest, AllHangingEndsWithinTimeoutPlusFiveSeconds) {
  SearchOptions options = fast_options();
  options.timeout_s = 1;
  auto const start = std::chrono::steady_clock::now();
  BucketResult r = run_with("hang@all", options);
  double const took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.aborted);
  EXPECT_GT(r.not_run, 0);
  EXPECT_LT(took, options.timeout_s + 5);
  EXPECT_GE(r.outcomes.at(Outcome::kTimedOut), 1);
}

TEST_F(SearchTest, AllCrashingEndsWithinTimeoutPlusFiveSeconds) {
  SearchOptions options = fast_options();
  options.timeout_s = 1;
  auto const start = std::chrono::steady_clock::now();
  BucketResult r = run_with("crash@all", options);
  double const took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.ok);
  EXPECT_LT(took, options.timeout_s + 5);
  EXPECT_GE(r.outcomes.at(Outcome::kCrashed), 1);
}

TEST_F(SearchTest, ARerunOnTheSameStoreReadsEverythingBack) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "moetune-resume-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  std::string const db = tmpl + "/s.db";
  auto store = Store::open(db);
  ASSERT_TRUE(store.ok());
  // A run cut short by its budget (as a killed run would be): round 0 stops after the first pass.
  SearchOptions cut = fast_options();
  cut.deadline = std::chrono::steady_clock::now();
  {
    WorkerClient worker(cpu_worker());
    ASSERT_TRUE(tune_bucket(worker, **store, tiny_task(), cut).ok());
  }
  size_t const after_cut = (*store)->measurements()->size();
  WorkerClient worker(cpu_worker());
  auto full = tune_bucket(worker, **store, tiny_task(), fast_options());
  ASSERT_TRUE(full.ok());
  EXPECT_GT(full->resumed, 0);  // what the cut run measured was read back
  size_t const after_full = (*store)->measurements()->size();
  EXPECT_GT(after_full, after_cut);
  auto again = tune_bucket(worker, **store, tiny_task(), fast_options());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*store)->measurements()->size(), after_full);  // nothing was measured again
  EXPECT_EQ(again->winner, full->winner);
  std::filesystem::remove_all(tmpl);
}

TEST_F(SearchTest, ARerunForAnotherDeviceResumesNothing) {
  auto store = Store::open(":memory:");
  ASSERT_TRUE(store.ok());
  WorkerClient worker(cpu_worker());
  auto first = tune_bucket(worker, **store, tiny_task(), fast_options());
  ASSERT_TRUE(first.ok());
  size_t const after_first = (*store)->measurements()->size();
  BucketTask other = tiny_task();
  other.device = "cpu (another host)";  // what a store carried to another machine holds
  auto second = tune_bucket(worker, **store, other, fast_options());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->resumed, 0);  // every number was measured again, on this device
  auto const all = (*store)->measurements();
  ASSERT_GT(all->size(), after_first);
  for (size_t i = after_first; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].key.device, other.device) << i;
  }
  auto same = tune_bucket(worker, **store, tiny_task(), fast_options());  // twin: same device
  ASSERT_TRUE(same.ok());
  EXPECT_GT(same->resumed, 0);
}

TEST_F(SearchTest, RepeatReportsAgreementAndNeighbourSeedsComeFirst) {
  SearchOptions options = fast_options();
  options.repeat = 2;
  WorkerClient worker(cpu_worker());
  auto store = Store::open(":memory:");
  BucketTask task = tiny_task();
  task.seeds = {clean_->winner};
  auto r = tune_bucket(worker, **store, task, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repeats, 2);
  EXPECT_GE(r->agreeing, 0);
  EXPECT_LE(r->agreeing, 2);
  if (clean_->winner != r->incumbent) EXPECT_EQ(r->results[1].config, clean_->winner);
}

/// The configs timed in store round `round`, in the order they were timed.
std::vector<core::MoeConfig> timed_in(std::vector<Measurement> const& all, int round) {
  std::vector<core::MoeConfig> out;
  for (Measurement const& m : all) {
    if (m.key.round == round) out.push_back(m.key.config);
  }
  return out;
}

// Drift over a round (a GPU heating up) must not favour a candidate by its position: each halving
// round times half its reps forward and the rest backward, and the final round's passes go
// forward, backward, backward, forward.
TEST_F(SearchTest, HalvingRoundsAndTheFinalTimeForwardAndBackward) {
  WorkerClient worker(cpu_worker());
  auto store = Store::open(":memory:");
  ASSERT_TRUE(tune_bucket(worker, **store, tiny_task(), fast_options()).ok());
  auto all = (*store)->measurements();
  ASSERT_TRUE(all.ok());
  int halving_rounds = 0;
  for (int stage = 0; stage < 8; ++stage) {
    for (int r = 1; r < kBackwardPassOffset; ++r) {
      int const round = kStageRoundBase + stage * kStageRoundStride + r;
      auto forward = timed_in(*all, round);
      if (forward.size() < 2) continue;
      auto backward = timed_in(*all, round + kBackwardPassOffset);
      std::reverse(backward.begin(), backward.end());
      EXPECT_EQ(backward, forward) << "round " << round;
      ++halving_rounds;
    }
  }
  EXPECT_GT(halving_rounds, 0);
  auto pass0 = timed_in(*all, kFinalRound);
  ASSERT_GE(pass0.size(), 2u);
  auto reversed = pass0;
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(timed_in(*all, kFinalRound + 1), reversed);
  EXPECT_EQ(timed_in(*all, kFinalRound + 2), reversed);
  EXPECT_EQ(timed_in(*all, kFinalRound + 3), pass0);
}

// The reported ties are ok finalists that neither beat the winner nor were beaten by it beyond the
// intervals and the margin, and whose pooled median is within kTieMaxPooledGap of the winner's; a
// 50% margin leaves the pooled-median cap to decide. Real timings on a loaded machine may give no
// finalist within 2%, so whether any tie is declared is left to the deterministic
// Tie.AFinalistEqualInEveryRoundIsDeclaredTied; here every declared one is checked.
TEST_F(SearchTest, TiedFinalistsAreWithinTheIntervalsAndMarginOfTheWinner) {
  SearchOptions options = fast_options();
  options.margin = 0.5;
  WorkerClient worker(cpu_worker());
  auto store = Store::open(":memory:");
  auto r = tune_bucket(worker, **store, tiny_task(), options);
  ASSERT_TRUE(r.ok());
  auto w = std::find_if(r->results.begin(), r->results.end(),
                        [&](CandidateResult const& x) { return x.config == r->winner; });
  ASSERT_NE(w, r->results.end());
  for (core::MoeConfig const& t : r->tied) {
    EXPECT_NE(t, r->winner);
    auto c = std::find_if(r->results.begin(), r->results.end(),
                          [&](CandidateResult const& x) { return x.config == t; });
    ASSERT_NE(c, r->results.end()) << core::short_string(t);
    EXPECT_EQ(c->outcome, Outcome::kOk);
    EXPECT_NE(decide(c->stats, r->winner_stats, options.margin), Verdict::kChallengerWins);
    EXPECT_NE(decide(r->winner_stats, c->stats, options.margin), Verdict::kChallengerWins);
    EXPECT_LE(std::abs(c->pooled_median_us / w->pooled_median_us - 1.0), kTieMaxPooledGap)
        << core::short_string(t);
  }
}

TEST_F(SearchTest, ASpentBudgetStopsNewCandidatesButStillNamesAWinner) {
  SearchOptions options = fast_options();
  options.deadline = std::chrono::steady_clock::now();
  BucketResult r = run_with("", options);
  ASSERT_TRUE(r.ok);
  EXPECT_GT(r.not_run, 0);
  EXPECT_NE(r.summary.find(" not run"), std::string::npos) << r.summary;
  for (CandidateResult const& c : r.results) {
    if (c.rounds == kNotRun) EXPECT_NE(c.config, r.winner);
  }
}

// Negative twin of RepeatReportsAgreement...: with the budget spent, no repeat of the final round
// starts (they are a statistic; the decision is the main final round's).
TEST_F(SearchTest, ASpentBudgetRunsNoFinalRoundRepeats) {
  SearchOptions options = fast_options();
  options.repeat = 3;
  options.deadline = std::chrono::steady_clock::now();
  BucketResult r = run_with("", options);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.repeats, 0);
  EXPECT_EQ(r.agreeing, 0);
}

TEST(Search, NeighbourSeedsAreOrderedByDistanceInLogM) {
  core::MoeConfig a, b, c;
  a.gemm1.tile.block_m = 8;
  b.gemm1.tile.block_m = 16;
  c.gemm1.tile.block_m = 32;
  auto seeds = neighbour_seeds({{1, a}, {16, b}, {256, c}}, 64);
  ASSERT_EQ(seeds.size(), 3u);
  EXPECT_EQ(seeds[0], b);  // |log2 16 - log2 64| = 2
  EXPECT_EQ(seeds[1], c);  // 2 as well, but later in order
  EXPECT_EQ(seeds[2], a);
}

TEST(Search, PruneKeyIsTheFieldBeforeTheValue) {
  EXPECT_EQ(prune_key("gemm1.pipeline.split_k = 2 exceeds ceil(K / block_k) = 1"),
            "gemm1.pipeline.split_k");
  EXPECT_EQ(prune_key("no equals sign"), "no equals sign");
  EXPECT_EQ(outcome_summary({{Outcome::kOk, 3}, {Outcome::kCrashed, 1}, {Outcome::kOom, 0}}),
            "3 ok, 1 crashed");
}

TEST(BucketDeadline, TheRunsFirstBucketGetsThreeEvenShares) {
  // A cold cache makes the first bucket compile what later buckets reuse: 120 s for 12 buckets
  // lets it run to 30 s, not to an even 10 s, and not to the 65 s that starved the rest.
  auto const now = std::chrono::steady_clock::now();
  auto const d = bucket_deadline(now, now + std::chrono::seconds(120), 12, true);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(d - now).count(), 30000);
  EXPECT_EQ(bucket_deadline(now, now + std::chrono::seconds(120), 2, true),
            now + std::chrono::seconds(120));  // three shares of two: all of it
}

TEST(BucketDeadline, EveryLaterBucketGetsAnEvenShareOfWhatIsLeft) {
  auto const now = std::chrono::steady_clock::now();
  auto const run_deadline = now + std::chrono::seconds(300);
  for (int left = 1; left <= 16; ++left) {
    auto const d = bucket_deadline(now, run_deadline, left, false);
    double const used_s = std::chrono::duration<double>(d - now).count();
    EXPECT_NEAR(used_s, 300.0 / left, 1e-6) << left << " buckets left";
  }
  EXPECT_EQ(bucket_deadline(now, run_deadline, 1, false), run_deadline);  // the last: all left
}

TEST(BucketDeadline, NoBudgetOrASpentOneIsPassedThrough) {
  auto const now = std::chrono::steady_clock::now();
  auto const none = std::chrono::steady_clock::time_point::max();
  EXPECT_EQ(bucket_deadline(now, none, 12, true), none);
  EXPECT_EQ(bucket_deadline(now, now - std::chrono::seconds(1), 12, false),
            now - std::chrono::seconds(1));
  EXPECT_EQ(bucket_deadline(now, now + std::chrono::seconds(10), 0, false),
            now + std::chrono::seconds(10));
}

}  // namespace
}  // namespace moetune::tuner
