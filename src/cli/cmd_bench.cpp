// moetune bench: the bench protocol (bench/bench_run.hpp) over a recipe's shapes or one problem,
// archived as a dated folder (bench/archive.hpp): env.json and bench.csv, one row per point,
// flushed as each point ends so a run cut short keeps what it measured. Prints a table last.
// Exit 1 when a point's check failed (its row is kept, marked failed), 2 on bad input.
// `bench --arm-worker` is the A/B protocol's arm process (bench/arm.hpp): no ceilings, no files,
// one JSON line per point on stdout.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "bench/archive.hpp"
#include "bench/arm.hpp"
#include "bench/csv.hpp"
#include "cli/bench_args.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/build_info.hpp"

namespace moetune::cli {
namespace {

struct BenchCmdArgs {
  BenchArgs series;
  std::string out_dir = "build/results";
  int ceiling_mib = 128;
  bool arm_worker = false;
  std::string nvrtc_defines;  ///< set as MOETUNE_DEV_NVRTC_DEFINES for this process when given
};

std::unique_ptr<kernels::Testbed> testbed_or_exit(std::string const& backend) {
  auto tb = kernels::make_testbed(backend);
  if (!tb.ok())
    throw CliExit{kExitBadInput, "--backend " + backend + ": " + tb.error().to_string()};
  return std::move(tb).value();
}

void cooldown(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

int run_arm_worker(BenchCmdArgs const& args) {
  std::string const backend = bench_backend(args.series);
  auto series = build_series(args.series, backend);
  bench::BenchOptions const options = bench_options(args.series, backend);
  auto testbed = testbed_or_exit(backend);
  auto telemetry = bench::make_telemetry(backend);
  std::cout << bench::arm_worker_header(backend, testbed->backend().device().name) << std::endl;
  for (auto const& s : series) {
    auto points = bench::run_series(
        *testbed, s, options, nullptr, *telemetry,
        [](bench::BenchPoint const& p) { std::cout << bench::arm_point_json(p) << std::endl; });
    if (!points.ok()) fail(points.error());
  }
  return kExitOk;
}

void print_point(bench::BenchPoint const& p) {
  std::printf("%-14s M=%-6lld %10s us [p10 %s, p90 %s] CI [%s, %s] floor %s t/floor %.2f %s %s%s\n",
              p.series.c_str(), static_cast<long long>(p.problem.num_tokens),
              format_us(p.stats.median_us).c_str(), format_us(p.stats.p10_us).c_str(),
              format_us(p.stats.p90_us).c_str(), format_us(p.stats.ci_low_us).c_str(),
              format_us(p.stats.ci_high_us).c_str(), format_us(p.floor.floor_us).c_str(),
              p.t_over_floor, core::short_string(p.config).c_str(), p.digest.c_str(),
              p.check_ok ? "" : "  CHECK FAILED");
  std::fflush(stdout);
}

int run_bench(BenchCmdArgs const& args) {
  std::string const backend = bench_backend(args.series);
  auto series = build_series(args.series, backend);
  bench::BenchOptions const options = bench_options(args.series, backend);
  for (auto const& s : series) {
    // A lever knob refused at this deployment is bad input: say so before any file is written.
    core::MoeProblem p = s.problem;
    p.num_tokens = s.ms.empty() ? 0 : s.ms.front();
    unwrap(bench::fast_paths_for(backend, p, options));
  }
  unwrap(core::ensure_writable_dir(args.out_dir));
  auto testbed = testbed_or_exit(backend);
  auto telemetry = bench::make_telemetry(backend);

  bench::RunEnv env;
  std::tie(env.date, env.time_utc) = bench::utc_now();
  env.command = own_command_line();
  env.backend = backend;
  env.device = testbed->backend().device();
  env.driver = telemetry->driver();
  if (env.device.driver.empty()) env.device.driver = env.driver;
  env.commit = core::git_commit();
  env.clocks = telemetry->now();
  env.telemetry_source = telemetry->source();
  env.ceilings = backend == "cuda" ? bench::measure_cuda_ceilings()
                                   : bench::measure_cpu_ceilings(args.ceiling_mib);
  env.options = options;
  env.levers = args.series.levers;
  env.tables = args.series.tables;
  if (const char* d = std::getenv("MOETUNE_DEV_NVRTC_DEFINES")) env.nvrtc_defines = d;
  std::string const dir = unwrap(bench::make_run_dir(args.out_dir, env));
  unwrap(core::write_file_atomic(dir + "/env.json", bench::env_json(env)));
  std::fprintf(stderr,
               "bench: %s, copy %.1f GB/s (%s), matmul %.1f GFLOP/s (%s), fp8 %.1f GFLOP/s (%s); "
               "writing %s\n",
               env.device.name.c_str(), env.ceilings.copy_GBps, env.ceilings.copy_source.c_str(),
               env.ceilings.matmul_GFLOPs, env.ceilings.matmul_source.c_str(),
               env.ceilings.fp8_GFLOPs,
               env.ceilings.fp8_source.empty() ? "not measured" : env.ceilings.fp8_source.c_str(),
               dir.c_str());

  std::ofstream csv(dir + "/bench.csv");
  csv << bench::csv_line(bench::bench_csv_header()) << "\n" << std::flush;
  bool failed = false;
  for (size_t i = 0; i < series.size(); ++i) {
    if (i > 0) cooldown(options.cooldown_s);
    auto const& s = series[i];
    if (!s.table_note.empty())
      std::fprintf(stderr, "bench: %s: %s\n", s.name.c_str(), s.table_note.c_str());
    auto points = bench::run_series(
        *testbed, s, options, &env.ceilings, *telemetry, [&](bench::BenchPoint const& p) {
          csv << bench::bench_csv_row(p, env.device.name) << "\n" << std::flush;
          failed = failed || !p.check_ok;
          print_point(p);
        });
    if (!points.ok()) fail(points.error());
  }
  std::printf("wrote %s/env.json and %s/bench.csv\n", dir.c_str(), dir.c_str());
  return failed ? kExitFindings : kExitOk;
}

}  // namespace

void setup_bench(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BenchCmdArgs>();
  add_series_options(app, &args->series);
  app.add_option("--tables", args->series.tables,
                 "resolve each point's config from the tables in DIR (else the default config)");
  app.add_option("--levers", args->series.levers,
                 "force fast paths: NAME=on|off[,NAME=on|off] (moetune levers list)");
  app.add_option("--cooldown", args->series.cooldown_s,
                 "seconds to sleep between series (default: 1 on cuda, 0 on cpu)")
      ->check(finite_number(0, 3600));
  app.add_option("--out", args->out_dir,
                 "where the dated run folder is written (default build/results)");
  app.add_option("--ceiling-mib", args->ceiling_mib,
                 "cpu: MiB copied to measure memory bandwidth (default 128)")
      ->check(CLI::Range(1, 65536));
  app.add_flag("--arm-worker", args->arm_worker,
               "internal: run as an A/B arm, print JSON lines, write nothing")
      ->group("");
  app.add_option("--nvrtc-defines", args->nvrtc_defines,
                 "developers: NAME[=VALUE] ... as -D options of every NVRTC compile in this run "
                 "(sets MOETUNE_DEV_NVRTC_DEFINES; `moetune ab` passes an arm's defines: item)")
      ->check(dev_defines());
  app.callback([args, &exit_code] {
    if (!args->nvrtc_defines.empty()) {
      ::setenv("MOETUNE_DEV_NVRTC_DEFINES", args->nvrtc_defines.c_str(), 1);
    }
    exit_code = args->arm_worker ? run_arm_worker(*args) : run_bench(*args);
  });
}

}  // namespace moetune::cli
