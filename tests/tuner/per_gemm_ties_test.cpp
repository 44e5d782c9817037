// The per-GEMM search's near ties (an in-process worker's cost model plants them): a stage carries
// the candidates its fastest does not clearly beat (the nearest, then the earliest in search
// order) into the final round as a cross product with the other stage's winner, and the final
// names the earliest in search order of the configs it cannot tell apart, whichever of them noise
// made a stage's fastest; a clearly slower runner-up, one faster only in the screening round, or
// a pair that fails the gate is not carried; incumbents and neighbours' winners do not change
// which tied config is named.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "tuner/in_process_worker.hpp"
#include "tuner/per_gemm_model.hpp"
#include "tuner/search.hpp"
#include "tuner/tuner_test_util.hpp"

namespace moetune::tuner {
namespace {

using testing::cost;
using testing::CostModel;
using testing::fast_options;
using testing::InProcessWorker;
using testing::RequestCostModel;
using testing::tiny_task;
using testing::tune;

TEST(PerGemm, AmongEquivalentChallengersTheEarliestIsNamed) {
  // Every block_m equally good, block_m 64 faster by 0.01%: far inside the 1% margin. The fastest
  // median alone would name block_m 64 (or any, with noise); the rule names the earliest group's.
  auto flat = [](core::MoeConfig const& c) {
    return cost(c) - (c.gemm1.tile.block_m == 16 ? 0 : 4) - (c.gemm1.tile.block_m == 64 ? 0.01 : 0);
  };
  InProcessWorker worker(flat);
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.verdict, "challenger_wins");
  EXPECT_EQ(r.winner.gemm1.tile.block_m, 8) << core::short_string(r.winner);
  EXPECT_DOUBLE_EQ(flat(r.winner), 100.0);
}

/// True for `k` at block_n `bn`, block_k `bk` on `threads` (split_k 1, group_m 1).
bool is(core::KernelConfig const& k, int bn, int bk, int threads) {
  return k.tile.block_n == bn && k.tile.block_k == bk && k.launch.num_threads == threads &&
         k.pipeline.split_k == 1 && k.tile.group_m == 1;
}

/// `cost`, except that GEMM1 at block_k 128 costs what block_k 64 does plus `k128_extra_us`
/// (negative: faster). In the GEMM1 list block_k 64 comes before 128.
CostModel gemm1_k128_at(double k128_extra_us) {
  return [=](core::MoeConfig const& c) {
    return cost(c) - (is(c.gemm1, 128, 128, 0) ? 7 - k128_extra_us : 0);
  };
}

/// The candidate with `config`, else nullptr.
CandidateResult const* find(BucketResult const& r, core::MoeConfig const& config) {
  for (CandidateResult const& c : r.results) {
    if (c.config == config) return &c;
  }
  return nullptr;
}

TEST(PerGemm, ANearTiedGemm1MeetsTheFastestInTheFinalAndTheEarliestIsNamed) {
  // GEMM1 block_k 128 0.01 us faster than block_k 64 (0.01%, far inside the 1% margin): stage 1
  // names block_k 128, its fastest, and stage 2 runs under it; block_k 64, tied, is paired with
  // stage 2's GEMM2 winner (the cross product), checked, timed in the final round beside it, and
  // the final names block_k 64, the earlier in search order of the two it cannot tell apart.
  InProcessWorker worker(gemm1_k128_at(-0.01));
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.groups[1].block_m, 16);  // the fastest block_m of the model
  GroupResult const& g = r.groups[1];
  EXPECT_TRUE(is(g.gemm1_winner.gemm1, 128, 128, 0)) << core::short_string(g.gemm1_winner);
  EXPECT_TRUE(is(g.winner.gemm1, 128, 128, 0)) << core::short_string(g.winner);
  EXPECT_GE(g.carried, 1);
  core::MoeConfig pair = g.winner;
  pair.gemm1.tile.block_k = 64;
  CandidateResult const* carried = find(r, pair);
  ASSERT_NE(carried, nullptr) << "the tied GEMM1 was not paired with the GEMM2 winner";
  EXPECT_EQ(carried->stage, 2);  // group 1's GEMM1 stage
  EXPECT_EQ(carried->outcome, Outcome::kOk) << carried->reason;
  EXPECT_EQ(carried->rounds, 2);  // round 0 and the final round
  auto checked = worker.configs_of("check");
  EXPECT_GE(std::count(checked.begin(), checked.end(), pair), 1);  // through the gate
  auto timed = worker.configs_of("time");
  EXPECT_EQ(std::count(timed.begin(), timed.end(), pair), 1 + kFinalPasses);
  EXPECT_EQ(r.verdict, "challenger_wins");
  EXPECT_EQ(r.winner, pair) << core::short_string(r.winner);
  EXPECT_NE(std::find(r.tied.begin(), r.tied.end(), g.winner), r.tied.end());  // reported tied
  EXPECT_EQ(r.precompiles, 3);  // stage 1, stage 2, the cross product's new pair
}

TEST(PerGemm, RunsWhereEitherOfTwoNearTiedGemm1sIsFasterNameTheSameWinner) {
  // Which of two near-equal GEMM1 configs is faster depends on noise on a device; here each run
  // makes the other one faster. Stage 1 names each run's fastest; both meet in the final round,
  // which names the same config in both runs.
  std::vector<core::MoeConfig> winners;
  for (double k128_extra_us : {-0.01, 0.01}) {
    SCOPED_TRACE(k128_extra_us);
    InProcessWorker worker(gemm1_k128_at(k128_extra_us));
    BucketResult r = tune(worker);
    ASSERT_TRUE(r.ok);
    EXPECT_TRUE(is(r.groups[1].gemm1_winner.gemm1, 128, k128_extra_us < 0 ? 128 : 64, 0));
    winners.push_back(r.winner);
  }
  EXPECT_EQ(winners[0], winners[1])
      << core::short_string(winners[0]) << " vs " << core::short_string(winners[1]);
  EXPECT_TRUE(is(winners[0].gemm1, 128, 64, 0)) << core::short_string(winners[0]);
}

TEST(PerGemm, AClearlySlowerRunnerUpIsNotCarried) {
  // The negative twin: block_k 64 3 us (3%) behind block_k 128, beyond a stage's tie margin (2%).
  InProcessWorker worker(gemm1_k128_at(-3));
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  GroupResult const& g = r.groups[1];
  EXPECT_TRUE(is(g.winner.gemm1, 128, 128, 0)) << core::short_string(g.winner);
  for (GroupResult const& each : r.groups) EXPECT_EQ(each.carried, 0) << each.block_m;
  core::MoeConfig pair = g.winner;
  pair.gemm1.tile.block_k = 64;
  EXPECT_EQ(find(r, pair), nullptr);
  EXPECT_EQ(r.precompiles, 2);
  EXPECT_EQ(r.winner, g.winner);
}

/// `cost`, except that GEMM1 at block_k 128 with block_m 16 costs what block_k 64 does, 3% less
/// (97 us against 100) in its first `fast_timings` time requests and 3% more after them: a pair
/// whose order flips between a stage's rounds by more than a stage's tie margin (2%). Stage 1 times
/// it once in round 0 (the screening), then twice (forward, backward) in each halving round.
RequestCostModel gemm1_k128_flips_after(int fast_timings) {
  auto seen = std::make_shared<int>(0);
  return [=](Request const& r) {
    core::MoeConfig const& c = r.config;
    if (!is(c.gemm1, 128, 128, 0) || c.gemm1.tile.block_m != 16) return cost(c);
    return cost(c) - 7 + (++*seen <= fast_timings ? -3.0 : 3.0);
  };
}

TEST(PerGemm, AGemm1FasterInAnEarlierStageRoundIsCarriedThoughTheLastBeatIt) {
  // Block_k 128 is 3% faster than block_k 64 in round 0 and halving round 1, 3% slower from round 2
  // on: stage 1 names block_k 64 (fastest in its last round), and block_k 128, which the winner
  // did not beat in every round, is carried into the final round with stage 2's GEMM2 winner.
  InProcessWorker worker(gemm1_k128_flips_after(3));
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  GroupResult const& g = r.groups[1];
  ASSERT_EQ(g.block_m, 16);
  ASSERT_TRUE(is(g.gemm1_winner.gemm1, 128, 64, 0)) << core::short_string(g.gemm1_winner);
  core::MoeConfig pair = g.winner;
  pair.gemm1.tile.block_k = 128;
  CandidateResult const* carried = find(r, pair);
  ASSERT_NE(carried, nullptr) << "the GEMM1 the winner beat only in the last round was dropped";
  EXPECT_EQ(carried->outcome, Outcome::kOk) << carried->reason;
  auto timed = worker.configs_of("time");
  EXPECT_EQ(std::count(timed.begin(), timed.end(), pair), 1 + kFinalPasses);  // round 0, final
  EXPECT_GE(g.carried, 1);
  EXPECT_TRUE(is(r.winner.gemm1, 128, 64, 0)) << core::short_string(r.winner);  // 3% faster there
}

TEST(PerGemm, AGemm1FasterOnlyInTheScreeningRoundIsNotCarried) {
  // The negative twin: block_k 128 is faster only in round 0 (the cheap screening) and slower
  // by 3% in every halving round; the screening alone does not make it a tie.
  InProcessWorker worker(gemm1_k128_flips_after(1));
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  GroupResult const& g = r.groups[1];
  ASSERT_TRUE(is(g.gemm1_winner.gemm1, 128, 64, 0)) << core::short_string(g.gemm1_winner);
  core::MoeConfig pair = g.winner;
  pair.gemm1.tile.block_k = 128;
  EXPECT_EQ(find(r, pair), nullptr);
  EXPECT_EQ(g.carried, 0);
}

TEST(PerGemm, ACrossProductPairThatFailsTheGateNeverEntersTheFinal) {
  InProcessWorker clean(gemm1_k128_at(-0.01));
  BucketResult first = tune(clean);
  ASSERT_TRUE(first.ok);
  core::MoeConfig carried = first.groups[1].winner;
  carried.gemm1.tile.block_k = 64;  // the tied GEMM1 with the GEMM2 winner, the clean run's winner
  CandidateResult const* pair = find(first, carried);
  ASSERT_NE(pair, nullptr);
  ASSERT_EQ(pair->rounds, 2);  // round 0 and the final round
  ASSERT_EQ(first.winner, carried);
  SearchOptions options = fast_options();
  options.faults = *parse_fault_plan("wrong@" + std::to_string(pair->index));
  InProcessWorker worker(gemm1_k128_at(-0.01));
  BucketResult r = tune(worker, options);
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.results[pair->index].config, pair->config);  // same model, same order
  EXPECT_EQ(r.results[pair->index].outcome, Outcome::kWrongResult);
  EXPECT_EQ(r.results[pair->index].rounds, 1);  // round 0 only: not in the final round
  EXPECT_EQ(r.groups[1].carried, 0);
  EXPECT_EQ(r.winner, r.groups[1].winner);  // the stage's own winner
}

TEST(PerGemm, ANearTiedGemm2IsCarriedAndTheEarlierInSearchOrderNamed) {
  // GEMM2 block_k 256 (the model's optimum) 0.01 us faster than block_k 128, which comes first:
  // stage 2 names the fastest, the final the earlier of the two.
  auto model = [](core::MoeConfig const& c) {
    return cost(c) - (is(c.gemm2, 32, 128, 1) ? 7 - 0.01 : 0);
  };
  InProcessWorker worker(model);
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  GroupResult const& g = r.groups[1];
  EXPECT_TRUE(is(g.winner.gemm2, 32, 256, 1)) << core::short_string(g.winner);  // the fastest
  EXPECT_GE(g.carried, 1);                                                      // block_k 128, tied
  EXPECT_EQ(r.precompiles, 2);  // a stage-2 tie is a whole config checked in stage 2
  EXPECT_TRUE(is(r.winner.gemm2, 32, 128, 1)) << core::short_string(r.winner);
  EXPECT_EQ(r.winner.gemm1, g.winner.gemm1);
}

TEST(PerGemm, ExhaustiveNamesTheSameAmongNearTiedGemm1s) {
  // Exhaustive runs stage 2 at the 3 best GEMM1 configs, so the tied pair is a stage-2 candidate
  // there and carried as a stage-2 tie: the same winner as the halving search.
  InProcessWorker quick(gemm1_k128_at(-0.01));
  BucketResult tuned = tune(quick);
  SearchOptions options = fast_options();
  options.exhaustive = true;
  InProcessWorker slow(gemm1_k128_at(-0.01));
  BucketResult full = tune(slow, options);
  ASSERT_TRUE(tuned.ok && full.ok);
  EXPECT_EQ(full.winner, tuned.winner) << core::short_string(full.winner);
  EXPECT_TRUE(is(full.winner.gemm1, 128, 64, 0));
}

/// The winner when the incumbent is the model's optimum with GEMM2 at block_k 128, priced at
/// `incumbent_us`, and GEMM1 at block_k 128 runs 0.6 us faster than at block_k 64 (which comes
/// first in search order): 99.4 us against 100.
core::MoeConfig winner_against_incumbent_at(double incumbent_us) {
  core::MoeConfig inc;
  inc.gemm1.tile = {.block_m = 16, .block_n = 128, .block_k = 64, .group_m = 1};
  inc.gemm2.tile = {.block_m = 16, .block_n = 32, .block_k = 128, .group_m = 1};
  inc.gemm2.launch.num_threads = 1;
  auto model = [=](core::MoeConfig const& c) {
    if (c == inc) return incumbent_us;
    return cost(c) - (is(c.gemm1, 128, 128, 0) ? 7.6 : 0);
  };
  InProcessWorker worker(model);
  auto store = Store::open(":memory:");
  BucketTask task = tiny_task();
  task.incumbent = inc;
  auto r = tune_bucket(worker, **store, task, fast_options());
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  if (!r.ok()) return {};
  EXPECT_EQ(r->verdict, "challenger_wins");
  return r->winner;
}

TEST(PerGemm, ATiedChallengerThatDoesNotItselfBeatTheIncumbentIsNotNamed) {
  // Incumbent 100.5 us: the fastest (GEMM1 block_k 128, 99.4) beats it beyond the 1% margin;
  // block_k 64 (100), earlier in search order and tied with the fastest, does not, so the fastest
  // is named.
  core::MoeConfig const w = winner_against_incumbent_at(100.5);
  EXPECT_TRUE(is(w.gemm1, 128, 128, 0)) << core::short_string(w);
}

TEST(PerGemm, ATiedChallengerThatBeatsTheIncumbentIsNamedByItsSearchOrder) {
  // The twin: incumbent 101.5 us, which block_k 64 (100) beats too, so the earlier one is named.
  core::MoeConfig const w = winner_against_incumbent_at(101.5);
  EXPECT_TRUE(is(w.gemm1, 128, 64, 0)) << core::short_string(w);
}

/// Tunes tiny_task with `seed` as a neighbouring bucket's winner, which must be the anchor right
/// after the incumbent.
BucketResult tune_seeded(CostModel cost, core::MoeConfig const& seed) {
  InProcessWorker worker(std::move(cost));
  auto store = Store::open(":memory:");
  BucketTask task = tiny_task();
  task.seeds = {seed};
  auto r = tune_bucket(worker, **store, task, fast_options());
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  if (!r.ok()) return {};
  EXPECT_EQ(r->results[1].config, seed);
  return *r;
}

TEST(PerGemm, ANeighboursWinnerSeedsBothStagesByItsGemms) {
  // A seed outside the lists (block_k 32): its GEMM1 runs in stage 1 with the base GEMM2, its
  // GEMM2 in stage 2 with the GEMM1 winner.
  core::MoeConfig seed;
  seed.gemm1.tile = {.block_m = 16, .block_n = 128, .block_k = 32, .group_m = 1};
  seed.gemm2.tile = {.block_m = 16, .block_n = 32, .block_k = 32, .group_m = 1};
  seed.gemm2.launch.num_threads = 1;
  BucketResult const r = tune_seeded(cost, seed);
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.groups[1].block_m, 16);
  bool gemm1_staged = false, gemm2_staged = false;
  for (CandidateResult const& c : r.results) {
    gemm1_staged |=
        c.stage == 2 && c.config.gemm1 == seed.gemm1 && c.config.gemm2 == r.groups[1].base.gemm2;
    gemm2_staged |= c.stage == 3 && c.config.gemm2 == seed.gemm2 &&
                    c.config.gemm1 == r.groups[1].gemm1_winner.gemm1;
  }
  EXPECT_TRUE(gemm1_staged);
  EXPECT_TRUE(gemm2_staged);
}

TEST(PerGemm, ANeighboursWinnerDoesNotChangeWhichOfTwoTiedConfigsIsNamed) {
  // Search order comes from the space, not from the anchors: a neighbour's winner with GEMM1 at
  // block_k 128 (tied with block_k 64, which the GEMM1 list holds first) is timed first, yet the
  // final names what a run without seeds names. Before, the anchor's GEMM1 led the search order,
  // so a tune named whatever its neighbours had won, and repeated tunes disagreed with it.
  InProcessWorker plain(gemm1_k128_at(-0.01));
  BucketResult unseeded = tune(plain);
  ASSERT_TRUE(unseeded.ok);
  ASSERT_TRUE(is(unseeded.winner.gemm1, 128, 64, 0)) << core::short_string(unseeded.winner);
  core::MoeConfig seed = unseeded.winner;
  seed.gemm1.tile.block_k = 128;
  BucketResult const r = tune_seeded(gemm1_k128_at(-0.01), seed);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.winner, unseeded.winner) << core::short_string(r.winner);
  EXPECT_NE(std::find(r.tied.begin(), r.tied.end(), seed), r.tied.end());  // reported tied
}

/// The GEMM1 configs of the cost model's best group (block_m 16) that pass can_implement with
/// that group's base GEMM2, in list order.
std::vector<core::KernelConfig> feasible_gemm1s_at_block_m_16() {
  kernels::cpu::CpuBackend backend;
  core::MoeProblem const p = tiny_task().problem;
  std::vector<core::KernelConfig> out;
  for (core::GemmSpace const& g : backend.gemm_search_space(p)) {
    if (g.block_m != 16) continue;
    for (core::KernelConfig const& k : g.gemm1) {
      if (backend.can_implement(p, {k, g.base.gemm2}).ok()) out.push_back(k);
    }
  }
  return out;
}

TEST(PerGemm, AStageCarriesItsNearestTiesWhereverTheySitInSearchOrder) {
  // At block_m 16 every GEMM1 is within 0.5% of the fastest (the last feasible one in the list,
  // 100 us), so all are tied with it; the second-to-last is the nearest (+0.05 us). Stage 1
  // names the last; its top must carry the nearest into the final round although many tied
  // configs come before it in search order (before, the top took the earliest two, so which
  // near-best configs met in the final depended on where they sat in the list).
  auto const gemm1s = feasible_gemm1s_at_block_m_16();
  ASSERT_GE(gemm1s.size(), size_t(kStageTiesCarried + 2));
  core::KernelConfig const fastest = gemm1s.back();
  core::KernelConfig const nearest = gemm1s[gemm1s.size() - 2];
  auto model = [&](core::MoeConfig const& c) {
    double const gemm1 = c.gemm1 == fastest ? 0 : c.gemm1 == nearest ? 0.05 : 0.5;
    return 100.0 + gemm1 + (c.gemm2.tile.block_n == 32 ? 0 : 10) +
           (c.gemm1.tile.block_m == 16 ? 0 : 4);
  };
  InProcessWorker worker(model);
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.groups[1].block_m, 16);
  GroupResult const& g = r.groups[1];
  ASSERT_EQ(g.gemm1_winner.gemm1, fastest) << core::short_string(g.gemm1_winner);
  core::MoeConfig pair = g.winner;
  pair.gemm1 = nearest;
  CandidateResult const* carried = find(r, pair);
  ASSERT_NE(carried, nullptr) << "the nearest tie was not paired with the GEMM2 winner";
  EXPECT_EQ(carried->outcome, Outcome::kOk) << carried->reason;
  EXPECT_EQ(carried->rounds, 2);  // round 0 and the final round
  // Besides the nearest, the earliest of the others in search order: the list's first.
  core::MoeConfig first = g.winner;
  first.gemm1 = gemm1s.front();
  ASSERT_NE(find(r, first), nullptr);
  EXPECT_EQ(find(r, first)->rounds, 2);
}

}  // namespace
}  // namespace moetune::tuner
