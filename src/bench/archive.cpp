// bench.csv rows, env.json and the run folder; see archive.hpp.
#include "bench/archive.hpp"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "bench/csv.hpp"
#include "core/atomic_file.hpp"
#include "core/flat_json.hpp"
#include "core/json_text.hpp"

namespace moetune::bench {
namespace {

using core::json_double;
using core::json_string;

std::string num(double v) {
  std::ostringstream out;
  out.precision(6);
  out << v;
  return out.str();
}

void add_gemm_columns(std::vector<std::string>& h, char const* g) {
  for (char const* f : {"block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages",
                        "split_k", "swap_ab", "schedule", "num_threads"}) {
    h.push_back(std::string(g) + "_" + f);
  }
}

void add_gemm_values(std::vector<std::string>& v, core::KernelConfig const& k) {
  v.push_back(std::to_string(k.tile.block_m));
  v.push_back(std::to_string(k.tile.block_n));
  v.push_back(std::to_string(k.tile.block_k));
  v.push_back(std::to_string(k.tile.group_m));
  v.push_back(std::to_string(k.pipeline.num_warps));
  v.push_back(std::to_string(k.pipeline.num_stages));
  v.push_back(std::to_string(k.pipeline.split_k));
  v.push_back(k.launch.swap_ab ? "1" : "0");
  v.push_back(std::string(core::to_string(k.launch.schedule)));
  v.push_back(std::to_string(k.launch.num_threads));
}

std::string samples_text(std::vector<double> const& s) {
  std::string out;
  for (double v : s) out += (out.empty() ? "" : " ") + num(v);
  return out;
}

}  // namespace

std::vector<std::string> const& bench_csv_header() {
  static const std::vector<std::string> h = [] {
    std::vector<std::string> c = {"bench_csv_version",
                                  "series",
                                  "backend",
                                  "device",
                                  "E",
                                  "K",
                                  "I",
                                  "top_k",
                                  "act",
                                  "dtype",
                                  "routing",
                                  "M",
                                  "experts_hit",
                                  "repeats",
                                  "time_us",
                                  "p10_us",
                                  "p90_us",
                                  "ci_low_us",
                                  "ci_high_us",
                                  "floor_us",
                                  "bound",
                                  "ratio",
                                  "bytes_min",
                                  "flops",
                                  "sm_clock_mhz",
                                  "power_w",
                                  "digest",
                                  "deterministic",
                                  "rel_err",
                                  "check",
                                  "rule",
                                  "key",
                                  "table",
                                  "fast_paths",
                                  "config"};
    add_gemm_columns(c, "g1");
    add_gemm_columns(c, "g2");
    c.push_back("samples_us");
    return c;
  }();
  return h;
}

std::string bench_csv_row(BenchPoint const& p, std::string const& device) {
  core::MoeProblem const& q = p.problem;
  std::vector<std::string> v = {
      std::to_string(kBenchCsvVersion),
      p.series,
      p.backend,
      device,
      std::to_string(q.num_experts),
      std::to_string(q.hidden_size),
      std::to_string(q.intermediate_size),
      std::to_string(q.top_k),
      std::string(core::to_string(q.activation)),
      std::string(core::to_string(q.dtype)),
      p.routing,
      std::to_string(q.num_tokens),
      std::to_string(p.experts_hit),
      std::to_string(p.samples_us.size()),
      num(p.stats.median_us),
      num(p.stats.p10_us),
      num(p.stats.p90_us),
      num(p.stats.ci_low_us),
      num(p.stats.ci_high_us),
      num(p.floor.floor_us),
      p.floor.floor_us > 0 ? (p.floor.bandwidth_bound ? "bw" : "compute") : "",
      num(p.t_over_floor),
      num(p.floor.bytes_min),
      num(p.floor.flops),
      num(p.telemetry.sm_clock_mhz),
      num(p.telemetry.power_w),
      p.digest,
      p.deterministic ? "1" : "0",
      num(p.rel_err),
      p.check_ok ? "ok" : "failed",
      p.rule,
      p.key ? std::to_string(*p.key) : "",
      p.table,
      p.fast_paths,
      core::short_string(p.config)};
  add_gemm_values(v, p.config.gemm1);
  add_gemm_values(v, p.config.gemm2);
  v.push_back(samples_text(p.samples_us));
  return csv_line(v);
}

std::string env_json(RunEnv const& e) {
  std::ostringstream o;
  auto device = core::to_json_text(e.device, -1);
  o << "{\n"
    << "  \"env_version\": " << kEnvVersion << ",\n"
    << "  \"date\": " << json_string(e.date) << ",\n"
    << "  \"time_utc\": " << json_string(e.time_utc) << ",\n"
    << "  \"command\": " << json_string(e.command) << ",\n"
    << "  \"backend\": " << json_string(e.backend) << ",\n"
    << "  \"device\": " << device << ",\n"
    << "  \"driver\": " << json_string(e.driver) << ",\n"
    << "  \"toolchain\": " << json_string(e.device.toolchain) << ",\n"
    << "  \"commit\": " << json_string(e.commit) << ",\n"
    << "  \"clocks\": {\"sm_clock_mhz\": " << json_double(e.clocks.sm_clock_mhz)
    << ", \"power_w\": " << json_double(e.clocks.power_w)
    << ", \"source\": " << json_string(e.telemetry_source) << "},\n"
    << "  \"ceilings\": {\"copy_GBps\": " << json_double(e.ceilings.copy_GBps)
    << ", \"matmul_GFLOPs\": " << json_double(e.ceilings.matmul_GFLOPs)
    << ", \"copy_source\": " << json_string(e.ceilings.copy_source)
    << ", \"matmul_source\": " << json_string(e.ceilings.matmul_source)
    << ", \"fp8_GFLOPs\": " << json_double(e.ceilings.fp8_GFLOPs)
    << ", \"fp8_source\": " << json_string(e.ceilings.fp8_source) << "},\n"
    << "  \"floor\": "
    << json_string(
           "max(bytes_min / copy_GBps, flops / matmul_GFLOPs (fp8 problems: fp8_GFLOPs)); "
           "bytes_min = experts_hit*(N1*K+K*I)*b + 2*M*K*b + 8*M*top_k (fp8 weights: 1 B "
           "each plus their fp32 scales)")
    << ",\n"
    << "  \"options\": {\"warmup\": " << e.options.warmup << ", \"repeats\": " << e.options.repeats
    << ", \"cooldown_s\": " << json_double(e.options.cooldown_s) << ", \"seed\": " << e.options.seed
    << ", \"levers\": " << json_string(e.levers) << ", \"tables\": " << json_string(e.tables)
    << ", \"nvrtc_defines\": " << json_string(e.nvrtc_defines) << "},\n"
    << "  \"arms\": [";
  for (size_t i = 0; i < e.arms.size(); ++i) o << (i ? ", " : "") << json_string(e.arms[i]);
  o << "],\n"
    << "  \"rounds\": " << e.rounds << ",\n"
    << "  \"bench_csv_version\": " << kBenchCsvVersion << "\n"
    << "}\n";
  return o.str();
}

std::pair<std::string, std::string> utc_now() {
  std::time_t const now = std::time(nullptr);
  char date[16], time[16];
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  std::strftime(time, sizeof(time), "%H:%M:%S", std::gmtime(&now));
  return {date, time};
}

core::Result<std::string> make_run_dir(std::string const& out_dir, RunEnv const& env,
                                       std::string const& kind) {
  std::string hms = env.time_utc;
  std::erase(hms, ':');
  std::string commit = env.commit;  // "+dirty" would put a '+' in the folder's name
  std::replace(commit.begin(), commit.end(), '+', '-');
  std::string const base = out_dir + "/" + env.date + "-" + hms + "-" + commit + kind;
  std::string dir = base;
  std::error_code ec;
  for (int i = 2; std::filesystem::exists(dir, ec); ++i) dir = base + "-" + std::to_string(i);
  MOETUNE_RETURN_IF_ERROR(core::ensure_writable_dir(dir));
  return dir;
}

}  // namespace moetune::bench
