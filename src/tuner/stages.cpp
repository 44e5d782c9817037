// tune_bucket's candidates and stages: admitting configs (dedup, feasibility, pruning with
// reasons), the per-GEMM search (stage 1: GEMM1 with GEMM2 at a base; stage 2: GEMM2 with GEMM1 at
// stage 1's fastest; per block_m group; the cross product of both stages' fastest and near ties
// goes to the final round) and the joint search of families without per-GEMM spaces, and
// successive halving (a stage's fastest, the joint finalists). See search.hpp for the whole
// procedure.
#include <algorithm>
#include <map>

#include "tuner/search_internal.hpp"

namespace moetune::tuner::detail {
namespace {

/// `c` belongs to the per-GEMM group of `block_m`: its GEMM2's (align's) block_m, with a GEMM1 of
/// that block_m or smaller (a family's sub-blocks; the group of 256 holds 128-row GEMM1s).
bool same_block_m(core::MoeConfig const& c, int block_m) {
  return c.gemm2.tile.block_m == block_m && c.gemm1.tile.block_m <= block_m;
}

void push_unique(Candidates& set, CandidateResult* c) {
  if (std::find(set.begin(), set.end(), c) == set.end()) set.push_back(c);
}

}  // namespace

core::Error worker_error(BucketTask const& task, std::string const& what, Reply const& reply) {
  return core::make_error(core::ErrorCode::kInternal,
                          task.shape + " bucket " + std::to_string(task.bucket),
                          "the worker could not " + what + ": " +
                              std::string(to_string(reply.outcome)) + ": " + reply.reason);
}

/// The candidates of `configs`, in order: an existing candidate when the config was seen before
/// (never measured twice), else a new one (next index, `stage`) checked by can_implement in the
/// worker; a rejection is recorded with its reason and counted by field.
core::Result<Candidates> BucketSearch::admit(std::vector<core::MoeConfig> const& configs,
                                             int stage) {
  Candidates out;
  Candidates fresh;
  Request req{.op = "feasible", .problem = task_.problem};
  for (core::MoeConfig const& config : configs) {
    auto it = std::find_if(cands_.begin(), cands_.end(),
                           [&](CandidateResult const& c) { return c.config == config; });
    if (it == cands_.end()) {
      CandidateResult c;
      c.index = static_cast<int>(cands_.size());
      c.config = config;
      c.stage = stage;
      cands_.push_back(c);
      fresh.push_back(&cands_.back());
      req.configs.push_back(config);
      push_unique(out, &cands_.back());
    } else {
      push_unique(out, &*it);
    }
  }
  if (fresh.empty()) return out;
  Reply feasible = worker_.call(req, options_.prepare_timeout_s);
  if (!feasible.ok() || feasible.response.reasons.size() != fresh.size()) {
    return worker_error(task_, "check feasibility", feasible);
  }
  for (size_t i = 0; i < fresh.size(); ++i) {
    std::string const& why = feasible.response.reasons[i];
    if (why.empty()) continue;
    CandidateResult& c = *fresh[i];
    c.outcome = Outcome::kRejected;
    c.reason = why;
    ++result_.pruned[prune_key(why)];
    auto found = store_.find(key(c, 0));
    if (!found.ok()) return found.error();
    if (!*found) MOETUNE_RETURN_IF_ERROR(save(c, 0, {}));
  }
  return out;
}

/// Families without per-GEMM spaces: round 0 over anchors + the joint space, halving to
/// final_keep with the incumbent kept.
core::Result<Candidates> BucketSearch::run_joint() {
  auto joint = admit(joint_space_, kAnchorStage);
  if (!joint.ok()) return joint.error();
  Candidates all;
  for (CandidateResult& c : cands_) all.push_back(&c);
  MOETUNE_RETURN_IF_ERROR(measure(all, 0, 0.7));
  return run_halving(all);
}

/// The config stage 1 of `group` takes its GEMM2 from: the family's base. Not an anchor: the base
/// is the same at every M, so on a compiling backend the stage-1 modules of one block_m (GEMM1
/// candidate + base GEMM2) are compiled once and every bucket reuses them from the cache.
core::MoeConfig BucketSearch::stage_base(core::GemmSpace const& group) const { return group.base; }

/// The candidates of a stage the winner (its fastest) does not beat (core::decide: beyond both
/// intervals and kStageTieMargin x the margin) in every halving round both were timed in: a
/// candidate the winner beat in the last round but not in an earlier one is tied, since the order
/// flipped between rounds by more than either round's interval shows (on the H200, rounds seconds
/// apart moved a pair of configs 1-3% against each other, each round's interval ~0.3%). Round 0
/// (the stage's cheap screening timing) judges only a candidate dropped there. Of the tied, the
/// kStageTiesNearest whose mean ratio to the winner over those rounds is lowest, then the
/// earliest in search order of the others (kStageTiesCarried in all).
Candidates BucketSearch::stage_ties(CandidateResult const* winner,
                                    StageRounds const& rounds) const {
  // Per candidate, each round it shared with the winner: (its stats, the winner's).
  std::map<CandidateResult*, std::vector<std::pair<TimingStats, TimingStats>>> shared;
  for (auto const& round : rounds) {
    auto w = std::find_if(round.begin(), round.end(),
                          [&](auto const& entry) { return entry.first == winner; });
    if (w == round.end()) continue;
    for (auto const& [c, stats] : round) {
      if (c != winner) shared[c].push_back({stats, w->second});
    }
  }
  Candidates tied;
  std::map<CandidateResult*, double> gap;  // mean of its median / the winner's over the rounds
  for (auto& [c, list] : shared) {
    if (list.size() > 1) list.erase(list.begin());  // halving rounds judge, not the screening
    bool beaten_in_every_round = true;
    double sum = 0;
    for (auto const& [its, winners] : list) {
      beaten_in_every_round =
          beaten_in_every_round &&
          core::decide(its, winners, kStageTieMargin * options_.margin) == Verdict::kChallengerWins;
      sum += winners.median_us > 0 ? its.median_us / winners.median_us : its.median_us;
    }
    gap[c] = sum / static_cast<double>(list.size());
    if (!beaten_in_every_round) tied.push_back(c);
  }
  auto earlier = [&](auto* a, auto* b) { return search_order(*a) < search_order(*b); };
  std::sort(tied.begin(), tied.end(), earlier);  // search order breaks equal gaps
  std::stable_sort(tied.begin(), tied.end(), [&](auto* a, auto* b) { return gap[a] < gap[b]; });
  size_t const nearest = std::min(tied.size(), size_t(kStageTiesNearest));
  std::sort(tied.begin() + static_cast<std::ptrdiff_t>(nearest), tied.end(), earlier);
  if (tied.size() > size_t(kStageTiesCarried)) tied.resize(kStageTiesCarried);
  return tied;
}

/// Stage 2 of every group with a GEMM1 winner (ranked[g]: stage 1's ok candidates, its fastest
/// first): GEMM2 over the group's list with GEMM1 fixed at stage 1's fastest (and, with
/// stage2_gemm1s above 1, at its nearest near ties, gemm1_ties[g], too; exhaustive: at each of the
/// kExhaustiveGemm1Top best distinct GEMM1 configs), one precompile batch for all groups.
/// Each stage's fastest (else stage 1's) and near ties then meet stage 1's in the cross product
/// (cross_finalists).
core::Status BucketSearch::run_gemm2_stages(std::vector<Candidates> const& ranked,
                                            std::vector<Candidates> const& gemm1_ties,
                                            Candidates* finalists) {
  std::vector<Candidates> pools(ranked.size());
  Candidates batch;
  size_t const top = options_.exhaustive
                         ? size_t(kExhaustiveGemm1Top)
                         : size_t(std::clamp(options_.stage2_gemm1s, 1, kMaxStage2Gemm1s));
  for (size_t g = 0; g < ranked.size(); ++g) {
    std::vector<core::KernelConfig> fixed;
    auto fix = [&](CandidateResult const* c) {
      if (fixed.size() < top &&
          std::find(fixed.begin(), fixed.end(), c->config.gemm1) == fixed.end()) {
        fixed.push_back(c->config.gemm1);
      }
    };
    if (options_.exhaustive) {
      for (CandidateResult* c : ranked[g]) fix(c);  // the best distinct GEMM1s
    } else if (!ranked[g].empty()) {
      fix(ranked[g].front());                           // stage 1's fastest
      for (CandidateResult* c : gemm1_ties[g]) fix(c);  // then its nearest near ties
    }
    for (core::KernelConfig const& gemm1 : fixed) {
      std::vector<core::MoeConfig> configs;
      for (core::KernelConfig const& k : gemm_spaces_[g].gemm2) configs.push_back({gemm1, k});
      for (size_t i = 0; i < anchors_; ++i) {  // the anchors' GEMM2 at this block_m too
        if (same_block_m(cands_[i].config, gemm_spaces_[g].block_m)) {
          configs.push_back({gemm1, cands_[i].config.gemm2});
        }
      }
      auto admitted = admit(configs, 2 * static_cast<int>(g) + 1);
      if (!admitted.ok()) return admitted.error();
      for (CandidateResult* c : ranked[g]) {
        if (c->config.gemm1 == gemm1) push_unique(pools[g], c);
      }
      for (CandidateResult* c : *admitted) {
        push_unique(pools[g], c);
        push_unique(batch, c);
      }
    }
  }
  MOETUNE_RETURN_IF_ERROR(measure(batch, 0.45, 0.85));
  std::vector<Candidates> gemm2_tops(ranked.size());
  for (size_t g = 0; g < ranked.size(); ++g) {
    if (ranked[g].empty()) continue;
    Candidates tied;
    auto w = stage_winner(pools[g], 2 * static_cast<int>(g) + 1, &tied);
    if (!w.ok()) return w.error();
    CandidateResult* best = *w != nullptr ? *w : ranked[g].front();
    if (best->outcome != Outcome::kOk) continue;
    result_.groups[g].ok = true;
    result_.groups[g].winner = best->config;
    result_.groups[g].winner_stats = best->stats;
    gemm2_tops[g].push_back(best);
    for (CandidateResult* c : tied) {  // whole configs, checked in stage 2 or before
      if (c->outcome == Outcome::kOk) gemm2_tops[g].push_back(c);
    }
  }
  return cross_finalists(ranked, gemm1_ties, gemm2_tops, finalists);
}

/// Every group's final candidates: the cross product of stage 1's top (its fastest GEMM1 and near
/// ties) with stage 2's (its fastest whole config and near ties, by their GEMM2), plus stage 2's
/// top as it is. Pairs not yet candidates are admitted (pruned like any config), checked and timed
/// in round 0 (one precompile batch for all groups); only ok ones join `finalists`. So the final
/// round holds the same near-best combinations whichever of two near-equal GEMM1 configs noise
/// made the fastest at stage 1, and its own tie rule decides among them.
core::Status BucketSearch::cross_finalists(std::vector<Candidates> const& ranked,
                                           std::vector<Candidates> const& gemm1_ties,
                                           std::vector<Candidates> const& gemm2_tops,
                                           Candidates* finalists) {
  std::vector<Candidates> members(gemm2_tops.size());
  Candidates batch;
  for (size_t g = 0; g < gemm2_tops.size(); ++g) {
    if (!result_.groups[g].ok) continue;
    std::vector<core::KernelConfig> gemm1s = {ranked[g].front()->config.gemm1};
    for (CandidateResult* c : gemm1_ties[g]) gemm1s.push_back(c->config.gemm1);
    std::vector<core::MoeConfig> configs;
    for (CandidateResult* c : gemm2_tops[g]) configs.push_back(c->config);
    for (core::KernelConfig const& gemm1 : gemm1s) {
      for (CandidateResult* c : gemm2_tops[g]) configs.push_back({gemm1, c->config.gemm2});
    }
    auto admitted = admit(configs, 2 * static_cast<int>(g));
    if (!admitted.ok()) return admitted.error();
    members[g] = *admitted;
    for (CandidateResult* c : *admitted) push_unique(batch, c);  // measure skips measured ones
  }
  MOETUNE_RETURN_IF_ERROR(measure(batch, 0.85, 0.9));
  for (size_t g = 0; g < members.size(); ++g) {
    for (CandidateResult* c : members[g]) {
      if (c->outcome != Outcome::kOk || c->rounds == kNotRun) continue;
      if (std::find(finalists->begin(), finalists->end(), c) != finalists->end()) continue;
      finalists->push_back(c);
      if (c->config != result_.groups[g].winner) ++result_.groups[g].carried;
    }
  }
  return core::Status::Ok();
}

/// Per GEMM: anchors, then stage 1 of every group (one precompile batch), then stage 2 of every
/// group (another), then the cross product of both stages' tops (a third, when it holds new
/// pairs). Returns the finalists: each group's cross product, anchors of no group that passed,
/// and the incumbent while ok. Anchors of a group take part in its stages by their GEMM
/// configs, not as whole configs (which would compare two GEMMs at once).
core::Result<Candidates> BucketSearch::run_per_gemm() {
  result_.per_gemm = true;
  Candidates anchors;
  for (size_t i = 0; i < anchors_; ++i) anchors.push_back(&cands_[i]);
  MOETUNE_RETURN_IF_ERROR(measure(anchors, 0, 0.05));

  std::vector<Candidates> pools(gemm_spaces_.size());
  Candidates batch;
  for (size_t g = 0; g < gemm_spaces_.size(); ++g) {
    core::GemmSpace const& space = gemm_spaces_[g];
    GroupResult group{.block_m = space.block_m,
                      .gemm1_candidates = static_cast<int>(space.gemm1.size()),
                      .gemm2_candidates = static_cast<int>(space.gemm2.size()),
                      .base = stage_base(space)};
    result_.joint_product += int64_t(space.gemm1.size()) * int64_t(space.gemm2.size());
    // The anchors at this block_m join by their GEMM1 (with the base GEMM2 like the rest), so a
    // stage compares one GEMM at a time; neighbours' winners thus seed both stages.
    std::vector<core::MoeConfig> configs;
    for (core::KernelConfig const& k : space.gemm1) configs.push_back({k, group.base.gemm2});
    for (CandidateResult* c : anchors) {
      if (same_block_m(c->config, space.block_m)) {
        configs.push_back({c->config.gemm1, group.base.gemm2});
      }
    }
    auto admitted = admit(configs, 2 * static_cast<int>(g));
    if (!admitted.ok()) return admitted.error();
    for (CandidateResult* c : *admitted) {
      push_unique(pools[g], c);
      push_unique(batch, c);
    }
    result_.groups.push_back(group);
  }
  MOETUNE_RETURN_IF_ERROR(measure(batch, 0.05, 0.45));

  std::vector<Candidates> ranked(gemm_spaces_.size());
  std::vector<Candidates> gemm1_ties(gemm_spaces_.size());
  for (size_t g = 0; g < gemm_spaces_.size(); ++g) {
    auto w = stage_winner(pools[g], 2 * static_cast<int>(g), &gemm1_ties[g]);
    if (!w.ok()) return w.error();
    if (*w == nullptr) continue;
    result_.groups[g].gemm1_ok = true;
    result_.groups[g].gemm1_winner = (*w)->config;
    ranked[g] = ok_sorted_among(pools[g]);
    std::stable_partition(ranked[g].begin(), ranked[g].end(),
                          [&](CandidateResult* c) { return c == *w; });
  }
  Candidates finalists;
  MOETUNE_RETURN_IF_ERROR(run_gemm2_stages(ranked, gemm1_ties, &finalists));
  for (CandidateResult* c : anchors) {
    bool const grouped = std::any_of(gemm_spaces_.begin(), gemm_spaces_.end(), [&](auto const& s) {
      return same_block_m(c->config, s.block_m);
    });
    if (!grouped && c->outcome == Outcome::kOk) push_unique(finalists, c);
  }
  if (cands_.front().outcome == Outcome::kOk) push_unique(finalists, &cands_.front());
  return finalists;
}

namespace {
/// The stats of `set`, in its order (for halving_keep).
std::vector<TimingStats> stats_in_order(Candidates const& set) {
  std::vector<TimingStats> out;
  out.reserve(set.size());
  for (CandidateResult const* c : set) out.push_back(c->stats);
  return out;
}
}  // namespace

/// Joint search: halving over `pool` down to final_keep (the incumbent kept while ok).
core::Result<Candidates> BucketSearch::run_halving(Candidates pool) {
  Candidates alive = ok_sorted_among(std::move(pool));
  size_t const final_keep = static_cast<size_t>(std::max(1, options_.final_keep));
  if (options_.exhaustive) {
    MOETUNE_RETURN_IF_ERROR(time_round(alive, 1, options_.final_reps));
    return keep_best(ok_sorted_among(alive), final_keep);
  }
  int reps = options_.first_reps;
  for (int round = 1; alive.size() > final_keep + 1; ++round) {
    if (Clock::now() >= options_.deadline) break;
    // The best third, and those the cut line does not beat (halving_keep), at most half as many
    // again; two fewer than alive, so a round shrinks it even when the incumbent is added back.
    size_t const keep = std::max(final_keep, (alive.size() + 2) / 3);
    size_t const most = halving_cap(alive.size(), keep, 2);
    alive = keep_best(alive, halving_keep(stats_in_order(alive), keep, most, options_.margin));
    reps = std::min(reps * 3, std::max(options_.final_reps, options_.first_reps));
    MOETUNE_RETURN_IF_ERROR(time_round(alive, round, reps));
    alive = ok_sorted_among(alive);
    if (progress_) progress_(std::min(0.9, 0.7 + 0.1 * round));
  }
  return keep_best(alive, final_keep);
}

/// One per-GEMM stage's winner, its fastest: halving over the ok candidates of `pool` (the best
/// third, at least two, plus those tied with the cut line, re-timed with 3x the reps) until two
/// were compared at the full reps;
/// nullptr when none passed. Exhaustive: one round of all of them at final_reps. `tied` (when
/// given) gets the stage's near ties (stage_ties), which join the final round with it: which of
/// two equivalent configs a stage names depends on noise, so the choice among them is left to
/// the final round's rule (search order among the tied), not made here.
core::Result<CandidateResult*> BucketSearch::stage_winner(Candidates const& pool, int stage,
                                                          Candidates* tied) {
  Candidates alive = ok_sorted_among(pool);
  StageRounds rounds;
  auto snapshot = [&] {
    rounds.emplace_back();
    for (CandidateResult* c : alive) rounds.back().push_back({c, c->stats});
  };
  snapshot();  // round 0 (or what the stage's candidates were last timed in before it)
  int const cap = std::max(options_.final_reps, options_.first_reps);
  auto round_of = [&](int r) { return kStageRoundBase + stage * kStageRoundStride + r; };
  if (options_.exhaustive && !alive.empty()) {
    MOETUNE_RETURN_IF_ERROR(time_round(alive, round_of(1), cap));
    alive = ok_sorted_among(alive);
    snapshot();
  }
  int reps = options_.first_reps;
  for (int r = 1; !options_.exhaustive && alive.size() > 1; ++r) {
    if (Clock::now() >= options_.deadline) break;
    // The best third (at least two), and those the cut line does not beat (halving_keep), at
    // most half as many again and one fewer than alive, so a round of three or more shrinks it.
    size_t const keep = std::max<size_t>(2, (alive.size() + 2) / 3);
    size_t const most = halving_cap(alive.size(), keep, 1);
    alive.resize(halving_keep(stats_in_order(alive), keep, most, options_.margin));
    reps = std::min(reps * 3, cap);
    MOETUNE_RETURN_IF_ERROR(time_round(alive, round_of(r), reps));
    alive = ok_sorted_among(alive);
    snapshot();
    if (alive.size() <= 2 && reps >= cap) break;
  }
  if (alive.empty()) return nullptr;
  CandidateResult* winner = alive.front();
  if (tied != nullptr) *tied = stage_ties(winner, rounds);
  return winner;
}

}  // namespace moetune::tuner::detail
