// The archive of one bench run: a dated folder <out>/<YYYY-MM-DD-HHMMSS>-<commit>/ holding
// env.json (device, driver, toolchain, commit, clocks, ceilings, options, command) and bench.csv
// (one row per point; the column set is bench_csv_header(), its first column the format version).
#pragma once

#include <string>
#include <vector>

#include "bench/bench_run.hpp"
#include "bench/ceilings.hpp"
#include "core/device_info.hpp"
#include "core/result.hpp"

namespace moetune::bench {

inline constexpr int kBenchCsvVersion = 1;
inline constexpr int kEnvVersion = 1;

/// The columns of bench.csv, in order.
std::vector<std::string> const& bench_csv_header();
/// One point as a bench.csv line (no newline), `device` naming the device column.
std::string bench_csv_row(BenchPoint const& p, std::string const& device);

/// What env.json records.
struct RunEnv {
  std::string date;      ///< YYYY-MM-DD (UTC)
  std::string time_utc;  ///< HH:MM:SS
  std::string command;   ///< the command line
  std::string backend;
  core::DeviceInfo device;
  std::string driver;      ///< GPU driver, "" on the CPU
  std::string commit;      ///< core::git_commit() of the build
  SeriesTelemetry clocks;  ///< one reading before the first series
  std::string telemetry_source;
  Ceilings ceilings;
  BenchOptions options;
  std::string levers;             ///< --levers as given
  std::string tables;             ///< --tables as given
  std::string nvrtc_defines;      ///< $MOETUNE_DEV_NVRTC_DEFINES of the run (kernel variants)
  std::vector<std::string> arms;  ///< A/B: "NAME=SPEC" per arm, baseline first (else empty)
  int rounds = 0;                 ///< A/B rounds (0 for bench)
};

/// env.json text (2-space indent, "env_version" first).
std::string env_json(RunEnv const& env);

/// Creates "<out_dir>/<date>-<HHMMSS>-<commit><kind>" (kind "" for bench, "-ab" for ab; -2, -3...
/// appended when it exists) and returns its path. Fails naming the directory.
core::Result<std::string> make_run_dir(std::string const& out_dir, RunEnv const& env,
                                       std::string const& kind = "");

/// UTC now as {"YYYY-MM-DD", "HH:MM:SS"}.
std::pair<std::string, std::string> utc_now();

}  // namespace moetune::bench
