// auto_tune: the bounded in-process sweep behind knobs "auto". It tunes one (problem, bucket) on
// the runner's own backend through the shared Testbed: the default config first (the incumbent),
// then the backend's search space pruned by can_implement; every candidate is checked against
// the fp64 reference (a wrong or non-finite result disqualifies it) and timed cheaply; when the
// budget allows, the three best are re-timed in interleaved passes. The default stays unless a
// challenger's median is faster by more than `margin`. It runs in the serving process, so it
// does not use the tuner's worker processes (`moetune tune` does): a crash here is the process's.
#pragma once

#include <cstdint>
#include <string>

#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "core/source.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::runtime {

struct AutoTuneOptions {
  double budget_s = 30;           ///< wall clock; past it no new candidate starts
  int first_reps = 3;             ///< timed runs per candidate in the first pass
  int final_reps = 9;             ///< timed runs per finalist, over 3 interleaved passes
  double margin = 0.02;           ///< a challenger must beat the default's median by this fraction
  uint64_t seed = 1;              ///< data seed of Testbed::prepare
  kernels::FastPaths fast_paths;  ///< the runner's levers: every candidate runs with them
};

struct AutoTuneResult {
  core::MoeConfig config;
  core::Source source;  ///< kind "tuned", numbers time_us, default_us, candidates, checked
  int candidates_tried = 0;
  bool default_kept = false;
};

/// Tunes (problem with M = bucket) on backend `backend_name` ("cpu" | "cuda"). Fails when the
/// testbed cannot be made or no candidate (not even the default) passes its check.
core::Result<AutoTuneResult> auto_tune_bucket(std::string const& backend_name,
                                              core::Backend const& backend,
                                              core::MoeProblem problem, int64_t bucket,
                                              core::RoutingProfile const& routing,
                                              AutoTuneOptions const& options);

}  // namespace moetune::runtime
