// tune_bucket's measuring: requests to the worker, the correctness gate, round 0, the precompile of
// a batch and timing rounds; candidates, stages and successive halving are in stages.cpp, the
// final round and selection in select.cpp. See search.hpp for the whole procedure.
#include "tuner/search.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/testbed.hpp"
#include "tuner/search_internal.hpp"

namespace moetune::tuner {

std::vector<core::MoeConfig> neighbour_seeds(std::map<int64_t, core::MoeConfig> const& winners,
                                             int64_t bucket) {
  std::vector<std::pair<double, core::MoeConfig>> near;
  for (auto const& [b, config] : winners) {
    near.push_back({std::abs(std::log2(double(b)) - std::log2(double(bucket))), config});
  }
  std::stable_sort(near.begin(), near.end(),
                   [](auto const& x, auto const& y) { return x.first < y.first; });
  std::vector<core::MoeConfig> out;
  for (auto const& [distance, config] : near) out.push_back(config);
  return out;
}

std::chrono::steady_clock::time_point bucket_deadline(
    std::chrono::steady_clock::time_point now, std::chrono::steady_clock::time_point run_deadline,
    int buckets_left, bool first) {
  if (run_deadline == std::chrono::steady_clock::time_point::max() || run_deadline <= now) {
    return run_deadline;
  }
  int const n = std::max(1, buckets_left);
  int const shares = std::min(n, first ? kFirstBucketShares : 1);
  if (shares == n) return run_deadline;
  return now + (run_deadline - now) / n * shares;
}

std::string prune_key(std::string const& reason) {
  size_t const eq = reason.find(" = ");
  return eq == std::string::npos ? reason : reason.substr(0, eq);
}

std::string outcome_summary(std::map<Outcome, int> const& counts) {
  std::string out;
  for (auto const& [outcome, n] : counts) {
    if (n == 0) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(to_string(outcome));
  }
  return out.empty() ? "no candidates" : out;
}

namespace detail {

double BucketSearch::elapsed_s() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

/// The request timeout: timeout_s, cut to what is left of the fail-fast window while nothing
/// has passed. <= 0 means the window is spent.
double BucketSearch::request_timeout() const {
  if (any_ok_) return options_.timeout_s;
  double const window = options_.timeout_s + options_.fail_fast_extra_s;
  return std::min(options_.timeout_s, window - elapsed_s());
}

MeasurementKey BucketSearch::key(CandidateResult const& c, int round) const {
  return MeasurementKey{.tune_hash = task_.tune_hash,
                        .bucket = task_.bucket,
                        .round = round,
                        .config = c.config,
                        .seed = task_.seed,
                        .fault = std::string(to_string(options_.faults.at(c.index))),
                        .device = task_.device};
}

core::Status BucketSearch::save(CandidateResult const& c, int round,
                                std::vector<double> const& samples) {
  if (c.rounds == kNotRun) return core::Status::Ok();  // never measured: nothing to resume
  Measurement m;
  m.key = key(c, round);
  m.run = task_.run;
  m.shape = task_.shape;
  m.outcome = c.outcome;
  m.reason = c.reason;
  m.samples_us = samples;
  m.median_us = c.stats.median_us;
  m.ci_low_us = c.stats.ci_low_us;
  m.ci_high_us = c.stats.ci_high_us;
  m.digest = c.digest;
  m.rel_err = c.rel_err;
  return store_.record(m);
}

/// The correctness gate: the check must have run, every element written and finite, and the
/// relative L2 error within the dtype's tolerance. "" when it passes, else why not.
std::string BucketSearch::gate(kernels::CheckResult const& check) const {
  double const tol = kernels::tolerance_for(task_.problem).rel_l2;
  // NOTE: a NaN error compares false against the tolerance, so test "not <=" rather than ">".
  if (check.all_finite && check.all_written && check.rel_l2_error <= tol) return "";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "rel_l2_error %.3g (tolerance %.3g)", check.rel_l2_error, tol);
  return std::string(buf) + (check.all_finite ? "" : ", non-finite output") +
         (check.all_written ? "" : ", unwritten output") + ", first bad index " +
         std::to_string(check.first_bad);
}

/// Sends one check or time request for `c` and folds a failure into c.outcome. True when ok.
bool BucketSearch::request(CandidateResult& c, Request req, Reply* reply) {
  req.config = c.config;
  req.fault = options_.faults.at(c.index);
  double const timeout = request_timeout();
  if (timeout <= 0) {
    c.outcome = Outcome::kTimedOut;
    c.reason = "not run: the fail-fast window was spent with no candidate passing";
    c.rounds = kNotRun;
    return false;
  }
  *reply = worker_.call(req, timeout);
  if (reply->ok()) return true;
  c.outcome = reply->outcome;
  c.reason = reply->reason;
  // A timeout cut short by the fail-fast window says nothing about the candidate: not stored.
  if (c.outcome == Outcome::kTimedOut && timeout < options_.timeout_s) c.rounds = kNotRun;
  return false;
}

/// Times `c` with `reps` in round `round` (read back from the store when measured before).
core::Status BucketSearch::time(CandidateResult& c, int round, int reps,
                                std::vector<double>* samples) {
  auto found = store_.find(key(c, round));
  if (!found.ok()) return found.error();
  if (*found) {
    ++result_.resumed;
    c.outcome = (*found)->outcome;
    c.reason = (*found)->reason;
    *samples = (*found)->samples_us;
    if (c.outcome == Outcome::kOk) {
      c.stats = stats_of(c, *samples);
      pool(c, *samples);
    }
    return core::Status::Ok();
  }
  Reply reply;
  if (request(c, Request{.op = "time", .warmup = options_.warmup, .reps = reps}, &reply)) {
    *samples = reply.response.samples_us;
    c.stats = stats_of(c, *samples);
    pool(c, *samples);
  } else {
    samples->clear();
  }
  return save(c, round, *samples);
}

TimingStats BucketSearch::stats_of(CandidateResult const& c, std::vector<double> const& s) const {
  uint64_t const seed =
      std::hash<std::string>{}(core::short_string(c.config)) ^ static_cast<uint64_t>(task_.bucket);
  return bootstrap_median(s, seed, options_.resamples);
}

/// Adds one timing round's raw samples of `c` to all of its rounds' and updates its pooled median.
void BucketSearch::pool(CandidateResult& c, std::vector<double> const& samples) {
  if (samples_.size() <= static_cast<size_t>(c.index)) samples_.resize(c.index + 1);
  std::vector<double>& all = samples_[c.index];
  for (double s : samples) {
    if (std::isfinite(s)) all.push_back(s);
  }
  c.pooled_median_us = median(all);
}

/// Round 0's check of `c` and the gate: true when it passed and its cheap timing comes next;
/// false when round 0 is over for it (read back from the store, or failed and recorded).
core::Result<bool> BucketSearch::round0_check(CandidateResult& c) {
  auto found = store_.find(key(c, 0));
  if (!found.ok()) return found.error();
  if (*found) {
    ++result_.resumed;
    c.outcome = (*found)->outcome;
    c.reason = (*found)->reason;
    c.digest = (*found)->digest;
    c.rel_err = (*found)->rel_err;
    if (c.outcome == Outcome::kOk) {
      c.stats = stats_of(c, (*found)->samples_us);
      pool(c, (*found)->samples_us);
    }
    return false;
  }
  Reply reply;
  if (request(c, Request{.op = "check"}, &reply)) {
    if (!reply.response.has_check) {
      c.outcome = Outcome::kLaunchFailed;
      c.reason = "the worker answered check without a result";
    } else {
      c.digest = reply.response.check.digest;
      c.rel_err = reply.response.check.rel_l2_error;
      std::string const why = gate(reply.response.check);
      if (why.empty()) return true;
      c.outcome = Outcome::kWrongResult;
      c.reason = why;
    }
  }
  MOETUNE_RETURN_IF_ERROR(save(c, 0, {}));
  return false;
}

/// Round 0's cheap timing of a candidate that passed its check, then its round-0 record.
core::Status BucketSearch::round0_time(CandidateResult& c) {
  Reply reply;
  std::vector<double> samples;
  if (request(c, Request{.op = "time", .warmup = options_.warmup, .reps = options_.first_reps},
              &reply)) {
    samples = reply.response.samples_us;
    c.stats = stats_of(c, samples);
    pool(c, samples);
  }
  return save(c, 0, samples);
}

/// Round 0 for one candidate: check, gate, cheap timing; or the stored answer.
core::Status BucketSearch::round0(CandidateResult& c) {
  auto timing_next = round0_check(c);
  if (!timing_next.ok()) return timing_next.error();
  return *timing_next ? round0_time(c) : core::Status::Ok();
}

/// Compiles the batch's unmeasured candidates in the worker before their round 0 (the cuda
/// worker compiles them concurrently). Synchronous (background_compile false): a candidate whose
/// compile failed there ends in that outcome now; any other answer (a crash or a timeout of the
/// whole request) is ignored and each candidate compiles on its own check, so the precompile can
/// cost time but never a candidate it did not fail itself. In the background the worker answers
/// at once and a failed compile surfaces at the candidate's own check. Only once a candidate has
/// passed: until then each compile happens inside its own check, so the fail-fast window (every
/// candidate failing ends the bucket within timeout_s + fail_fast_extra_s) still bounds the whole
/// bucket. True when the batch compiles in the background (its checks then come first).
core::Result<bool> BucketSearch::precompile(Candidates const& batch) {
  Request req{.op = "precompile", .background = options_.background_compile};
  Candidates todo;
  for (CandidateResult* c : batch) {
    if (c->outcome == Outcome::kRejected || c->rounds != 0) continue;
    auto found = store_.find(key(*c, 0));
    if (!found.ok()) return found.error();
    if (*found) continue;  // resumed: round 0 reads it back without compiling
    todo.push_back(c);
    req.configs.push_back(c->config);
    req.faults.push_back(options_.faults.at(c->index));
  }
  if (todo.empty() || !any_ok_ || Clock::now() >= options_.deadline) return false;
  double const timeout =
      options_.prepare_timeout_s + (req.background ? 0 : options_.timeout_s * double(todo.size()));
  Reply reply = worker_.call(req, timeout);
  ++result_.precompiles;
  if (!reply.ok() || reply.response.outcomes.size() != todo.size() ||
      reply.response.reasons.size() != todo.size()) {
    return false;
  }
  for (size_t i = 0; i < todo.size(); ++i) {
    CandidateResult& c = *todo[i];
    if (reply.response.outcomes[i] == Outcome::kOk) continue;
    c.outcome = reply.response.outcomes[i];
    c.reason = reply.response.reasons[i];
    c.rounds = 1;
    MOETUNE_RETURN_IF_ERROR(save(c, 0, {}));
  }
  return req.background;
}

/// True when `c` takes no part in this round 0: pruned, measured already, or left out by the
/// budget or the fail-fast window (then marked not run).
bool BucketSearch::skip_in_round0(CandidateResult& c) {
  if (c.outcome == Outcome::kRejected || c.rounds != 0) return true;  // pruned, or measured
  bool const over_budget = Clock::now() >= options_.deadline && any_ok_;
  if (!over_budget && (any_ok_ || request_timeout() > 0)) return false;
  result_.aborted = !any_ok_;
  c.outcome = Outcome::kTimedOut;
  c.reason = over_budget ? "not run: the --budget-min budget was spent"
                         : "not run: the fail-fast window was spent with no candidate passing";
  c.rounds = kNotRun;
  ++result_.not_run;
  return true;
}

/// Round 0 of every candidate of `batch` not measured yet (after its precompile), within the
/// budget and the fail-fast window. With a background compile every check of the batch comes
/// first (overlapping the compile) and the cheap timings after, once nothing compiles.
core::Status BucketSearch::measure(Candidates const& batch, double progress_from,
                                   double progress_to) {
  auto background = precompile(batch);
  if (!background.ok()) return background.error();
  auto finished = [&](CandidateResult& c, size_t position) {
    if (c.rounds == kNotRun) {
      ++result_.not_run;
      return;
    }
    c.rounds = 1;
    any_ok_ = any_ok_ || c.outcome == Outcome::kOk;
    if (progress_) {
      progress_(progress_from +
                (progress_to - progress_from) * double(position + 1) / double(batch.size()));
    }
  };
  std::vector<std::pair<CandidateResult*, size_t>> timing_next;
  for (size_t i = 0; i < batch.size(); ++i) {
    CandidateResult& c = *batch[i];
    if (skip_in_round0(c)) continue;
    if (!*background) {
      MOETUNE_RETURN_IF_ERROR(round0(c));
    } else {
      auto next = round0_check(c);
      if (!next.ok()) return next.error();
      if (*next) {
        timing_next.push_back({&c, i});
        continue;
      }
    }
    finished(c, i);
  }
  for (auto [c, position] : timing_next) {
    MOETUNE_RETURN_IF_ERROR(round0_time(*c));
    finished(*c, position);
  }
  return core::Status::Ok();
}

/// Times every ok candidate of `set` with `reps` in store round `round`, in two passes: half the
/// reps in order (store round `round`), then the rest backward (round + kBackwardPassOffset), and
/// its stats from both. Each candidate's samples thus span the round's start and end alike, so a
/// drift over the round (a GPU heating up) does not favour the candidates a halving round ranks
/// first; on the H200 at M = 1024 one config's median moved 714 -> 732 us between two halving
/// rounds of one stage while its neighbours moved 2-8%.
core::Status BucketSearch::time_round(Candidates const& set, int round, int reps) {
  int const first = (reps + 1) / 2;
  std::vector<std::vector<double>> samples(set.size());
  std::vector<bool> timed(set.size(), false);
  for (size_t i = 0; i < set.size(); ++i) {
    if (set[i]->outcome != Outcome::kOk) continue;
    timed[i] = true;
    MOETUNE_RETURN_IF_ERROR(time(*set[i], round, first, &samples[i]));
  }
  for (size_t k = 0; k < set.size() && reps > first; ++k) {
    size_t const i = set.size() - 1 - k;
    if (set[i]->outcome != Outcome::kOk) continue;
    std::vector<double> back;
    MOETUNE_RETURN_IF_ERROR(time(*set[i], round + kBackwardPassOffset, reps - first, &back));
    samples[i].insert(samples[i].end(), back.begin(), back.end());
  }
  for (size_t i = 0; i < set.size(); ++i) {
    if (!timed[i]) continue;
    CandidateResult& c = *set[i];
    if (c.outcome == Outcome::kOk) c.stats = stats_of(c, samples[i]);
    ++c.rounds;
  }
  return core::Status::Ok();
}

Candidates BucketSearch::ok_sorted_among(Candidates set) {
  std::erase_if(set, [](auto* c) { return c->outcome != Outcome::kOk; });
  std::stable_sort(set.begin(), set.end(),
                   [](auto* a, auto* b) { return a->stats.median_us < b->stats.median_us; });
  return set;
}

/// Keeps the best `keep` of `ranked` plus the incumbent when it is still ok.
Candidates BucketSearch::keep_best(Candidates ranked, size_t keep) {
  Candidates out(ranked.begin(), ranked.begin() + std::min(keep, ranked.size()));
  CandidateResult& inc = cands_.front();
  if (inc.outcome == Outcome::kOk && std::find(out.begin(), out.end(), &inc) == out.end()) {
    out.push_back(&inc);
  }
  return out;
}

}  // namespace detail

core::Result<BucketResult> tune_bucket(WorkerClient& worker, Store& store, BucketTask const& task,
                                       SearchOptions const& options, Progress const& progress) {
  detail::BucketSearch search(worker, store, task, options, progress);
  return search.run();
}

}  // namespace moetune::tuner
