// The state of one bucket's search, shared by search.cpp (measuring: requests, round 0, the
// precompile, timing rounds, halving), stages.cpp (candidates, anchors, the per-GEMM and joint
// searches) and select.cpp (space, final round, selection, recheck, repeats). Not a public
// interface: use tune_bucket.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "kernels/testbed.hpp"
#include "tuner/search.hpp"

namespace moetune::tuner::detail {

using Clock = std::chrono::steady_clock;
using Candidates = std::vector<CandidateResult*>;
/// A stage's timing rounds, round 0 first: each ok candidate of the round with its stats then.
using StageRounds = std::vector<std::vector<std::pair<CandidateResult*, TimingStats>>>;

/// "shape bucket N: the worker could not <what>: <outcome>: <reason>" (kInternal).
core::Error worker_error(BucketTask const& task, std::string const& what, Reply const& reply);

class BucketSearch {
 public:
  BucketSearch(WorkerClient& worker, Store& store, BucketTask const& task,
               SearchOptions const& options, Progress const& progress)
      : worker_(worker), store_(store), task_(task), options_(options), progress_(progress) {}

  core::Result<BucketResult> run();

 private:
  // search.cpp
  double elapsed_s() const;
  double request_timeout() const;
  MeasurementKey key(CandidateResult const& c, int round) const;
  core::Status save(CandidateResult const& c, int round, std::vector<double> const& samples);
  std::string gate(kernels::CheckResult const& check) const;
  bool request(CandidateResult& c, Request req, Reply* reply);
  core::Status time(CandidateResult& c, int round, int reps, std::vector<double>* samples);
  TimingStats stats_of(CandidateResult const& c, std::vector<double> const& samples) const;
  void pool(CandidateResult& c, std::vector<double> const& samples);
  core::Result<bool> round0_check(CandidateResult& c);
  core::Status round0_time(CandidateResult& c);
  core::Status round0(CandidateResult& c);
  core::Result<bool> precompile(Candidates const& batch);
  bool skip_in_round0(CandidateResult& c);
  core::Status measure(Candidates const& batch, double progress_from, double progress_to);
  core::Status time_round(Candidates const& set, int round, int reps);
  static Candidates ok_sorted_among(Candidates set);
  Candidates keep_best(Candidates ranked, size_t keep);
  core::Result<Candidates> run_halving(Candidates pool);
  core::Result<CandidateResult*> stage_winner(Candidates const& pool, int stage,
                                              Candidates* tied = nullptr);
  Candidates stage_ties(CandidateResult const* winner, StageRounds const& rounds) const;
  // stages.cpp
  core::Result<Candidates> admit(std::vector<core::MoeConfig> const& configs, int stage);
  core::Result<Candidates> run_joint();
  core::Result<Candidates> run_per_gemm();
  core::MoeConfig stage_base(core::GemmSpace const& group) const;
  core::Status run_gemm2_stages(std::vector<Candidates> const& ranked,
                                std::vector<Candidates> const& gemm1_ties, Candidates* finalists);
  core::Status cross_finalists(std::vector<Candidates> const& ranked,
                               std::vector<Candidates> const& gemm1_ties,
                               std::vector<Candidates> const& gemm2_tops, Candidates* finalists);
  // select.cpp
  core::Status plan();
  void drop_hopeless(Candidates& finalists) const;
  core::Status final_round(Candidates const& finalists, int base_round,
                           std::vector<std::vector<double>>* pooled = nullptr);
  std::array<int, 3> search_order(CandidateResult const& c) const;
  Verdict verdict(CandidateResult const& incumbent, CandidateResult const& challenger) const;
  void decide(Candidates const& finalists);
  void restore_decision(BucketResult const& from, std::deque<CandidateResult> const& cands);
  core::Result<bool> recheck_winner();
  core::Status run_repeats(Candidates const& finalists);
  void finish();

  WorkerClient& worker_;
  Store& store_;
  BucketTask const& task_;
  SearchOptions const& options_;
  Progress const& progress_;
  BucketResult result_;  ///< results is filled from cands_ by finish()
  /// Every candidate in index order; a deque, so the pointers the rounds hold stay valid while
  /// later stages add candidates.
  std::deque<CandidateResult> cands_;
  Clock::time_point start_ = Clock::now();
  bool any_ok_ = false;
  // From the worker's space answer.
  core::MoeConfig default_config_;
  std::vector<core::MoeConfig> joint_space_;
  std::vector<core::GemmSpace> gemm_spaces_;
  size_t anchors_ = 0;  ///< cands_[0, anchors_): incumbent, neighbours' winners, default
  /// search_order's keys by candidate index ({-1, ...}: not yet computed).
  mutable std::vector<std::array<int, 3>> order_;
  /// Every raw sample of each candidate, over all its timing rounds, by candidate index (pool):
  /// CandidateResult::pooled_median_us is their median.
  std::vector<std::vector<double>> samples_;
  /// SearchOptions::paired_passes: each finalist's pass medians of the pooled final rounds (the
  /// first and its settling rounds), by its position in the finalists.
  std::vector<std::vector<double>> pooled_pass_medians_;
};

}  // namespace moetune::tuner::detail
