// Sweep: the foundation's plain in-process tuner for one (problem, bucket). Every candidate of the
// backend's search space ends in exactly one outcome (STYLE 17): rejected by can_implement, a
// failed run, a wrong result, or ok with a timing. The incumbent (the backend's default config)
// keeps the bucket unless a challenger beats it by more than a margin. A later issue replaces this
// with an isolated statistical tuner (one worker process per device); the interface stays small so
// the CLI does not care which one runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "kernels/testbed.hpp"

namespace moetune::tuner {

/// How one bucket is swept.
struct SweepOptions {
  int warmup = 2;             ///< untimed runs before timing each survivor
  int reps = 5;               ///< timed runs per survivor; the median decides
  double keep_margin = 0.02;  ///< a challenger must be faster than the incumbent by > 2%
  uint64_t seed = 0;          ///< data seed for Testbed::prepare
};

/// The one outcome of a candidate.
enum class Outcome { kOk, kRejected, kFailed, kWrongResult };
/// "ok", "rejected", "failed", "wrong_result".
const char* to_string(Outcome o);

struct CandidateResult {
  core::MoeConfig config;
  Outcome outcome = Outcome::kOk;
  std::string reason;    ///< why it was rejected/failed/wrong; "" when ok
  double median_us = 0;  ///< ok only
  std::string digest;    ///< output digest of the checked run; ok only
};

/// The answer for one bucket.
struct BucketResult {
  int64_t bucket = 0;
  core::MoeConfig winner;
  bool incumbent_kept = false;  ///< the default config stayed (not beaten by > keep_margin)
  double time_us = 0;           ///< the winner's median
  double default_us = 0;        ///< the default config's median; 0 when it failed
  bool default_ok = false;      ///< the default config passed the check
  int candidates = 0;           ///< search-space size (the default counted once)
  int rejected = 0;             ///< dropped by can_implement
  int failed = 0;               ///< a run that returned an error
  int wrong = 0;                ///< wrong or non-finite result
  std::string digest;           ///< the winner's output digest
  std::vector<CandidateResult> results;  ///< every candidate, in search-space order
};

/// Sweeps one bucket: problem.num_tokens is set to `bucket`, the testbed is prepared once with
/// (routing, options.seed), then every candidate is checked and the survivors timed. Fails when
/// prepare fails or no candidate (default included) survives; the error then counts the outcomes.
core::Result<BucketResult> sweep_bucket(kernels::Testbed& testbed, core::MoeProblem problem,
                                        core::RoutingProfile const& routing, int64_t bucket,
                                        SweepOptions const& options);

/// (a - b) / a: how much faster `time_us` is than `default_us` (0.05 = 5% faster).
double margin(double default_us, double time_us);

}  // namespace moetune::tuner
