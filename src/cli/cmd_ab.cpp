// moetune ab: the A/B protocol (bench/ab.hpp). Each arm runs in a fresh process per round, arms
// interleaved, same inputs and seeds; output digests are compared point by point and deltas carry
// a 95% interval over rounds, reported as "no difference" unless the interval clears 0 and the
// margin. Writes <out>/<date>-<time>-<commit>-ab/ (env.json, ab.csv, ab_samples.csv).
// Exit 1 when arms expected bitwise-equal (--digests equal, the default) differ; 2 on bad input,
// an arm's process refusing its input (exit 2) or a binary arm that is no moetune arm worker;
// 3 when an arm's process otherwise fails (no result is made up for it).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "bench/ab.hpp"
#include "bench/archive.hpp"
#include "bench/child_process.hpp"
#include "bench/telemetry.hpp"
#include "cli/bench_args.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/build_info.hpp"
#include "core/names.hpp"

namespace moetune::cli {
namespace {

struct AbCmdArgs {
  BenchArgs series;
  std::vector<std::string> arms;
  int rounds = 5;
  double margin = 0.01;
  std::string digests = "equal";
  std::string out_dir = "build/results";
  double timeout_s = 600;
};

/// An arm's lever knobs as its process will resolve them, at every series' problem: an unknown
/// lever or one refused at this deployment is bad input here, not a failed arm process later.
void check_arm_levers(AbCmdArgs const& args, std::string const& text, std::string const& levers,
                      std::string const& backend, std::vector<bench::BenchSeries> const& series) {
  BenchArgs arm_args = args.series;
  arm_args.levers = levers;
  bench::BenchOptions const options = bench_options(arm_args, backend);
  for (auto const& s : series) {
    core::MoeProblem p = s.problem;
    p.num_tokens = s.ms.empty() ? 0 : s.ms.front();
    auto fp = bench::fast_paths_for(backend, p, options);
    if (!fp.ok())
      throw CliExit{kExitBadInput, "--arm " + core::clip(text) + ": " + fp.error().to_string()};
  }
}

/// A binary arm must be a moetune build: its `--help` exits 0 and names moetune and bench. Asked
/// before any arm runs, so a wrong path is one line of bad input, not a failed round.
void check_arm_binary(std::string const& text, std::string const& binary) {
  auto probe = bench::run_child({binary, "--help"}, 30);
  bool const ok = probe.ok() && probe->exit_code == 0 &&
                  probe->out.find("moetune") != std::string::npos &&
                  probe->out.find("bench") != std::string::npos;
  if (ok) return;
  std::string const seen = probe.ok() ? "ended with " + bench::describe(*probe, 30) +
                                            (probe->exit_code == 0 ? " and no moetune help" : "")
                                      : probe.error().to_string();
  throw CliExit{kExitBadInput, "--arm " + core::clip(text) + ": '" + core::clip(binary) +
                                   " --help' " + seen +
                                   ", so it is not a moetune build; give the path of a moetune "
                                   "binary (it runs the arm as `bench --arm-worker`)"};
}

std::vector<bench::ArmSpec> parse_arms(AbCmdArgs const& args, std::string const& backend,
                                       std::vector<bench::BenchSeries> const& series) {
  if (args.arms.size() < 2) {
    throw CliExit{kExitBadInput,
                  "give at least two arms, e.g. --arm A=default --arm "
                  "B=levers:cpu_register_tiles=off"};
  }
  std::vector<bench::ArmSpec> arms;
  std::set<std::string> names;
  for (auto const& text : args.arms) {
    bench::ArmSpec arm = unwrap(bench::parse_arm(text));
    if (!names.insert(arm.name).second) {
      throw CliExit{kExitBadInput, "--arm " + text + ": the name '" + arm.name +
                                       "' is used twice; give every arm its own name"};
    }
    std::error_code ec;
    if (!arm.tables.empty() && !std::filesystem::is_directory(arm.tables, ec)) {
      throw CliExit{kExitBadInput,
                    "--arm " + text + ": tables directory '" + arm.tables + "' does not exist"};
    }
    if (!arm.binary.empty() && ::access(arm.binary.c_str(), X_OK) != 0) {
      throw CliExit{kExitBadInput,
                    "--arm " + text + ": binary '" + arm.binary + "' is not an executable file"};
    }
    if (!arm.binary.empty()) check_arm_binary(text, arm.binary);
    if (auto env = bench::apply_lever_overrides({}, arm.levers); !env.ok()) {
      throw CliExit{kExitBadInput, "--arm " + text + ": " + env.error().message};
    }
    if (!arm.levers.empty()) check_arm_levers(args, text, arm.levers, backend, series);
    arms.push_back(arm);
  }
  return arms;
}

/// The record of an A/B run: host, backend, telemetry and the arms (the parent never runs kernels;
/// it reads the host and NVML, no CUDA context).
bench::RunEnv ab_env(std::string const& backend, bench::BenchOptions const& options,
                     bench::AbOptions const& o) {
  bench::RunEnv env;
  std::tie(env.date, env.time_utc) = bench::utc_now();
  env.command = own_command_line();
  env.backend = backend;
  env.commit = core::git_commit();
  if (backend == "cpu") env.device = core::cpu_device_info();
  auto const telemetry = bench::make_telemetry(backend);
  env.driver = telemetry->driver();
  env.clocks = telemetry->now();
  env.telemetry_source = telemetry->source();
  env.options = options;
  env.ceilings.copy_source = env.ceilings.matmul_source = env.ceilings.fp8_source =
      "not measured: A/B compares arms";
  for (auto const& a : o.arms) env.arms.push_back(a.name + "=" + a.spec);
  env.rounds = o.rounds;
  return env;
}

/// One line per point (and a DIGEST line where the arms' outputs differ); returns how many
/// points' digests differ.
int print_comparisons(std::vector<bench::PointComparison> const& cmp, double margin) {
  int mismatches = 0;
  for (auto const& c : cmp) {
    std::printf("%-14s M=%-6lld %s %s us vs %s %s us: %s\n", c.series.c_str(),
                static_cast<long long>(c.m), c.arm_a.c_str(), format_us(c.a_median_us).c_str(),
                c.arm_b.c_str(), format_us(c.b_median_us).c_str(),
                bench::describe(c, margin).c_str());
    if (!c.digests_equal) {
      ++mismatches;
      std::printf("  DIGEST %s: %s %s [%s] vs %s %s [%s]\n",
                  c.expected_equal ? "MISMATCH" : "differs (allowed by --digests any)",
                  c.arm_a.c_str(), c.digest_a.c_str(), c.config_a.c_str(), c.arm_b.c_str(),
                  c.digest_b.c_str(), c.config_b.c_str());
    }
  }
  return mismatches;
}

int run_ab(AbCmdArgs const& args) {
  if (args.digests != "equal" && args.digests != "any") {
    throw CliExit{kExitBadInput, "--digests '" + args.digests + "': expected equal or any"};
  }
  std::string const backend = bench_backend(args.series);
  // Bad input stops here, before any arm runs.
  auto const series = build_series(args.series, backend);
  bench::BenchOptions const options = bench_options(args.series, backend);
  bench::AbOptions o;
  o.arms = parse_arms(args, backend, series);
  o.rounds = args.rounds;
  o.cooldown_s = options.cooldown_s;
  o.margin = args.margin;
  o.expect_equal_digests = args.digests == "equal";
  o.seed = args.series.seed;
  o.worker_args = arm_worker_args(args.series, backend);
  o.timeout_s = args.timeout_s;
  unwrap(core::ensure_writable_dir(args.out_dir));
  bench::RunEnv env = ab_env(backend, options, o);

  auto runs = bench::run_arms(
      o, [](std::string const& line) { std::fprintf(stderr, "ab: %s\n", line.c_str()); });
  if (!runs.ok()) fail(runs.error());
  if (!runs->empty() && backend != "cpu") env.device.name = runs->front().report.device;
  auto const cmp = bench::compare_runs(*runs, o);

  std::string const dir = unwrap(bench::make_run_dir(args.out_dir, env, "-ab"));
  unwrap(core::write_file_atomic(dir + "/env.json", bench::env_json(env)));
  unwrap(core::write_file_atomic(dir + "/ab.csv", bench::ab_csv(cmp, o.margin)));
  unwrap(core::write_file_atomic(dir + "/ab_samples.csv", bench::ab_samples_csv(*runs)));
  int const mismatches = print_comparisons(cmp, o.margin);
  std::printf("wrote %s (ab.csv, ab_samples.csv, env.json)\n", dir.c_str());
  if (mismatches > 0 && o.expect_equal_digests) {
    std::printf(
        "%d point(s) where arms expected bitwise-equal differ: their times are not "
        "comparable; fix the arms or pass --digests any\n",
        mismatches);
    return kExitFindings;
  }
  return kExitOk;
}

}  // namespace

void setup_ab(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<AbCmdArgs>();
  add_series_options(app, &args->series);
  app.add_option("--arm", args->arms,
                 "NAME=SPEC, SPEC = default | tables:DIR | levers:NAME=on|off[+...] | "
                 "binary:PATH | defines:NAME[=VALUE][+...] (kernel source variants, as "
                 "MOETUNE_DEV_NVRTC_DEFINES), items joined by ','; the first arm is the baseline")
      ->required();
  app.add_option("--rounds", args->rounds, "rounds; each runs every arm once (default 5)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--margin", args->margin,
                 "fraction a delta's whole interval must clear to count (default 0.01)")
      ->check(finite_number(0, 1));
  app.add_option("--digests", args->digests,
                 "equal (default): arms must give bitwise-equal outputs; any: report only");
  app.add_option("--cooldown", args->series.cooldown_s,
                 "seconds to sleep between arm processes (default: 1 on cuda, 0 on cpu)")
      ->check(finite_number(0, 3600));
  app.add_option("--out", args->out_dir, "where the dated A/B folder is written");
  app.add_option("--timeout-s", args->timeout_s, "limit per arm process (default 600)")
      ->check(finite_number(0, 86400, /*lo_inclusive=*/false));
  app.callback([args, &exit_code] { exit_code = run_ab(*args); });
}

}  // namespace moetune::cli
