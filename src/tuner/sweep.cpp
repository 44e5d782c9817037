#include "tuner/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace moetune::tuner {

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kRejected: return "rejected";
    case Outcome::kFailed: return "failed";
    case Outcome::kWrongResult: return "wrong_result";
  }
  return "failed";
}

double margin(double default_us, double time_us) {
  if (default_us <= 0) return 0;
  return (default_us - time_us) / default_us;
}

namespace {

/// Checks then times one candidate; fills outcome, reason, median and digest.
CandidateResult run_candidate(kernels::Testbed& testbed, core::MoeProblem const& problem,
                              core::MoeConfig const& config, SweepOptions const& options) {
  CandidateResult r;
  r.config = config;
  if (core::Status s = testbed.backend().can_implement(problem, config); !s.ok()) {
    r.outcome = Outcome::kRejected;
    r.reason = s.error().message;
    return r;
  }
  core::Result<kernels::CheckResult> check = testbed.check(config);
  if (!check.ok()) {
    r.outcome = Outcome::kFailed;
    r.reason = check.error().to_string();
    return r;
  }
  double const tol = kernels::tolerance_for(problem.dtype).rel_l2;
  // NOTE: a NaN error compares false against the tolerance, so test "not <=" rather than ">".
  if (!check->all_finite || !check->all_written || !(check->rel_l2_error <= tol)) {
    r.outcome = Outcome::kWrongResult;
    std::ostringstream why;
    why << "rel_l2_error " << check->rel_l2_error << " (tolerance " << tol << ")"
        << (check->all_finite ? "" : ", non-finite output")
        << (check->all_written ? "" : ", unwritten output") << ", first bad index "
        << check->first_bad;
    r.reason = why.str();
    return r;
  }
  core::Result<kernels::TimingResult> timing = testbed.time(config, options.warmup, options.reps);
  if (!timing.ok()) {
    r.outcome = Outcome::kFailed;
    r.reason = timing.error().to_string();
    return r;
  }
  r.median_us = timing->median_us;
  r.digest = check->digest;
  return r;
}

}  // namespace

core::Result<BucketResult> sweep_bucket(kernels::Testbed& testbed, core::MoeProblem problem,
                                        core::RoutingProfile const& routing, int64_t bucket,
                                        SweepOptions const& options) {
  problem.num_tokens = bucket;
  MOETUNE_RETURN_IF_ERROR(testbed.prepare(problem, routing, options.seed));
  core::Backend const& backend = testbed.backend();
  core::MoeConfig const incumbent = backend.default_config(problem);
  std::vector<core::MoeConfig> space = backend.search_space(problem);
  // The incumbent is always measured, and only once.
  if (std::find(space.begin(), space.end(), incumbent) == space.end()) {
    space.insert(space.begin(), incumbent);
  }

  BucketResult out;
  out.bucket = bucket;
  out.candidates = static_cast<int>(space.size());
  CandidateResult const* best = nullptr;
  CandidateResult const* incumbent_result = nullptr;
  out.results.reserve(space.size());
  for (core::MoeConfig const& config : space) {
    out.results.push_back(run_candidate(testbed, problem, config, options));
    CandidateResult const& r = out.results.back();
    switch (r.outcome) {
      case Outcome::kRejected: ++out.rejected; break;
      case Outcome::kFailed: ++out.failed; break;
      case Outcome::kWrongResult: ++out.wrong; break;
      case Outcome::kOk: break;
    }
  }
  // Pointers are taken after the vector stops growing.
  for (CandidateResult const& r : out.results) {
    if (r.outcome != Outcome::kOk) continue;
    if (r.config == incumbent) incumbent_result = &r;
    if (best == nullptr || r.median_us < best->median_us) best = &r;
  }
  if (best == nullptr) {
    return core::make_error(core::ErrorCode::kUnsupported, "bucket " + std::to_string(bucket),
                            "no candidate survived (" + std::to_string(out.candidates) +
                                " candidates: " + std::to_string(out.rejected) + " rejected, " +
                                std::to_string(out.failed) + " failed, " +
                                std::to_string(out.wrong) + " wrong results)");
  }
  CandidateResult const* winner = best;
  if (incumbent_result != nullptr) {
    out.default_ok = true;
    out.default_us = incumbent_result->median_us;
    if (margin(incumbent_result->median_us, best->median_us) <= options.keep_margin) {
      winner = incumbent_result;
    }
  }
  out.incumbent_kept = winner == incumbent_result;
  out.winner = winner->config;
  out.time_us = winner->median_us;
  out.digest = winner->digest;
  return out;
}

}  // namespace moetune::tuner
