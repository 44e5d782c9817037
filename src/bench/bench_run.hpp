// The bench protocol for one series (one problem over a list of token counts M), on any Testbed.
// Per point: prepare fresh inputs (seeded by seed + M; the same for every arm), resolve the config
// (a table in --tables through the resolver, else the backend's default), check it against the
// reference twice (the output digest, and whether it is deterministic), then `warmup` untimed runs
// and `repeats` timed runs (Testbed::time), summarised as median, p10, p90 and a seeded bootstrap
// interval; the floor of the same run gives t/floor; telemetry is sampled around the timed runs.
// bench never stands in for a test (STYLE 25): a point whose check fails is recorded as failed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_stats.hpp"
#include "bench/ceilings.hpp"
#include "bench/telemetry.hpp"
#include "core/config.hpp"
#include "core/lever_resolve.hpp"
#include "core/problem.hpp"
#include "core/routing.hpp"
#include "core/table.hpp"
#include "kernels/fast_paths.hpp"
#include "kernels/testbed.hpp"

namespace moetune::bench {

/// One problem swept over token counts.
struct BenchSeries {
  std::string name;          ///< the recipe shape's name, or "problem"
  core::MoeProblem problem;  ///< num_tokens is set per point
  core::RoutingProfile routing;
  std::vector<int64_t> ms;
  std::optional<core::Table> table;  ///< the table the resolver reads; none = default config
  std::string table_path;            ///< where it came from ("" when none)
  std::string table_device;          ///< the table's device when made on another device, else ""
  std::string table_note;            ///< why there is none ("no table in DIR for this key")
};

/// How every point is measured.
struct BenchOptions {
  int warmup = 2;
  int repeats = 10;
  double cooldown_s = 0;  ///< sleep between series (and between A/B arm processes)
  uint64_t seed = 1;      ///< inputs of point M are seeded by seed + M; bootstraps by seed
  /// MOETUNE_* environment the fast paths are resolved under (with --levers applied).
  core::EnvSnapshot lever_env;
  std::vector<std::string> other_env_vars;  ///< the CLI's non-lever MOETUNE_* variables
};

/// One measured point.
struct BenchPoint {
  std::string series;
  core::MoeProblem problem;  ///< num_tokens = M
  std::string routing;       ///< format_routing
  std::string backend;
  int64_t experts_hit = 0;
  std::vector<double> samples_us;
  SampleSummary stats;
  Floor floor;
  double t_over_floor = 0;  ///< 0 when the floor is unknown
  std::string rule;  ///< the resolver's rule ("exact_key", ...), "default", "other_device" (a
                     ///< row of a table made on another device, BenchSeries::table_device) or
                     ///< "batch_invariant" (lever batch_invariant on: tables are bypassed)
  std::optional<int64_t> key;
  core::MoeConfig config;
  std::string table;       ///< table path, or "" for the default
  std::string fast_paths;  ///< levers on, "+"-joined ("" = none)
  std::string digest;
  bool deterministic = true;  ///< two checked runs gave the same digest
  double rel_err = 0;
  bool check_ok = true;  ///< finite, fully written, within tolerance_for(problem)
  SeriesTelemetry telemetry;
};

/// Parses --levers "NAME=on,NAME=off" into knob entries (MOETUNE_LEVER_<NAME>) added to `env`.
/// Fails (kInvalidArgument) on a malformed item or a value other than on/off, naming the item.
core::Result<core::EnvSnapshot> apply_lever_overrides(core::EnvSnapshot env,
                                                      std::string const& spec);

/// The fast paths a point runs with: the built-in lever table at deployment (backend, arch,
/// tp=1, ep=1, dtype, role = decode when M <= 256 else prefill) under `options.lever_env`.
core::Result<kernels::FastPaths> fast_paths_for(std::string const& backend,
                                                core::MoeProblem const& problem,
                                                BenchOptions const& options);

/// Sets the fast paths on the cpu or cuda testbed (others ignore them).
void set_testbed_fast_paths(kernels::Testbed& testbed, kernels::FastPaths const& fp);

/// This machine's device and whether a table made on another device may serve (issue 51).
struct TableDevicePolicy {
  std::string local_device;         ///< device label (core/device_label.hpp); "" = unknown
  bool same_device_tables = false;  ///< set: a table made on another device is not used
};

/// Finds the table in `dir` whose key serves `series->problem` (check_key_matches), one made on
/// `policy.local_device` first, and sets series->table, table_path, table_device (the table's
/// device when it is another's: its rows' rule is then other_device) and table_note (why there
/// is none, or that the table is another device's). A broken table file is an error.
core::Status find_table(std::string const& dir, TableDevicePolicy const& policy,
                        BenchSeries* series);

/// Called after each point (progress lines, CSV rows flushed as they come).
using PointSink = std::function<void(BenchPoint const&)>;

/// Runs every point of `series`. `ceilings` may be null (no floor: the A/B worker). Fails on
/// the first point that cannot run (bad config, prepare failure); a failed check is recorded.
core::Result<std::vector<BenchPoint>> run_series(
    kernels::Testbed& testbed, BenchSeries const& series, BenchOptions const& options,
    Ceilings const* ceilings, TelemetrySampler& telemetry, PointSink const& sink);

}  // namespace moetune::bench
