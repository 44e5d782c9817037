// Search: tunes one (shape, bucket) through a worker into the store.
//   1. space: asked of the worker (the parent never touches the device): the default config, the
//      joint space and the per-GEMM spaces (one per block_m: GEMM1 and GEMM2 candidate lists);
//   2. anchors: the incumbent (index 0), neighbouring buckets' winners, the default; checked and
//      timed first; their GEMM configs join the stages of their block_m group (GEMM1 in stage 1,
//      GEMM2 in stage 2), so neighbours' winners seed both stages;
//   3. per GEMM (families that list per-GEMM spaces), for every block_m group:
//        stage 1: GEMM1 over the group's GEMM1 list, GEMM2 fixed at the family's base for this
//                 block_m (the same at every M, so compiled stage-1 kernels serve every bucket);
//        stage 2: GEMM2 over the group's list, GEMM1 fixed at stage 1's fastest;
//        cross: each stage's top (its fastest and up to kStageTiesCarried candidates the fastest
//              does not beat in every halving round by kStageTieMargin x the margin: the
//              kStageTiesNearest nearest to it, then the earliest in search order) go to the
//              final round as the cross product of
//              stage 1's GEMM1s with stage 2's GEMM2s (new pairs checked first), so the final
//              holds the same near-best combinations whichever near-equal config noise made a
//              stage's fastest;
//      each stage: pruning (can_implement per candidate, each rejection recorded with its reason
//      and counted per field), a parallel precompile of the stage's new candidates in the worker
//      (once some candidate has passed: until then each compiles inside its check, within the
//      fail-fast window; by default in the background, overlapping the checks), round 0 (check
//      against the reference on fresh random data: all written, finite, relative L2 error within
//      tolerance_for(problem), else wrong_result; cheap timing, first_reps; with the background
//      compile every check of the batch comes before its timings), then successive halving (the
//      best third re-timed with 3x the reps, at most final_reps, half of them in order and half
//      backward) down to two; the stage's winner is its fastest (the choice among near-equal
//      ones is left to the final round); stage 1 of every group runs before any stage 2. Timing
//      is always of the whole layer. Families without per-GEMM spaces are tuned jointly (round 0
//      over the joint space, halving to final_keep with the incumbent kept);
//   4. final: the incumbent and each group's cross product (plus anchors of no group), less those
//      slower than kHopelessFactor x the best, are timed in kFinalPasses interleaved passes
//      (forward, backward, backward, forward; final_reps in all); the drift common to all
//      finalists between passes is divided out (remove_pass_drift); median and bootstrap CI; the
//      incumbent stays unless a challenger's CI upper bound is below the incumbent's CI lower
//      bound by `margin` (with paired_passes, also the paired test over the passes); else the
//      table keeps the incumbent, both recorded: a tie when the interval of their time ratio lies
//      within 1 -+ margin on both sides (core::within_margin) and their pooled medians over every
//      round they got are within kTieMaxPooledGap of each other, else undecided; when undecided
//      leaves the fastest's median ahead of the incumbent's by more than the margin, the data
//      point to a gain the intervals cannot yet show, so the final round is run again, up to
//      kSettleRounds times, with every round's samples pooled, until it is settled: one disturbed
//      pass, such as a clock dip at large M, then no longer keeps a slower incumbent; among
//      challengers tied with the fastest (the same tie rule) and themselves beating the incumbent
//      so, the earliest in search order wins (by the config's place in the family's space, which
//      the worker derives from the problem alone; per GEMM: its GEMM1's place in the GEMM1 lists,
//      then its GEMM2's; configs the space lacks after it by creation: so neither which
//      neighbours' winners seeded the search nor which near-equal candidate noise made a stage's
//      fastest changes it, and repeated tunes break ties the same way); the winner is checked again
//      and must reproduce its digest; the other finalists tied with the winner (the same tie rule:
//      equal within the margin on both sides, none more than kTieMaxPooledGap from it by pooled
//      medians) are reported and stored with it (BucketResult::tied, decisions.tied);
//   5. --repeat N: the final round again N times; agreement = share naming the same winner.
// Candidate indices (what --inject-fault names) follow creation order: anchors, stage 1 of each
// group, stage 2 of each group, then the cross product's new pairs. Every measurement is looked
// up in the store first (resume) and recorded after. `exhaustive` replaces
// halving by one full-reps round of every candidate and runs stage 2 for the best
// kExhaustiveGemm1Top GEMM1 configs of each group (see SearchOptions).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "core/stats.hpp"
#include "tuner/outcome.hpp"
#include "tuner/store.hpp"
#include "tuner/worker.hpp"

namespace moetune::tuner {

// The timing statistics (core/stats.hpp) the search and selection decide by.
using core::bootstrap_median;
using core::decide;
using core::halving_cap;
using core::halving_keep;
using core::median;
using core::needs_settling;
using core::paired_passes_beat;
using core::paired_ratio_interval;
using core::pooled_ratio_interval;
using core::RatioInterval;
using core::remove_pass_drift;
using core::speedup_margin;
using core::TimingStats;
using core::Verdict;
using core::within_margin;

/// Bumped when what a store round holds changes (which reps, which order, which passes), so a
/// store written by another search is not read back as this one's (it enters the tune hash).
/// 2: final rounds of 4 passes (ABBA), halving rounds in a forward and a backward half.
/// 3: a halving round also keeps the candidates tied with its cut line (halving_keep).
/// 4: search order from the family's space (not the anchors); a stage carries its nearest ties.
/// 5: an unsettled final round is followed by settling rounds (kSettleRound).
/// 6: a stage's ties are those its fastest did not beat in every halving round (stage_ties), at
///    twice the margin, four carried, so final rounds hold more finalists.
/// (Selection's tie rule, issue 54, changed what is decided from the rounds, not what they hold.)
inline constexpr int kSearchVersion = 6;

/// Store rounds: halving rounds are 0, 1, ...; the final round's passes kFinalRound + pass;
/// repeat k (1-based) kFinalRound + k * kFinalPasses + pass; the winner's second check
/// kRecheckRound.
inline constexpr int kFinalRound = 100;
inline constexpr int kFinalPasses = 4;  ///< forward, backward, backward, forward
inline constexpr int kRecheckRound = 99;
/// Settling final rounds (needs_settling): passes at kSettleRound + s * kFinalPasses + pass, at
/// most kSettleRounds of them (after the joint halving rounds, forward and backward, which stay
/// below kBackwardPassOffset + 20, and before kRecheckRound).
inline constexpr int kSettleRound = 80;
inline constexpr int kSettleRounds = 2;
/// CandidateResult::rounds of a candidate the budget or the fail-fast window left out.
inline constexpr int kNotRun = -1;
/// Store round of halving round r (>= 1) of per-GEMM stage s: kStageRoundBase + s *
/// kStageRoundStride + r (stage s = 2 * group for GEMM1, 2 * group + 1 for GEMM2).
inline constexpr int kStageRoundBase = 1000;
inline constexpr int kStageRoundStride = 100;
/// A halving round's second, backward pass is stored at its round + this (halving rounds number
/// far fewer than this per stage).
inline constexpr int kBackwardPassOffset = 50;
/// CandidateResult::stage of the incumbent, neighbours' winners and the default.
inline constexpr int kAnchorStage = -1;
/// --exhaustive: stage 2 runs for this many of each group's best GEMM1 configs.
inline constexpr int kExhaustiveGemm1Top = 3;
/// Per GEMM: besides its fastest, each stage's top holds at most kStageTiesCarried of its other ok
/// candidates, those the fastest does not beat beyond the intervals and kStageTieMargin x `margin`
/// (the rule of `decide`, with a wider margin: a stage only screens, the final round decides) in
/// every halving round both were timed in (round 0, the screening, only for those dropped there):
/// the kStageTiesNearest whose median was nearest the fastest's over those rounds (so the configs
/// the final round would name reach it whichever of them noise put first in this stage), then the
/// earliest in search order of the rest (so every run carries the one the final round's rule
/// prefers among equivalent configs). The final round gets the cross product of stage 1's top
/// GEMM1s with stage 2's top GEMM2s (at most 5 x 5 a group; new pairs are checked like every
/// candidate before they may enter). On the H200 (S1 M = 8192 and 16384) five GEMM1 configs lay
/// within 1.5% and a config moved 1-3% against another between rounds seconds apart: with the
/// fastest's own margin and three carried, one tune in five lacked the config the other four named.
inline constexpr double kStageTieMargin = 2.0;
inline constexpr int kStageTiesNearest = 3;
inline constexpr int kStageTiesCarried = kStageTiesNearest + 1;
/// SearchOptions::stage2_gemm1s at most (tune --stage2-gemm1s).
inline constexpr int kMaxStage2Gemm1s = 1 + kStageTiesNearest;
/// A tie declared by selection (BucketResult::tie and tied, and the winner's choice among the
/// challengers tied with the fastest) also needs the two configs' pooled medians
/// (CandidateResult::pooled_median_us) within this fraction of each other, either way: the final
/// round's interval alone can call equal a config that every earlier round timed slower (on the
/// H200, tie sets of S1 held configs a median 4.2% and up to 15.8% behind the winner, 64 more
/// than 5% behind and 58 of those slower in every pass).
inline constexpr double kTieMaxPooledGap = 0.02;
/// A finalist (other than the incumbent) whose latest median exceeds this many times the best
/// finalist's is not timed in the final round: no noise or drift seen (at most ~17% between
/// passes on the H200) turns it into the winner.
inline constexpr double kHopelessFactor = 1.5;

struct SearchOptions {
  double timeout_s = 10;  ///< per request (one check, or one timing)
  double prepare_timeout_s = 120;
  double margin = 0.01;  ///< a challenger's CI must clear the incumbent's by this fraction
  int warmup = 1;        ///< untimed runs before each timing
  int first_reps = 3;    ///< round 0 reps; x3 per halving round
  int final_reps = 15;   ///< final round reps, over kFinalPasses interleaved passes
  int final_keep = 3;    ///< finalists (the incumbent joins them when it survived round 0)
  int repeat = 0;        ///< extra final rounds for the agreement report
  int resamples = 1000;  ///< bootstrap resamples
  /// No halving: every candidate is timed with final_reps after round 0 and stage 2 runs for the
  /// kExhaustiveGemm1Top best GEMM1 configs per group (joint families: every config at
  /// final_reps). The reference the tuned result is compared with (bench/tuner_targets.py).
  bool exhaustive = false;
  /// Per GEMM, halving: stage 2 searches GEMM2 under stage 1's fastest GEMM1 and, when above 1,
  /// under its nearest near ties too (stage_ties' nearest first), up to this many GEMM1 configs in
  /// all (1..kMaxStage2Gemm1s), all in one halving. A GEMM2's whole-layer time depends on the GEMM1
  /// before it (PDL overlaps them): on the H200 (S1 M = 4) the GEMM2 four tunes named ranked 11th
  /// of 15 in a fifth tune's stage 2, run under an equally fast other GEMM1.
  int stage2_gemm1s = 1;
  /// Final rounds: a challenger beats another finalist only when it also wins the paired test over
  /// the passes both were timed in (core::paired_passes_beat: the Student-t interval of its
  /// per-pass ratio below 1 - margin), not by the intervals of the pooled samples alone; settling
  /// rounds add their passes; a tie needs its interval within the margin too. On by default since
  /// the H200 tunes (docs/tuner.md, measured under the earlier tie rule); tune --no-paired-passes
  /// turns it off (in the tune hash).
  bool paired_passes = true;
  /// The worker compiles a batch in the background while it answers the batch's checks (all
  /// checks first, then the cheap timings, so nothing is timed beside a compile); false: the
  /// precompile request returns once everything is compiled and each check is followed by its
  /// timing. Either way only once some candidate of the bucket has passed.
  bool background_compile = true;
  /// While no candidate of a bucket has passed, the bucket gives up after timeout_s + this:
  /// every candidate failing must end the run within timeout + 5 s.
  double fail_fast_extra_s = 3;
  FaultPlan faults;
  /// Budget: past it, round 0 stops taking new candidates and halving jumps to the final.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

/// One bucket to tune.
struct BucketTask {
  core::MoeProblem problem;  ///< num_tokens is set to bucket
  core::RoutingProfile routing;
  uint64_t seed = 0;
  int64_t bucket = 0;
  std::optional<core::MoeConfig> incumbent;  ///< the table's current row; else the default
  std::vector<core::MoeConfig> seeds;        ///< neighbouring buckets' winners, nearest first
  // Store keys and provenance.
  int64_t run = 0;
  std::string tune_hash;
  std::string shape;
  std::string device;
};

struct CandidateResult {
  int index = 0;  ///< creation order (0 = the incumbent); search order: BucketSearch::search_order
  core::MoeConfig config;
  Outcome outcome = Outcome::kOk;
  std::string reason;
  TimingStats stats;  ///< of the latest round it was timed in
  /// The median of its raw samples pooled over every timing round it got before the decision
  /// (round 0, halving or stage rounds, final and settling rounds; repeats not), in us; 0 when
  /// never timed. What a declared tie is capped by (kTieMaxPooledGap).
  double pooled_median_us = 0;
  std::string digest;  ///< of its round-0 check
  double rel_err = 0;
  int rounds = 0;            ///< timing rounds it took part in; kNotRun: never measured (budget or
                             ///< fail-fast), its outcome is then only a placeholder
  int stage = kAnchorStage;  ///< the per-GEMM stage that created it (2 * group + 0 for GEMM1,
                             ///< + 1 for GEMM2), kAnchorStage for anchors and joint candidates; a
                             ///< cross-product pair is 2 * group (a stage-1 GEMM1, a stage-2 GEMM2)
};

/// One block_m group of the per-GEMM search.
struct GroupResult {
  int block_m = 0;
  int gemm1_candidates = 0;  ///< the family's GEMM1 list at this block_m
  int gemm2_candidates = 0;
  core::MoeConfig base;          ///< GEMM2 during stage 1 came from here
  bool gemm1_ok = false;         ///< stage 1 named a winner
  core::MoeConfig gemm1_winner;  ///< stage 1's fastest (with the base GEMM2)
  bool ok = false;               ///< stage 2 named a winner (the group's finalist)
  core::MoeConfig winner;        ///< stage 2's fastest
  TimingStats winner_stats;      ///< from its last stage round
  int carried = 0;  ///< the group's other finalists: the cross product of the stages' tops
};

struct BucketResult {
  int64_t bucket = 0;
  bool ok = false;  ///< a winner exists
  core::MoeConfig winner;
  TimingStats winner_stats;
  core::MoeConfig incumbent;
  bool incumbent_ok = false;
  TimingStats incumbent_stats;
  bool has_challenger = false;
  core::MoeConfig challenger;  ///< the fastest finalist other than the incumbent
  TimingStats challenger_stats;
  std::string verdict;  ///< Verdict name, or "no_incumbent"
  bool incumbent_kept = false;
  bool tie = false;  ///< the incumbent and the fastest challenger are tied (the incumbent stays)
  int settle_rounds = 0;  ///< final rounds run again to settle "undecided" (needs_settling)
  /// The other ok finalists tied with the winner, in search order: the interval of their time
  /// ratio to the winner's lies within 1 -+ margin on both sides (core::within_margin) and their
  /// pooled medians (CandidateResult::pooled_median_us) within kTieMaxPooledGap of the winner's.
  /// A finalist the final cannot separate from the winner but cannot show equal to it is not
  /// here. A repeated tune that names one of these declared the tie (bench/tuner_targets.py's
  /// agreement).
  std::vector<core::MoeConfig> tied;
  int repeats = 0;
  int agreeing = 0;  ///< repeats naming the same winner
  std::string digest;
  int candidates = 0;  ///< rejected ones included
  std::map<Outcome, int> outcomes;
  std::map<std::string, int> pruned;  ///< can_implement reason (field) -> count
  bool per_gemm = false;              ///< searched per GEMM (else jointly)
  std::vector<GroupResult> groups;    ///< per block_m, when per_gemm
  int measured = 0;  ///< candidates checked (round 0 ran or was read back), rejected excluded
  int64_t joint_product = 0;  ///< per_gemm: sum over groups of |GEMM1 list| x |GEMM2 list|, what
                              ///< a joint sweep of the same lists would measure
  int resumed = 0;            ///< measurements read back from the store
  int precompiles = 0;        ///< precompile requests sent to the worker
  int not_run = 0;            ///< left out by the budget or fail-fast
  bool aborted = false;       ///< fail-fast: nothing passed in time
  std::string summary;        ///< one line of outcome counts (why, when !ok)
  std::vector<CandidateResult> results;  ///< in creation order (CandidateResult::index)
};

/// Progress: the share of this bucket done so far, in [0, 1].
using Progress = std::function<void(double fraction)>;

/// Tunes one bucket. Fails only when the worker cannot serve the bucket at all (space, prepare)
/// or the store fails; a bucket where every candidate failed is a result with ok = false.
core::Result<BucketResult> tune_bucket(WorkerClient& worker, Store& store, BucketTask const& task,
                                       SearchOptions const& options, Progress const& progress = {});

/// The deadline of the next bucket of a run with a time budget (`run_deadline`; max = none): an
/// even share of what is left of the run's budget over the `buckets_left` buckets, so a bucket
/// whose search could use any amount (a large space) cannot starve the buckets after it, and
/// what a bucket leaves unused goes to those after it. The run's first bucket (`first`) gets
/// kFirstBucketShares shares: it compiles from a cold cache what later buckets reuse. The last
/// bucket gets all that is left; a spent budget gives run_deadline itself.
inline constexpr int kFirstBucketShares = 3;
std::chrono::steady_clock::time_point bucket_deadline(
    std::chrono::steady_clock::time_point now, std::chrono::steady_clock::time_point run_deadline,
    int buckets_left, bool first);

/// Seeds for `bucket`: the winners of buckets already tuned, nearest (in log2 M) first.
std::vector<core::MoeConfig> neighbour_seeds(std::map<int64_t, core::MoeConfig> const& winners,
                                             int64_t bucket);

/// "gemm1.pipeline.split_k" from "gemm1.pipeline.split_k = 2 exceeds ..." (the text before " = ",
/// else the whole reason): what pruning counts by.
std::string prune_key(std::string const& reason);
/// "12 ok, 76 crashed, 3 rejected" (nonzero counts, in Outcome order).
std::string outcome_summary(std::map<Outcome, int> const& counts);

}  // namespace moetune::tuner
