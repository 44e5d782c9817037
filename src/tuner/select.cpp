// tune_bucket's plan (space, anchors, prepare), final round, selection, winner recheck and
// repeats; see search.hpp for the whole procedure.
#include <algorithm>

#include "tuner/search_internal.hpp"

namespace moetune::tuner::detail {
/// The space from the worker, the anchors (incumbent, neighbours' winners, default) with their
/// pruning, then prepare.
core::Status BucketSearch::plan() {
  Request space{.op = "space", .problem = task_.problem};
  Reply reply = worker_.call(space, options_.prepare_timeout_s);
  if (!reply.ok()) return worker_error(task_, "list the search space", reply);
  default_config_ = reply.response.default_config;
  joint_space_ = reply.response.configs;
  gemm_spaces_ = reply.response.gemm_spaces;
  result_.incumbent = task_.incumbent.value_or(default_config_);
  std::vector<core::MoeConfig> anchors = {result_.incumbent};
  anchors.insert(anchors.end(), task_.seeds.begin(), task_.seeds.end());
  anchors.push_back(default_config_);
  auto admitted = admit(anchors, kAnchorStage);
  if (!admitted.ok()) return admitted.error();
  anchors_ = cands_.size();
  Reply prepared = worker_.call(
      Request{
          .op = "prepare", .problem = task_.problem, .routing = task_.routing, .seed = task_.seed},
      options_.prepare_timeout_s);
  if (!prepared.ok()) return worker_error(task_, "prepare the bucket's data", prepared);
  start_ = Clock::now();  // the fail-fast window counts candidates, not setup
  return core::Status::Ok();
}

/// Times every finalist in kFinalPasses interleaved passes, forward, backward, backward, forward
/// (ABBA: each finalist's mean position in time is the same, so a drift that is linear over the
/// round, such as a GPU heating up, biases none of them); each finalist's stats come from all its
/// samples of this round, with the drift common to the finalists between passes removed
/// (remove_pass_drift), and, when `pooled` is given, of the rounds before it that were pooled
/// there too (pooled[i] holds finalist i's drift-corrected samples). With paired_passes, each
/// finalist's stats also carry its pass medians (pooled likewise), which `decide` then pairs.
/// The store keeps the raw samples.
core::Status BucketSearch::final_round(Candidates const& finalists, int base_round,
                                       std::vector<std::vector<double>>* pooled) {
  int const per_pass = std::max(1, (options_.final_reps + kFinalPasses - 1) / kFinalPasses);
  std::vector<std::vector<std::vector<double>>> by_pass(finalists.size());
  for (int pass = 0; pass < kFinalPasses; ++pass) {
    bool const backward = pass % 4 == 1 || pass % 4 == 2;
    for (size_t k = 0; k < finalists.size(); ++k) {
      size_t const i = backward ? finalists.size() - 1 - k : k;
      CandidateResult& c = *finalists[i];
      if (c.outcome != Outcome::kOk) continue;
      std::vector<double> samples;
      MOETUNE_RETURN_IF_ERROR(time(c, base_round + pass, per_pass, &samples));
      by_pass[i].push_back(std::move(samples));
    }
  }
  std::vector<std::vector<double>> all = remove_pass_drift(by_pass);
  std::vector<std::vector<double>> passes(finalists.size());  // paired_passes: pass medians
  for (size_t i = 0; i < finalists.size() && options_.paired_passes; ++i) {
    for (std::vector<double> const& s : by_pass[i]) passes[i].push_back(median(s));
  }
  if (pooled != nullptr) {
    pooled->resize(finalists.size());
    pooled_pass_medians_.resize(finalists.size());
    for (size_t i = 0; i < finalists.size(); ++i) {
      (*pooled)[i].insert((*pooled)[i].end(), all[i].begin(), all[i].end());
      all[i] = (*pooled)[i];
      auto& mine = pooled_pass_medians_[i];
      mine.insert(mine.end(), passes[i].begin(), passes[i].end());
      passes[i] = mine;
    }
  }
  for (size_t i = 0; i < finalists.size(); ++i) {
    CandidateResult& c = *finalists[i];
    if (c.outcome == Outcome::kOk) {
      c.stats = stats_of(c, all[i]);
      c.stats.pass_medians_us = passes[i];
    }
    ++c.rounds;
  }
  return core::Status::Ok();
}

/// Leaves out of the final round every finalist but the incumbent whose latest median is more than
/// kHopelessFactor times the best finalist's: a neighbouring bucket's decode winner at M = 4096
/// (100 ms a run against 1.4 ms) cannot win, and its 15 final runs cost more than the rest.
void BucketSearch::drop_hopeless(Candidates& finalists) const {
  double best = 0;
  for (CandidateResult const* c : finalists) {
    if (c->outcome == Outcome::kOk && c->stats.median_us > 0 &&
        (best == 0 || c->stats.median_us < best)) {
      best = c->stats.median_us;
    }
  }
  if (best == 0) return;
  std::erase_if(finalists, [&](CandidateResult const* c) {
    return c->index != 0 && c->outcome == Outcome::kOk &&
           c->stats.median_us > kHopelessFactor * best;
  });
}

/// Where `c` stands in search order, lowest first: jointly, its config's position in the joint
/// space; per GEMM, its GEMM1's position in the groups' GEMM1 lists (in group order), then its
/// GEMM2's in their GEMM2 lists; a config (or GEMM) the space lacks, an anchor's, after the whole
/// space by the index of the first candidate with it; then its own index. The space is the
/// worker's answer for the problem alone, so the order depends neither on which neighbours'
/// winners seeded the search (anchors are created first) nor on which near-equal GEMM1 noise made
/// stage 1's fastest (stage 2's candidates, and so their indices, follow it): repeated tunes break
/// ties among the same configs the same way. Computed once per candidate.
std::array<int, 3> BucketSearch::search_order(CandidateResult const& c) const {
  if (c.index < static_cast<int>(order_.size()) && order_[c.index][0] >= 0) return order_[c.index];
  auto place = [&](auto const& lists, auto const& item, auto same) {
    int offset = 0;
    for (auto const* list : lists) {
      auto it = std::find(list->begin(), list->end(), item);
      if (it != list->end()) return offset + static_cast<int>(it - list->begin());
      offset += static_cast<int>(list->size());
    }
    auto first = std::find_if(cands_.begin(), cands_.end(), same);
    return offset + (first == cands_.end() ? c.index : first->index);
  };
  std::array<int, 3> key;
  if (!result_.per_gemm) {
    int const p = place(std::vector{&joint_space_}, c.config,
                        [&](CandidateResult const& o) { return o.config == c.config; });
    key = {p, p, c.index};
  } else {
    std::vector<std::vector<core::KernelConfig> const*> gemm1s, gemm2s;
    for (core::GemmSpace const& g : gemm_spaces_) {
      gemm1s.push_back(&g.gemm1);
      gemm2s.push_back(&g.gemm2);
    }
    key = {place(gemm1s, c.config.gemm1,
                 [&](CandidateResult const& o) { return o.config.gemm1 == c.config.gemm1; }),
           place(gemm2s, c.config.gemm2,
                 [&](CandidateResult const& o) { return o.config.gemm2 == c.config.gemm2; }),
           c.index};
  }
  if (c.index >= static_cast<int>(order_.size())) order_.resize(c.index + 1, {-1, -1, -1});
  order_[c.index] = key;
  return key;
}

/// core::decide on the two candidates' stats, except that a tie also needs their pooled medians
/// within kTieMaxPooledGap of each other (else undecided, or incumbent_faster when the
/// challenger's median is not lower).
Verdict BucketSearch::verdict(CandidateResult const& incumbent,
                              CandidateResult const& challenger) const {
  Verdict const v = core::decide(incumbent.stats, challenger.stats, options_.margin);
  if (v != Verdict::kTie) return v;
  double const a = incumbent.pooled_median_us, b = challenger.pooled_median_us;
  if (a > 0 && b > 0 && b <= a * (1 + kTieMaxPooledGap) && a <= b * (1 + kTieMaxPooledGap)) {
    return v;
  }
  return challenger.stats.median_us < incumbent.stats.median_us ? Verdict::kUndecided
                                                                : Verdict::kIncumbentFaster;
}

/// Selection among the ok finalists: the incumbent stays unless the fastest challenger (the one
/// reported) beats it beyond the intervals and the margin. The winner is then the earliest in
/// search order among the challengers tied with the fastest (`verdict`: the interval of their
/// ratio within the margin on both sides, pooled medians within kTieMaxPooledGap) and that beat
/// the incumbent so themselves: which of two equal configs wins does not depend on noise, so
/// repeated tunes name the same.
void BucketSearch::decide(Candidates const& finalists) {
  Candidates ranked = ok_sorted_among(finalists);
  result_.ok = !ranked.empty();
  if (!result_.ok) return;
  CandidateResult const& inc = cands_.front();
  CandidateResult const* fastest = nullptr;
  for (CandidateResult* c : ranked) {
    if (c->index != 0) {
      fastest = c;
      break;
    }
  }
  // Of the challengers tied with the fastest, the earliest in search order that itself beats the
  // incumbent (a row that replaces the incumbent must be measured faster than it: lint's
  // tiny-M shadow rule reads time_us < default_us), else the fastest.
  CandidateResult const* earliest = fastest;
  for (CandidateResult* c : ranked) {
    if (c->index != 0 && search_order(*c) < search_order(*earliest) &&
        verdict(*fastest, *c) == Verdict::kTie &&
        (inc.outcome != Outcome::kOk ||
         core::decide(inc.stats, c->stats, options_.margin) == Verdict::kChallengerWins)) {
      earliest = c;
    }
  }
  result_.has_challenger = fastest != nullptr;
  if (fastest != nullptr) {
    result_.challenger = fastest->config;
    result_.challenger_stats = fastest->stats;
  }
  result_.incumbent_ok = inc.outcome == Outcome::kOk;
  CandidateResult const* winner = ranked.front();
  result_.tie = false;
  if (result_.incumbent_ok) {
    result_.incumbent_stats = inc.stats;
    Verdict const v = fastest == nullptr ? Verdict::kIncumbentFaster : verdict(inc, *fastest);
    result_.verdict = std::string(to_string(v));
    result_.tie = v == Verdict::kTie;
    winner = v == Verdict::kChallengerWins ? earliest : &inc;
  } else {
    result_.verdict = "no_incumbent";
    winner = earliest;  // the incumbent failed: ranked holds challengers only
  }
  result_.incumbent_kept = winner->index == 0;
  result_.tied.clear();
  Candidates tied;
  for (CandidateResult* c : ranked) {
    if (c != winner && verdict(*winner, *c) == Verdict::kTie) tied.push_back(c);
  }
  std::sort(tied.begin(), tied.end(),
            [&](auto* a, auto* b) { return search_order(*a) < search_order(*b); });
  for (CandidateResult* c : tied) result_.tied.push_back(c->config);
  result_.winner = winner->config;
  result_.winner_stats = winner->stats;
  result_.digest = winner->digest;
}

void BucketSearch::restore_decision(BucketResult const& from,
                                    std::deque<CandidateResult> const& cands) {
  for (size_t i = 0; i < cands_.size(); ++i) {
    cands_[i].stats = cands[i].stats;
    cands_[i].outcome = cands[i].outcome;
    cands_[i].reason = cands[i].reason;
    cands_[i].pooled_median_us = cands[i].pooled_median_us;
  }
  result_.ok = from.ok;
  result_.winner = from.winner;
  result_.winner_stats = from.winner_stats;
  result_.incumbent_ok = from.incumbent_ok;
  result_.incumbent_stats = from.incumbent_stats;
  result_.has_challenger = from.has_challenger;
  result_.challenger = from.challenger;
  result_.challenger_stats = from.challenger_stats;
  result_.verdict = from.verdict;
  result_.incumbent_kept = from.incumbent_kept;
  result_.tie = from.tie;
  result_.tied = from.tied;
  result_.digest = from.digest;
}

/// Checks the winner a second time: it must still pass the gate and reproduce its round-0
/// digest. False (with the candidate marked wrong_result) when it does not.
core::Result<bool> BucketSearch::recheck_winner() {
  auto it = std::find_if(cands_.begin(), cands_.end(),
                         [&](CandidateResult const& c) { return c.config == result_.winner; });
  CandidateResult& c = *it;
  CandidateResult probe = c;
  auto found = store_.find(key(c, kRecheckRound));
  if (!found.ok()) return found.error();
  if (*found) {
    probe.outcome = (*found)->outcome;
    probe.reason = (*found)->reason;
    probe.digest = (*found)->digest;
  } else {
    Reply reply;
    if (request(probe, Request{.op = "check"}, &reply)) {
      probe.digest = reply.response.check.digest;
      std::string const why =
          reply.response.has_check ? gate(reply.response.check) : std::string("no check result");
      if (!why.empty()) {
        probe.outcome = Outcome::kWrongResult;
        probe.reason = "second check: " + why;
      } else if (probe.digest != c.digest) {
        probe.outcome = Outcome::kWrongResult;
        probe.reason = "nondeterministic: digest " + c.digest + " then " + probe.digest;
      }
    }
    MOETUNE_RETURN_IF_ERROR(save(probe, kRecheckRound, {}));
  }
  if (probe.outcome == Outcome::kOk) return true;
  c.outcome = probe.outcome;
  c.reason = probe.reason;
  return false;
}

/// The final round again `repeat` times; each repeat's decision is compared with the main one,
/// which stays the answer. Repeats are a statistic, not part of the decision: none starts after
/// the bucket's budget is spent (`repeats` counts those that ran; on the H200 4 repeats were 70 s
/// of S1 M = 16384's 106 s and took the tune past its --budget-min).
core::Status BucketSearch::run_repeats(Candidates const& finalists) {
  BucketResult const main = result_;
  std::deque<CandidateResult> const cands = cands_;
  std::vector<std::vector<double>> const samples = samples_;
  for (int k = 1; k <= options_.repeat; ++k) {
    if (Clock::now() >= options_.deadline) break;
    MOETUNE_RETURN_IF_ERROR(final_round(finalists, kFinalRound + k * kFinalPasses));
    decide(finalists);
    ++result_.repeats;
    if (result_.ok && result_.winner == main.winner) ++result_.agreeing;
    restore_decision(main, cands);
    samples_ = samples;  // each repeat pools its own round with the main decision's
  }
  return core::Status::Ok();
}

void BucketSearch::finish() {
  result_.results.assign(cands_.begin(), cands_.end());
  result_.candidates = static_cast<int>(cands_.size());
  for (CandidateResult const& c : cands_) {
    if (c.rounds != kNotRun) ++result_.outcomes[c.outcome];
    if (c.rounds >= 1) ++result_.measured;
  }
  std::string counts = outcome_summary(result_.outcomes);
  if (result_.not_run > 0) counts += ", " + std::to_string(result_.not_run) + " not run";
  result_.summary = std::to_string(result_.candidates) + " candidates: " + counts;
  if (progress_ && result_.ok) progress_(1.0);
}

core::Result<BucketResult> BucketSearch::run() {
  result_.bucket = task_.bucket;
  MOETUNE_RETURN_IF_ERROR(plan());
  auto finalists = gemm_spaces_.empty() ? run_joint() : run_per_gemm();
  if (!finalists.ok()) return finalists.error();
  drop_hopeless(*finalists);
  std::vector<std::vector<double>> pooled;
  MOETUNE_RETURN_IF_ERROR(final_round(*finalists, kFinalRound, &pooled));
  decide(*finalists);
  // Undecided where the medians say a gain: the final round again, its samples pooled with the
  // first's.
  while (result_.ok && result_.verdict == to_string(Verdict::kUndecided) &&
         result_.settle_rounds < kSettleRounds && Clock::now() < options_.deadline &&
         needs_settling(result_.incumbent_stats, result_.challenger_stats, options_.margin)) {
    int const base = kSettleRound + result_.settle_rounds * kFinalPasses;
    MOETUNE_RETURN_IF_ERROR(final_round(*finalists, base, &pooled));
    decide(*finalists);
    ++result_.settle_rounds;
  }
  while (result_.ok) {
    auto same = recheck_winner();
    if (!same.ok()) return same.error();
    if (*same) break;
    decide(*finalists);  // the winner turned wrong: decide again among the rest
  }
  if (result_.ok) {
    if (progress_) progress_(0.95);
    MOETUNE_RETURN_IF_ERROR(run_repeats(*finalists));
  }
  finish();
  return result_;
}

}  // namespace moetune::tuner::detail
