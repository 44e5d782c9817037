// Options shared by `moetune bench` and `moetune ab`: what to measure (a recipe's shapes or one
// --problem, over --m), how (routing, warm-up, repeats, seed, backend), and the series they make.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/bench_run.hpp"

namespace moetune::cli {

struct BenchArgs {
  std::string recipe;
  std::string problem;
  std::string m_list;   ///< "1,16,64"; empty = the recipe's buckets
  std::string routing;  ///< empty = the recipe shape's, else uniform
  std::string tables;
  std::string levers;
  std::string backend;
  bool same_device_tables = false;  ///< --same-device-tables
  int repeats = 10;
  int warmup = 2;
  uint64_t seed = 1;
  double cooldown_s = -1;  ///< < 0: 1 s on cuda, 0 on cpu
};

/// Adds --recipe, --problem, --m, --routing, --repeats, --warmup, --seed, --backend,
/// --same-device-tables.
void add_series_options(CLI::App& app, BenchArgs* args);

/// Parses "1,4,16" into token counts, or CliExit(2) naming --m.
std::vector<int64_t> parse_m_list(std::string const& list);

/// The backend the run uses: --backend, else $MOETUNE_BACKEND / the machine's; a recipe shape
/// on another backend is CliExit(2).
std::string bench_backend(BenchArgs const& args);

/// The series to run: one per recipe shape (or the one --problem), each with its table from
/// --tables when one serves it. CliExit(2) on bad input; exactly one of --recipe and --problem.
std::vector<bench::BenchSeries> build_series(BenchArgs const& args, std::string const& backend);

/// Protocol options from the args (levers applied to this process's environment snapshot).
bench::BenchOptions bench_options(BenchArgs const& args, std::string const& backend);

/// The arguments every A/B arm process gets: "bench --arm-worker" plus the series options.
std::vector<std::string> arm_worker_args(BenchArgs const& args, std::string const& backend);

/// This process's command line, space-joined (env.json).
std::string own_command_line();

}  // namespace moetune::cli
