// moetune_sm90_bench: the kernel benchmark of the cuda backend (issue: Hopper fused-MoE kernels).
// In one run: measures the ceilings (copy bandwidth, cuBLAS bf16 matmul rate), then for each shape
// and M: prepares uniform routing (top-k of softmax(randn), seed = M), finds the best config of a
// sweep per GEMM, kept only if its layer beats the default's (sweep_best), or takes the config
// given by --config-file or the --recipe's row, checks it against the fp32 GPU reference (sampled
// tokens) with poisoned outputs, times the whole layer (graph replay, L2 flushed before each
// replay, 3 warm-ups, reps = clamp(30 ms / t, 10, 200), median; interleaved with the default
// config's timing where the row is not the default: time_point) and each stage, and writes
// <OUT>/<date>-<commit>.csv plus the winners as JSON. Prints a short table last. A point whose
// preparation, check or timing fails is named (POINT FAILED shape M: what) and left out of the CSV,
// and the run goes on to the next point. Exit 1: a point or a setup step failed (the messages name
// them); 2: the --out folder cannot be written (checked before anything is measured). Fast paths:
// the lever table's defaults at the H200 deployment; MOETUNE_LEVER_<NAME> = on|off forces one (e.g.
// to time a lever per stage), and the run logs the set it used. Shapes: S1-S3 (--shapes; none skips
// them) and any --shape NAME=E,K,I,TOPK,ACT (held-out models: `bench/device.sh kernels --heldout`).
// --sweep-log FILE keeps every candidate the sweep timed, for bench/fit_defaults.py.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>  // environ

#include "bench/bench_stats.hpp"
#include "bench/gpu_ceilings.hpp"
#include "core/build_info.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/recipe.hpp"
#include "core/routing.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_testbed.hpp"
#include "kernels/cuda/nvml_telemetry.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_swap_geometry.hpp"
#include "kernels/fast_paths_from_levers.hpp"
#include "sm90_bench_options.hpp"
#include "sm90_bench_sweep.hpp"

using namespace moetune;
using kernels::cuda::CudaTestbed;

namespace {

using bench::die;
using bench::must;
using bench::Options;
using bench::Shape;
using bench::split;

int reps_for(double t_us) {
  return std::clamp(static_cast<int>(30000.0 / std::max(t_us, 1.0)), 10, 200);
}

/// One point's measurement failed: the run names it and goes on with the next point.
struct PointFailed {
  std::string what;
};

template <class T>
T need(core::Result<T> r, std::string const& ctx) {
  if (!r.ok()) throw PointFailed{ctx + ": " + r.error().to_string()};
  return std::move(r).value();
}

struct Point {
  std::string shape;
  core::MoeProblem p;
  int64_t hit = 0;
  double floor_us = 0, bytes = 0, flops = 0, time_us = 0, p10 = 0, p90 = 0;
  double align_us = 0, gemm1_us = 0, gemm2_us = 0, combine_us = 0;
  // The layer less its align launch, on the workspace a full run filled (same topk_ids, so the
  // lists are this layer's): what routing inside GEMM1 could save at most. 0 for the decode
  // kernels, which have no align launch.
  double no_align_us = 0;
  double rel_err = 0, default_us = 0;
  // NVML (SM clock, power, clock event reasons) during the timed replays, during the GEMM1 and
  // GEMM2 stage timings (what --dense compares with cuBLAS's), and during --dense's cuBLAS runs.
  kernels::cuda::NvmlTelemetry::Reading clocks, stage_clocks, dense_clocks;
  // --dense: cuBLAS on the dense GEMMs of the same sizes (pairs rows)
  double dense_gemm1_us = 0, dense_gemm2_us = 0;
  std::string bound, digest, config, config_json, default_config;
  int candidates = 0;
};

std::string cfg_json(core::KernelConfig const& k) {
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "{\"block_m\":%d,\"block_n\":%d,\"block_k\":%d,\"group_m\":%d,\"num_warps\":%d,"
                "\"num_stages\":%d,\"schedule\":\"%s\"}",
                k.tile.block_m, k.tile.block_n, k.tile.block_k, k.tile.group_m,
                k.pipeline.num_warps, k.pipeline.num_stages,
                std::string(core::to_string(k.launch.schedule)).c_str());
  return buf;
}

/// What every row of a run shares.
struct RunInfo {
  std::string commit, date, device, driver;
  bench::GpuCeilings ceil;
  double peak = 0;
  kernels::cuda::NvmlTelemetry::Reading ceil_clocks;  // NVML while the ceilings were measured
};

// Floor of one point: max(bytes of experts hit + x + out + routing / copy bandwidth,
// flops / matmul rate), both measured in this run (shared/anchors/h200-baseline.md).
void set_floor(Point& pt, RunInfo const& run) {
  auto const& p = pt.p;
  const double n1 = core::gemm1_n(p);
  pt.bytes = pt.hit * (n1 * p.hidden_size + double(p.hidden_size) * p.intermediate_size) * 2 +
             2.0 * p.num_tokens * p.hidden_size * 2 + 8.0 * p.num_tokens * p.top_k;
  pt.flops = core::flops(p);
  const double t_bw = pt.bytes / (run.ceil.copy_GBps * 1e9) * 1e6;
  const double t_fl = pt.flops / (run.peak * 1e12) * 1e6;
  pt.floor_us = std::max(t_bw, t_fl);
  pt.bound = t_bw >= t_fl ? "bw" : "compute";
}

// Checks `best` twice on poisoned outputs; a wrong or nondeterministic result is printed loudly.
void check_point(CudaTestbed& tb, Point& pt, core::MoeConfig const& best) {
  const std::string what = pt.shape + " M=" + std::to_string(pt.p.num_tokens);
  auto chk = need(tb.check(best), what + " check");
  const auto tol = kernels::tolerance_for(pt.p.dtype);
  if (!chk.all_written || !chk.all_finite || chk.rel_l2_error > tol.rel_l2) {
    std::fprintf(stderr, "FAIL %s %s: rel_err %.3g written %d finite %d first_bad %lld\n",
                 what.c_str(), core::short_string(best).c_str(), chk.rel_l2_error, chk.all_written,
                 chk.all_finite, (long long)chk.first_bad);
  }
  auto chk2 = need(tb.check(best), what + " second check");
  if (chk2.digest != chk.digest) {
    std::fprintf(stderr, "NONDETERMINISTIC %s: %s vs %s\n", what.c_str(), chk.digest.c_str(),
                 chk2.digest.c_str());
  }
  pt.rel_err = chk.rel_l2_error;
  pt.digest = chk.digest;
}

/// Whether the default config passes its check at the point (so time_point may time it beside
/// the row); where it fails, pt.default_us = -1 and why goes to stderr: reported, never used.
bool default_passes(CudaTestbed& tb, Point& pt, core::MoeConfig const& dflt) {
  auto dchk = tb.check(dflt);
  const auto tol = kernels::tolerance_for(pt.p.dtype);
  if (dchk.ok() && dchk->all_written && dchk->all_finite && dchk->rel_l2_error <= tol.rel_l2) {
    return true;
  }
  pt.default_us = -1;
  std::fprintf(stderr, "DEFAULT FAILED %s M=%lld %s: %s\n", pt.shape.c_str(),
               (long long)pt.p.num_tokens, core::short_string(dflt).c_str(),
               !dchk.ok() ? dchk.error().to_string().c_str()
                          : ("rel_l2_error " + std::to_string(dchk->rel_l2_error) +
                             (dchk->all_written ? "" : ", not all written") +
                             (dchk->all_finite ? "" : ", non-finite"))
                                .c_str());
  return false;
}

/// Each stage of `best` alone (the SM clock sampled over the two GEMMs); the decode kernels
/// (launch.swap_ab) route inside GEMM1 and combine inside GEMM2, so they have no align or combine.
void time_stages(CudaTestbed& tb, kernels::cuda::NvmlTelemetry& nvml, Point& pt,
                 core::MoeConfig const& best, int reps) {
  const int sreps = std::clamp(reps, 10, 50);
  auto stage = [&](unsigned mask) {
    return need(tb.time_stages(best, mask, 2, sreps), "stage time").median_us;
  };
  const bool decode = kernels::cuda::is_decode(best.gemm1);
  pt.align_us = decode ? 0.0 : stage(kernels::cuda::kStageAlign);
  nvml.start(5);
  pt.gemm1_us = stage(kernels::cuda::kStageGemm1);
  pt.gemm2_us = stage(kernels::cuda::kStageGemm2);
  nvml.stop();
  pt.stage_clocks = nvml.reading();
  pt.combine_us = decode ? 0.0 : stage(kernels::cuda::kStageCombine);
  pt.no_align_us =
      decode ? 0.0 : stage(kernels::cuda::kStageAll & ~unsigned{kernels::cuda::kStageAlign});
}

// The protocol: reps = clamp(30 ms / t, 10, 200) after 3 warm-ups, clocks sampled meanwhile; the
// default config at the same point (a tuned row must beat it to ship), checked first, then timed
// interleaved with the row (row, default, default, row: half the reps per block, at least 5, one
// warm-up per block after the first's three; each config's median over its pooled samples), then
// each stage alone. Interleaved because, timed one after the other (the row, then the default after
// its check), the two ran in different clock states at the 700 W cap, and the protocol shipped the
// default at S1 M=16384 (3375.5 vs 3535.6 us) where 8 interleaved runs per config had the row
// faster in every round.
void time_point(CudaTestbed& tb, kernels::cuda::NvmlTelemetry& nvml, Point& pt,
                core::MoeConfig const& best, core::MoeConfig const& dflt) {
  const bool with_default = !(dflt == best) && default_passes(tb, pt, dflt);
  const int reps = reps_for(need(tb.time(best, 1, 3), "quick time").median_us);
  const int half = std::max(5, (reps + 1) / 2);
  std::vector<double> row, def;
  nvml.start(5);
  try {
    if (!with_default) {
      row = need(tb.time(best, 3, reps), "time").samples_us;
    } else {
      int block = 0;
      for (bool is_row : {true, false, false, true}) {
        auto t = need(tb.time(is_row ? best : dflt, block++ == 0 ? 3 : 1, half),
                      is_row ? "time" : "time default");
        auto& into = is_row ? row : def;
        into.insert(into.end(), t.samples_us.begin(), t.samples_us.end());
      }
    }
  } catch (...) {
    nvml.stop();  // before a failure leaves the point
    throw;
  }
  nvml.stop();
  pt.time_us = kernels::median_us(row);
  pt.p10 = bench::percentile(row, 0.1);
  pt.p90 = bench::percentile(row, 0.9);
  pt.clocks = nvml.reading();
  if (with_default) {
    pt.default_us = kernels::median_us(def);
  } else if (dflt == best) {
    pt.default_us = pt.time_us;  // the row is the default
  }
  time_stages(tb, nvml, pt, best, reps);
  pt.config = core::short_string(best);
  pt.default_config = core::short_string(dflt);
  pt.config_json =
      "{\"gemm1\":" + cfg_json(best.gemm1) + ",\"gemm2\":" + cfg_json(best.gemm2) + "}";
}

// --dense: cuBLAS on GEMM1 as [pairs x K] @ [N1 x K]^T and GEMM2 as [pairs x I] @ [K x I]^T, the
// SM clock sampled meanwhile. Same reps rule as the layer (clamp(30 ms / t, 10, 200)).
void time_dense(kernels::cuda::NvmlTelemetry& nvml, Point& pt) {
  const long pairs = static_cast<long>(pt.p.num_tokens * pt.p.top_k);
  const long k = static_cast<long>(pt.p.hidden_size), i = static_cast<long>(pt.p.intermediate_size);
  const long n1 = static_cast<long>(core::gemm1_n(pt.p));
  const double quick =
      bench::cublas_dense_us(pairs, n1, k, 3) + bench::cublas_dense_us(pairs, k, i, 3);
  if (quick <= 0) {
    std::fprintf(stderr, "dense %s M=%lld: cuBLAS unavailable or out of memory\n", pt.shape.c_str(),
                 (long long)pt.p.num_tokens);
    return;
  }
  const int reps = reps_for(quick);
  nvml.start(5);
  pt.dense_gemm1_us = bench::cublas_dense_us(pairs, n1, k, reps);
  pt.dense_gemm2_us = bench::cublas_dense_us(pairs, k, i, reps);
  nvml.stop();
  pt.dense_clocks = nvml.reading();
}

/// NVML clock event reasons as "0x..." (the bits of NvmlTelemetry::kReason*).
std::string hex(unsigned long long bits) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", bits);
  return buf;
}

void write_dense_header(std::ostream& csv) {
  csv << "commit,date,device,shape,E,K,I,top_k,act,M,pairs,gemm1_us,dense_gemm1_us,gemm2_us,"
         "dense_gemm2_us,sm_clock_mhz,dense_sm_clock_mhz,gemm1_TFLOPs,dense_gemm1_TFLOPs,"
         "gemm2_TFLOPs,dense_gemm2_TFLOPs,config,stage_sm_clock_mhz,stage_power_capped_frac,"
         "dense_power_capped_frac,dense_clock_reasons\n";
  csv.flush();
}

void write_dense_row(std::ostream& csv, RunInfo const& run, Point const& pt) {
  const double pairs = double(pt.p.num_tokens) * pt.p.top_k;
  const double f1 = 2.0 * pairs * core::gemm1_n(pt.p) * pt.p.hidden_size;
  const double f2 = 2.0 * pairs * pt.p.hidden_size * pt.p.intermediate_size;
  auto tf = [](double flops, double us) { return us > 0 ? flops / (us * 1e6) : 0.0; };
  csv << run.commit << "," << run.date << "," << run.device << "," << pt.shape << ","
      << pt.p.num_experts << "," << pt.p.hidden_size << "," << pt.p.intermediate_size << ","
      << pt.p.top_k << "," << core::to_string(pt.p.activation) << "," << pt.p.num_tokens << ","
      << static_cast<long long>(pairs) << "," << pt.gemm1_us << "," << pt.dense_gemm1_us << ","
      << pt.gemm2_us << "," << pt.dense_gemm2_us << "," << pt.clocks.median_mhz << ","
      << pt.dense_clocks.median_mhz << "," << tf(f1, pt.gemm1_us) << ","
      << tf(f1, pt.dense_gemm1_us) << "," << tf(f2, pt.gemm2_us) << "," << tf(f2, pt.dense_gemm2_us)
      << "," << pt.config << "," << pt.stage_clocks.median_mhz << ","
      << pt.stage_clocks.power_capped << "," << pt.dense_clocks.power_capped << ","
      << hex(pt.dense_clocks.reasons) << std::endl;
}

void write_csv_header(std::ostream& csv) {
  csv << "commit,date,device,driver,copy_GBps,peak_TFLOPs,shape,E,K,I,top_k,act,M,experts_hit,"
         "time_us,p10_us,p90_us,floor_us,bound,ratio,bw_GBps,achieved_TFLOPs,align_us,gemm1_us,"
         "gemm2_us,combine_us,sm_clock_mhz,power_w,rel_err,digest,config,default_us,"
         "default_config,sm_clock_min_mhz,power_capped_frac,thermal_capped_frac,clock_reasons,"
         "no_align_us\n";
  csv.flush();
}

void write_csv_row(std::ostream& csv, RunInfo const& run, Point const& pt) {
  csv << run.commit << "," << run.date << "," << run.device << "," << run.driver << ","
      << run.ceil.copy_GBps << "," << run.peak << "," << pt.shape << "," << pt.p.num_experts << ","
      << pt.p.hidden_size << "," << pt.p.intermediate_size << "," << pt.p.top_k << ","
      << core::to_string(pt.p.activation) << "," << pt.p.num_tokens << "," << pt.hit << ","
      << pt.time_us << "," << pt.p10 << "," << pt.p90 << "," << pt.floor_us << "," << pt.bound
      << "," << pt.time_us / pt.floor_us << "," << pt.bytes / (pt.time_us * 1e3) << ","
      << pt.flops / (pt.time_us * 1e6) << "," << pt.align_us << "," << pt.gemm1_us << ","
      << pt.gemm2_us << "," << pt.combine_us << "," << pt.clocks.median_mhz << ","
      << pt.clocks.max_power_w << "," << pt.rel_err << "," << pt.digest << "," << pt.config << ","
      << pt.default_us << "," << pt.default_config << "," << pt.clocks.min_mhz << ","
      << pt.clocks.power_capped << "," << pt.clocks.thermal_capped << "," << hex(pt.clocks.reasons)
      << "," << pt.no_align_us << std::endl;  // flushed per row: a run cut short keeps its rows
}

void write_winners(std::string const& path, std::vector<Point> const& points) {
  std::ofstream win(path);
  win << "[\n";
  for (size_t i = 0; i < points.size(); ++i) {
    auto const& pt = points[i];
    win << "  {\"shape\":\"" << pt.shape << "\",\"M\":" << pt.p.num_tokens
        << ",\"time_us\":" << pt.time_us << ",\"floor_us\":" << pt.floor_us << ",\"digest\":\""
        << pt.digest << "\",\"rel_err\":" << pt.rel_err << ",\"config\":" << pt.config_json << "}"
        << (i + 1 < points.size() ? "," : "") << "\n";
  }
  win << "]\n";
}

void print_summary(std::vector<Point> const& points, RunInfo const& run,
                   std::string const& csv_path) {
  // clk: the median SM clock during the timed replays; cap%: the share of its samples at the power
  // limit (NVML's clock event reasons; -100 where unknown).
  std::printf("\n%-3s %6s %10s %10s %6s %5s %8s %8s %5s %5s %8s  %s\n", "shp", "M", "time_us",
              "floor_us", "ratio", "bound", "gemm1", "gemm2", "clk", "cap%", "err", "config");
  std::map<std::string, std::pair<double, int>> geo;
  for (auto const& pt : points) {
    const double r = pt.time_us / pt.floor_us;
    geo[pt.shape].first += std::log(r);
    geo[pt.shape].second += 1;
    std::printf("%-3s %6lld %10.1f %10.1f %6.3f %5s %8.1f %8.1f %5.0f %5.0f %8.1e  %s\n",
                pt.shape.c_str(), (long long)pt.p.num_tokens, pt.time_us, pt.floor_us, r,
                pt.bound.c_str(), pt.gemm1_us, pt.gemm2_us, pt.clocks.median_mhz,
                100 * pt.clocks.power_capped, pt.rel_err, pt.config.c_str());
  }
  for (auto const& [s, g] : geo) {
    std::printf("%s geomean t/floor %.3f over %d points\n", s.c_str(), std::exp(g.first / g.second),
                g.second);
  }
  std::printf(
      "ceilings: copy %.0f GB/s, matmul %.0f TFLOP/s (SM clock %.0f MHz, power-capped "
      "in %.0f%% of samples); csv %s\n",
      run.ceil.copy_GBps, run.peak, run.ceil_clocks.median_mhz, 100 * run.ceil_clocks.power_capped,
      csv_path.c_str());
}

/// Fast paths as every process that launches kernels resolves them: the lever table's defaults at
/// the H200 deployment, MOETUNE_LEVER_<NAME>=on|off overriding (the bench's other MOETUNE_*
/// variables are not lever knobs, so only those are passed).
kernels::FastPaths bench_fast_paths() {
  core::EnvSnapshot lever_env = core::snapshot_environment(environ);
  std::erase_if(lever_env, [](auto const& kv) { return !kv.first.starts_with("MOETUNE_LEVER_"); });
  return must(kernels::resolve_fast_paths(kernels::local_deployment("cuda", "bf16", "prefill"),
                                          lever_env, {}),
              "levers");
}

/// The run's device, driver, commit and date (nothing measured yet).
RunInfo run_info(CudaTestbed& tb, kernels::cuda::NvmlTelemetry& nvml) {
  RunInfo run;
  run.device = tb.backend().device().name;
  run.driver = nvml.driver_version();
  run.commit = core::git_commit();
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  run.date = date;
  std::fprintf(stderr, "device %s, driver %s\n", run.device.c_str(), run.driver.c_str());
  return run;
}

/// The copy and matmul ceilings of this run, the SM clock sampled meanwhile.
void measure_ceilings(kernels::cuda::NvmlTelemetry& nvml, RunInfo& run) {
  nvml.start(5);
  run.ceil = bench::measure_gpu_ceilings();
  nvml.stop();
  run.ceil_clocks = nvml.reading();
  std::fprintf(stderr,
               "ceilings: copy %.0f GB/s, bf16 matmul %.0f TFLOP/s (%s); SM clock median %.0f "
               "MHz, min %.0f, power-capped in %.0f%% of samples (-100: unknown), max %.0f W\n",
               run.ceil.copy_GBps, run.ceil.matmul_TFLOPs, run.ceil.matmul_source.c_str(),
               run.ceil_clocks.median_mhz, run.ceil_clocks.min_mhz,
               100 * run.ceil_clocks.power_capped, run.ceil_clocks.max_power_w);
  run.peak = run.ceil.matmul_TFLOPs > 0 ? run.ceil.matmul_TFLOPs : 680.0;
}

/// The optional outputs beside the CSV: --dense's CSV and --sweep-log, opened (or the run dies).
struct ExtraOutputs {
  std::optional<std::ofstream> dense_csv, sweep_log;
};
ExtraOutputs open_extra_outputs(Options const& opt, RunInfo const& run) {
  ExtraOutputs out;
  if (opt.dense) {
    const std::string dense_path = opt.out_dir + "/" + run.date + "-" + run.commit + "-dense.csv";
    out.dense_csv.emplace(dense_path);
    if (!*out.dense_csv) die("--dense: cannot write " + dense_path + "; use a writable --out");
    write_dense_header(*out.dense_csv);
  }
  if (!opt.sweep_log.empty()) {
    out.sweep_log.emplace(opt.sweep_log);
    if (!*out.sweep_log)
      die("--sweep-log " + opt.sweep_log + ": cannot write; use a writable path");
    *out.sweep_log << "shape,M,pairs_per_expert,space_block_m,gemm,config,us\n";
  }
  return out;
}

/// The point's config: the recipe's pinned row (its schedules overridden by --schedule where
/// that runs), else the sweep's best (--sweep), else the default.
core::MoeConfig choose_config(CudaTestbed& tb, Point& pt, Options const& opt,
                              std::optional<core::Recipe> const& recipe, std::ofstream* sweep_log) {
  const core::MoeConfig dflt = tb.backend().default_config(pt.p);
  if (auto pinned = bench::pinned_config(recipe, pt.p)) {
    if (!opt.schedule_override) return *pinned;
    core::MoeConfig best = *pinned;
    for (auto* k : {&best.gemm1, &best.gemm2}) {
      if (k->launch.schedule != core::Schedule::kAuto) k->launch.schedule = *opt.schedule_override;
    }
    if (auto st = tb.backend().can_implement(pt.p, best); !st.ok()) {
      std::fprintf(stderr, "override refused, keeping the pinned row: %s\n",
                   st.error().to_string().c_str());
      return *pinned;
    }
    return best;
  }
  if (!opt.sweep) return dflt;
  return bench::sweep_best(tb, pt.p, opt.sweep_reps, pt.candidates, opt.sweep_schedule,
                           opt.sweep_decode_only, sweep_log, pt.shape);
}

/// One point, prepared, chosen, checked and timed; false (after POINT FAILED on stderr) where a
/// step failed.
bool measure_point(CudaTestbed& tb, kernels::cuda::NvmlTelemetry& nvml, Point& pt,
                   RunInfo const& run, Options const& opt,
                   std::optional<core::Recipe> const& recipe, std::ofstream* sweep_log) {
  core::RoutingProfile routing;
  routing.seed = static_cast<uint64_t>(pt.p.num_tokens);
  try {
    if (auto st = tb.prepare(pt.p, routing, 1000 + pt.p.num_tokens); !st.ok()) {
      throw PointFailed{"prepare: " + st.error().to_string()};
    }
    pt.hit = tb.experts_hit();
    set_floor(pt, run);
    const core::MoeConfig best = choose_config(tb, pt, opt, recipe, sweep_log);
    check_point(tb, pt, best);
    time_point(tb, nvml, pt, best, tb.backend().default_config(pt.p));
    if (opt.dense) time_dense(nvml, pt);
  } catch (PointFailed const& e) {
    std::fprintf(stderr, "POINT FAILED %s M=%lld: %s\n", pt.shape.c_str(),
                 (long long)pt.p.num_tokens, e.what.c_str());
    return false;
  }
  return true;
}

/// A measured point on stderr and into the CSVs, flushed (a run cut short by a timeout keeps the
/// points it finished).
void report_point(Point const& pt, double secs, RunInfo const& run, std::ofstream& csv,
                  ExtraOutputs& extra) {
  std::fprintf(stderr,
               "%s M=%-6lld %9.1f us floor %9.1f ratio %.3f default %9.1f err %.2e [%s] (%d "
               "cands, %.1fs)\n",
               pt.shape.c_str(), (long long)pt.p.num_tokens, pt.time_us, pt.floor_us,
               pt.time_us / pt.floor_us, pt.default_us, pt.rel_err, pt.config.c_str(),
               pt.candidates, secs);
  write_csv_row(csv, run, pt);
  csv.flush();
  if (extra.dense_csv) {
    write_dense_row(*extra.dense_csv, run, pt);
    std::fprintf(stderr, "  dense: GEMM1 %.1f us (ours %.1f), GEMM2 %.1f us (ours %.1f)\n",
                 pt.dense_gemm1_us, pt.gemm1_us, pt.dense_gemm2_us, pt.gemm2_us);
  }
  if (extra.sweep_log) extra.sweep_log->flush();
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = bench::parse_options(argc, argv);
  const std::vector<Shape> shapes = bench::selected_shapes(opt);
  std::optional<core::Recipe> recipe;
  if (!opt.recipe.empty()) recipe = must(core::load_recipe(opt.recipe), "recipe");
  auto tb = must(CudaTestbed::create(), "cuda testbed");
  const kernels::FastPaths fast_paths = bench_fast_paths();
  tb->set_fast_paths(fast_paths);
  std::fprintf(stderr, "fast paths: %s\n", kernels::enabled_names(fast_paths).c_str());
  kernels::cuda::NvmlTelemetry nvml;
  RunInfo run = run_info(*tb, nvml);
  // The CSV folder is made (and the file opened) before anything is measured: a run whose
  // results could not be written fails here, not silently after minutes of device time.
  const std::string csv_path = opt.out_dir + "/" + run.date + "-" + run.commit + ".csv";
  std::error_code mkdir_error;
  std::filesystem::create_directories(opt.out_dir, mkdir_error);
  std::ofstream csv(csv_path);
  if (!csv) {
    std::fprintf(stderr,
                 "moetune_sm90_bench: cannot write %s (--out %s: %s); use a writable folder\n",
                 csv_path.c_str(), opt.out_dir.c_str(),
                 mkdir_error ? mkdir_error.message().c_str() : "open failed");
    return 2;
  }
  measure_ceilings(nvml, run);
  write_csv_header(csv);
  ExtraOutputs extra = open_extra_outputs(opt, run);
  std::vector<Point> points;
  std::vector<std::string> failed;  // "S3 M=1", in order
  for (auto const& shape : shapes) {
    for (auto const& m_text : split(opt.ms, ',')) {
      auto t_start = std::chrono::steady_clock::now();
      Point pt;
      pt.shape = shape.name;
      pt.p = shape.p;
      pt.p.num_tokens = std::stoll(m_text);
      if (!measure_point(*tb, nvml, pt, run, opt, recipe,
                         extra.sweep_log ? &*extra.sweep_log : nullptr)) {
        failed.push_back(pt.shape + " M=" + m_text);
        continue;
      }
      report_point(
          pt, std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(),
          run, csv, extra);
      points.push_back(pt);
    }
  }
  csv.close();
  write_winners(opt.out_dir + "/" + run.date + "-" + run.commit + "-winners.json", points);
  print_summary(points, run, csv_path);
  if (!failed.empty()) {
    std::string list;
    for (auto const& f : failed) list += (list.empty() ? "" : ", ") + f;
    std::fprintf(stderr, "moetune_sm90_bench: %zu point(s) failed (POINT FAILED above): %s\n",
                 failed.size(), list.c_str());
    return 1;
  }
  return 0;
}
