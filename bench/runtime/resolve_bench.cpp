// resolve_bench: what a hot config lookup costs MoeRunner on the CPU (the bound: <= 1 us).
// It builds a cpu runner on the demo table (tables/cpu), warms every M in [1, max_tokens] once,
// then times rounds of lookups cycling through M, for:
//   lookup/none   MoeRunner::lookup, knobs none (what run() pays before launching): memo load
//   choose/none   MoeRunner::choose: the lookup plus a copy of the Choice (strings: allocates)
//   explicit      MoeRunner::choose with an explicit config: can_implement every call
//   cold/none     a fresh runner's first lookup per M (table resolve + explain text), for scale
// Median and spread over rounds; writes build/results/<date>-<commit>-resolve.csv (or --out).
// Usage: moetune_resolve_bench [--out FILE] [--rounds N] [--iters N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/build_info.hpp"
#include "core/device_info.hpp"
#include "moetune/moe_runner.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kMaxTokens = 4096;

struct Row {
  std::string what;
  std::vector<double> ns;  // per-op ns, one per round
};

double pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1) + 0.5)];
}

template <class F>
Row measure(std::string what, int rounds, int64_t iters, F&& op) {
  Row row{std::move(what), {}};
  for (int r = 0; r < rounds; ++r) {
    auto const t0 = Clock::now();
    for (int64_t i = 0; i < iters; ++i) op(1 + (i * 37) % kMaxTokens);
    double const ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    row.ns.push_back(ns / static_cast<double>(iters));
  }
  return row;
}

std::unique_ptr<moetune::MoeRunner> make_runner(std::string const& cache) {
  moetune::RunnerOptions o;
  o.tables_dir = std::string(MOETUNE_SOURCE_DIR) + "/tables/cpu";
  o.cache_path = cache;
  o.max_tokens = kMaxTokens;
  auto p = moetune::core::parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,dtype=bf16");
  auto r = moetune::MoeRunner::create(*p, "cpu", o);
  if (!r.ok()) {
    std::cerr << "resolve_bench: " << r.error().to_string() << "\n";
    std::exit(3);
  }
  return std::move(*r);
}

/// HEAD at run time (the commit the build was configured at, core::git_commit(), goes stale
/// between commits).
std::string head_commit() {
  std::string cmd = std::string("git -C '") + MOETUNE_SOURCE_DIR + "' rev-parse --short=12 HEAD";
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[64];
    while (fgets(buf, sizeof buf, f)) out += buf;
    pclose(f);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out.empty() ? moetune::core::git_commit() : out;
}

std::string default_out() {
  char date[16];
  std::time_t const t = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&t));
  return std::string(MOETUNE_SOURCE_DIR) + "/build/results/" + date + "-" + head_commit() +
         "-resolve.csv";
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = default_out();
  int rounds = 15;
  int64_t iters = 1'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--out")) out = argv[i + 1];
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoll(argv[i + 1]);
  }
  std::string const dir = std::filesystem::temp_directory_path() / "moetune-resolve-bench";
  std::filesystem::create_directories(dir);
  std::string const cache = dir + "/knobs.json";
  std::filesystem::remove(cache);
  std::vector<Row> rows;
  {
    auto cold = make_runner(cache);
    int64_t m = 0;
    rows.push_back(measure("cold/none", 1, kMaxTokens, [&](int64_t) {
      if (!cold->lookup(++m).ok()) std::exit(3);
    }));
  }
  auto r = make_runner(cache);
  for (int64_t m = 1; m <= kMaxTokens; ++m) {
    if (!r->lookup(m).ok()) return 3;
  }
  volatile int64_t sink = 0;
  rows.push_back(measure("lookup/none", rounds, iters, [&](int64_t m) {
    sink = sink + (*r->lookup(m))->config.gemm1.tile.block_m;
  }));
  auto const first = r->choose(1);
  moetune::Knobs const ex = moetune::Knobs::explicit_config(first->config);
  rows.push_back(measure("choose/none", rounds, iters / 10,
                         [&](int64_t m) { sink = sink + r->choose(m)->bucket; }));
  rows.push_back(measure("explicit", rounds, iters / 10,
                         [&](int64_t m) { sink = sink + r->choose(m, ex)->bucket; }));
  std::filesystem::create_directories(std::filesystem::path(out).parent_path());
  std::ofstream csv(out);
  moetune::core::DeviceInfo const d = moetune::core::cpu_device_info();
  csv << "what,rounds,iters_per_round,median_ns,p10_ns,p90_ns,device,toolchain,commit\n";
  for (auto const& row : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "%s,%zu,%lld,%.2f,%.2f,%.2f", row.what.c_str(), row.ns.size(),
                  static_cast<long long>(row.what == "cold/none"     ? kMaxTokens
                                         : row.what == "lookup/none" ? iters
                                                                     : iters / 10),
                  pct(row.ns, 0.5), pct(row.ns, 0.1), pct(row.ns, 0.9));
    csv << line << ",\"" << d.name << "\"," << d.toolchain << "," << head_commit() << "\n";
    std::cout << line << "\n";
  }
  std::cout << "wrote " << out << "\n";
  return pct(rows[1].ns, 0.5) <= 1000.0 ? 0 : 1;
}
