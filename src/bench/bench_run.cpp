// The bench protocol for one series; see bench_run.hpp.
#include "bench/bench_run.hpp"

#include <chrono>
#include <sstream>
#include <thread>

#include "core/device_label.hpp"
#include "core/lever.hpp"
#include "core/lever_io.hpp"
#include "core/resolver.hpp"
#include "kernels/cpu/cpu_testbed.hpp"
#include "kernels/fast_paths_from_levers.hpp"
#if MOETUNE_HAVE_CUDA
#include "kernels/cuda/cuda_testbed.hpp"
#endif

namespace moetune::bench {

core::Result<core::EnvSnapshot> apply_lever_overrides(core::EnvSnapshot env,
                                                      std::string const& spec) {
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    auto const eq = item.find('=');
    std::string const name = item.substr(0, eq);
    std::string const value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (eq == std::string::npos || name.empty() || (value != "on" && value != "off")) {
      return core::make_error(core::ErrorCode::kInvalidArgument, "--levers",
                              "'" + item + "' is not NAME=on or NAME=off; write e.g. " +
                                  "cpu_register_tiles=off (moetune levers list)");
    }
    env[core::knob_name(name)] = value;
  }
  return env;
}

core::Result<kernels::FastPaths> fast_paths_for(std::string const& backend,
                                                core::MoeProblem const& problem,
                                                BenchOptions const& options) {
  return kernels::resolve_fast_paths(
      kernels::local_deployment(backend, std::string(core::to_string(problem.dtype)),
                                problem.num_tokens <= 256 ? "decode" : "prefill"),
      options.lever_env, options.other_env_vars);
}

void set_testbed_fast_paths(kernels::Testbed& testbed, kernels::FastPaths const& fp) {
  if (auto* cpu = dynamic_cast<kernels::cpu::CpuTestbed*>(&testbed)) cpu->set_fast_paths(fp);
#if MOETUNE_HAVE_CUDA
  if (auto* cuda = dynamic_cast<kernels::cuda::CudaTestbed*>(&testbed)) cuda->set_fast_paths(fp);
#endif
}

core::Status find_table(std::string const& dir, TableDevicePolicy const& policy,
                        BenchSeries* series) {
  auto files = core::list_table_files(dir);
  if (!files.ok()) return files.error();
  core::MoeProblem const& problem = series->problem;
  std::vector<std::string> skipped;  // matching tables of another device, not used
  for (auto const& file : *files) {
    auto table = core::load_table(file);
    if (!table.ok()) return table.error();
    if (!core::check_key_matches(table->key, problem, file).ok()) continue;
    bool const other = core::is_other_device(table->key.device_name, policy.local_device);
    if (other && policy.same_device_tables) {
      skipped.push_back(file + " (made on " + table->key.device_name + ")");
      continue;
    }
    if (series->table && (series->table_device.empty() || other)) continue;  // first match stays
    series->table_path = file;
    series->table_device = other ? table->key.device_name : "";
    series->table = std::move(table).value();
  }
  std::string const shape = "E=" + std::to_string(problem.num_experts) +
                            ",K=" + std::to_string(problem.hidden_size) +
                            ",I=" + std::to_string(problem.intermediate_size);
  if (series->table && !series->table_device.empty()) {
    series->table_note = "table " + series->table_path + " was made on " + series->table_device +
                         ", this device is " + policy.local_device +
                         "; its rows serve with rule other_device (--same-device-tables or "
                         "MOETUNE_TABLES_SAME_DEVICE=1 forbids)";
  } else if (!series->table) {
    series->table_note = "no table in " + dir + " serves " + shape;
    if (!skipped.empty()) {
      series->table_note += " on this device (" + policy.local_device +
                            "; not used: " + skipped.front() + (skipped.size() > 1 ? ", ..." : "") +
                            ")";
    }
    series->table_note += "; the backend's default config is used";
  }
  return core::Status::Ok();
}

namespace {

/// Resolves the config of one point: under lever batch_invariant the backend's batch-invariant
/// config (as MoeRunner serves it), else the table's row (or policy default), else the default.
core::Status resolve_point(kernels::Testbed const& testbed, BenchSeries const& series,
                           kernels::FastPaths const& fast_paths, BenchPoint* pt) {
  core::Backend const& backend = testbed.backend();
  core::MoeProblem const problem = pt->problem;
  if (fast_paths.batch_invariant) {
    auto c = backend.batch_invariant_config(problem);
    if (!c.ok()) return c.error();
    pt->config = *c;
    pt->rule = "batch_invariant";
    return core::Status::Ok();
  }
  if (!series.table) {
    pt->config = backend.default_config(problem);
    pt->rule = "default";
    return core::Status::Ok();
  }
  auto const r = core::resolve(*series.table, problem.num_tokens, [&](int64_t m) {
    core::MoeProblem p = problem;
    p.num_tokens = m;
    return backend.default_config(p);
  });
  pt->config = r.config;
  pt->rule = std::string(core::to_string(r.rule));
  bool const row = r.rule == core::Rule::kExactKey || r.rule == core::Rule::kNearestKey;
  if (row && !series.table_device.empty()) pt->rule = "other_device";
  pt->key = r.key;
  pt->table = series.table_path;
  return core::Status::Ok();
}

core::Status measure_point(kernels::Testbed& testbed, BenchOptions const& options,
                           TelemetrySampler& telemetry, BenchPoint* pt) {
  auto first = testbed.check(pt->config);
  if (!first.ok()) return first.error();
  auto second = testbed.check(pt->config);
  if (!second.ok()) return second.error();
  pt->digest = first->digest;
  pt->deterministic = first->digest == second->digest;
  pt->rel_err = first->rel_l2_error;
  pt->check_ok = first->all_finite && first->all_written &&
                 first->rel_l2_error <= kernels::tolerance_for(pt->problem).rel_l2;
  telemetry.start();
  auto timing = testbed.time(pt->config, options.warmup, options.repeats);
  pt->telemetry = telemetry.stop();
  if (!timing.ok()) return timing.error();
  pt->samples_us = timing->samples_us;
  pt->stats =
      summarize(pt->samples_us, options.seed + static_cast<uint64_t>(pt->problem.num_tokens));
  return core::Status::Ok();
}

}  // namespace

core::Result<std::vector<BenchPoint>> run_series(
    kernels::Testbed& testbed, BenchSeries const& series, BenchOptions const& options,
    Ceilings const* ceilings, TelemetrySampler& telemetry, PointSink const& sink) {
  std::vector<BenchPoint> points;
  std::string const backend = testbed.backend().name();
  for (int64_t m : series.ms) {
    BenchPoint pt;
    pt.series = series.name;
    pt.problem = series.problem;
    pt.problem.num_tokens = m;
    pt.routing = core::format_routing(series.routing);
    pt.backend = backend;
    std::string const where = series.name + " M=" + std::to_string(m);
    auto fp = fast_paths_for(backend, pt.problem, options);
    if (!fp.ok()) return fp.error();
    set_testbed_fast_paths(testbed, *fp);
    pt.fast_paths = kernels::enabled_names(*fp);
    uint64_t const seed = options.seed + static_cast<uint64_t>(m);
    if (auto st = testbed.prepare(pt.problem, series.routing, seed); !st.ok()) {
      return core::make_error(st.error().code, where, st.error().to_string());
    }
    // The same rule the testbeds use to draw the routing (profile seed + input seed).
    core::RoutingProfile drawn = series.routing;
    if (backend == "cpu") drawn.seed += seed;
    auto routing = core::generate_routing(drawn, m, pt.problem.num_experts, pt.problem.top_k);
    if (!routing.ok()) return routing.error();
    pt.experts_hit = core::experts_hit(*routing, pt.problem.num_experts);
    if (auto st = resolve_point(testbed, series, *fp, &pt); !st.ok()) {
      return core::make_error(st.error().code, where, st.error().to_string());
    }
    if (auto st = measure_point(testbed, options, telemetry, &pt); !st.ok()) {
      return core::make_error(st.error().code, where + " " + core::short_string(pt.config),
                              st.error().to_string());
    }
    if (ceilings != nullptr) {
      pt.floor = floor_for(pt.problem, pt.experts_hit, *ceilings);
      pt.t_over_floor = pt.floor.floor_us > 0 ? pt.stats.median_us / pt.floor.floor_us : 0;
    }
    if (sink) sink(pt);
    points.push_back(std::move(pt));
  }
  return points;
}

}  // namespace moetune::bench
