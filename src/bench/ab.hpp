// The A/B protocol. Every arm runs in a fresh process (`moetune bench --arm-worker`, this binary
// or the arm's own), once per round, arms interleaved with the order alternating each round
// (A B, B A, A B, ...) so a drift in time favours neither arm; every process gets the same
// problem, token counts, routing, seed and repeats, so the outputs are comparable bit for bit.
// Then, per point and per arm against the first (the baseline):
//   digests: arms expected bitwise-equal (--digests equal, the default) that differ are listed
//            point by point and the run exits 1, because their times are not subtractable;
//   deltas:  t_B / t_A - 1 with a 95% interval bootstrapped over rounds (bench_stats.hpp); an
//            interval that contains 0 or does not clear the margin is "no difference", never a win.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/arm.hpp"
#include "bench/bench_stats.hpp"
#include "core/result.hpp"

namespace moetune::bench {

inline constexpr int kAbCsvVersion = 1;

struct AbOptions {
  std::vector<ArmSpec> arms;  ///< >= 2; the first is the baseline
  int rounds = 5;
  double cooldown_s = 0;  ///< sleep before every arm process after the first
  double margin = 0.01;
  bool expect_equal_digests = true;
  uint64_t seed = 1;
  std::vector<std::string> worker_args;  ///< "bench --arm-worker ..." common to every arm
  std::string self_exe = "/proc/self/exe";
  double timeout_s = 600;  ///< per arm process
};

/// One arm process's report.
struct ArmRun {
  std::string arm;
  int round = 0;
  ArmReport report;
};

/// Runs every round; `progress` gets one line per process. Fails, naming the arm and round, when
/// an arm's process fails or prints no valid report (a missing arm is no result): kInvalidArgument
/// when the arm's input is at fault (the process exited 2; a binary arm printed no arm header),
/// kParse for a malformed report, kInternal otherwise (a crash, a timeout, another exit).
core::Result<std::vector<ArmRun>> run_arms(AbOptions const& options,
                                           std::function<void(std::string const&)> const& progress);

/// The comparison of arm B against the baseline A at one point.
struct PointComparison {
  std::string series;
  int64_t m = 0;
  std::string arm_a, arm_b;
  double a_median_us = 0, b_median_us = 0;  ///< median over rounds of the per-round medians
  AbDelta delta;
  std::string digest_a, digest_b;  ///< the first round's; "a|b" lists when an arm's own varied
  bool digests_equal = true;
  bool expected_equal = true;
  std::string config_a, config_b;
};

/// Compares every arm with the first at every point the baseline reported.
std::vector<PointComparison> compare_runs(std::vector<ArmRun> const& runs,
                                          AbOptions const& options);

/// "no difference (-0.4%, 95% CI [-2.1%, +1.3%] contains 0)", "B faster by 3.1% (95% CI [...])".
std::string describe(PointComparison const& c, double margin);

/// ab.csv: header + one row per comparison (first column ab_csv_version).
std::string ab_csv(std::vector<PointComparison> const& cmp, double margin);
/// ab_samples.csv: one row per arm, round and point with its samples (the raw record).
std::string ab_samples_csv(std::vector<ArmRun> const& runs);

}  // namespace moetune::bench
