// The state of one bucket's search, shared by search.cpp (space, round 0, halving) and select.cpp
// (final round, selection, recheck, repeats). Not a public interface: use tune_bucket.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kernels/testbed.hpp"
#include "tuner/search.hpp"

namespace moetune::tuner::detail {

using Clock = std::chrono::steady_clock;

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
  core::Status round0(CandidateResult& c);
  core::Status run_round0();
  std::vector<CandidateResult*> ok_sorted();
  std::vector<CandidateResult*> ok_sorted_among(std::vector<CandidateResult*> set);
  std::vector<CandidateResult*> keep_best(std::vector<CandidateResult*> ranked, size_t keep);
  core::Result<std::vector<CandidateResult*>> run_halving();
  // select.cpp
  core::Status plan();
  core::Status final_round(std::vector<CandidateResult*> const& finalists, int base_round);
  void decide(std::vector<CandidateResult*> const& finalists);
  void restore_decision(BucketResult const& from);
  core::Result<bool> recheck_winner();
  core::Status run_repeats(std::vector<CandidateResult*> const& finalists);
  void finish();

  WorkerClient& worker_;
  Store& store_;
  BucketTask const& task_;
  SearchOptions const& options_;
  Progress const& progress_;
  BucketResult result_;
  Clock::time_point start_ = Clock::now();
  bool any_ok_ = false;
};

}  // namespace moetune::tuner::detail
