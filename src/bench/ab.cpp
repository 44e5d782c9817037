// The A/B protocol; see ab.hpp.
#include "bench/ab.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "bench/child_process.hpp"
#include "bench/csv.hpp"
#include "core/stats.hpp"

namespace moetune::bench {
namespace {

std::vector<std::string> worker_argv(AbOptions const& o, ArmSpec const& arm) {
  std::vector<std::string> argv = {arm.binary.empty() ? o.self_exe : arm.binary};
  argv.insert(argv.end(), o.worker_args.begin(), o.worker_args.end());
  if (!arm.tables.empty()) argv.insert(argv.end(), {"--tables", arm.tables});
  if (!arm.levers.empty()) argv.insert(argv.end(), {"--levers", arm.levers});
  if (!arm.defines.empty()) argv.insert(argv.end(), {"--nvrtc-defines", arm.defines});
  return argv;
}

std::string pct(double f, bool sign = true) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), sign ? "%+.1f%%" : "%.1f%%", f * 100);
  return buf;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

/// Why an arm's process failed, as an error whose code says whose fault it was: the arm's input
/// (its process exited 2, moetune's bad-input code, or a binary arm printed no arm header: not a
/// moetune arm worker) is kInvalidArgument; a crash, a timeout or any other exit is kInternal.
core::Error arm_failure(ChildResult const& child, ArmSpec const& arm, std::string const& where,
                        double timeout_s) {
  bool const no_header = child.out.find("\"worker\"") == std::string::npos;
  bool const not_a_worker = !arm.binary.empty() && !child.timed_out && child.signal == 0 &&
                            child.exit_code != 3 && no_header;
  if (child.exit_code == 2 || not_a_worker) {
    std::string const why = not_a_worker ? "; binary '" + arm.binary + "' printed no arm header, " +
                                               "so it is not a moetune build that runs "
                                               "`bench --arm-worker`"
                                         : "; fix the arm (its process refused its input)";
    return core::make_error(core::ErrorCode::kInvalidArgument, where,
                            "the arm's process ended with " + describe(child, timeout_s) +
                                " (its message is above)" + why);
  }
  return core::make_error(core::ErrorCode::kInternal, where,
                          "the arm's process ended with " + describe(child, timeout_s) +
                              " (its message is above); an arm that does not finish has no "
                              "result, so the A/B stops here");
}

}  // namespace

core::Result<std::vector<ArmRun>> run_arms(
    AbOptions const& o, std::function<void(std::string const&)> const& progress) {
  std::vector<ArmRun> runs;
  bool first = true;
  for (int round = 0; round < o.rounds; ++round) {
    std::vector<ArmSpec> order = o.arms;
    if (round % 2 == 1) std::reverse(order.begin(), order.end());
    for (ArmSpec const& arm : order) {
      if (!first && o.cooldown_s > 0) {
        std::this_thread::sleep_for(std::chrono::duration<double>(o.cooldown_s));
      }
      first = false;
      std::string const where = "arm " + arm.name + " round " + std::to_string(round + 1);
      auto const t0 = std::chrono::steady_clock::now();
      auto child = run_child(worker_argv(o, arm), o.timeout_s);
      if (!child.ok()) return child.error();
      if (child->timed_out || child->signal != 0 || child->exit_code != 0) {
        return arm_failure(*child, arm, where, o.timeout_s);
      }
      auto report = parse_arm_output(child->out, where);
      if (!report.ok()) return report.error();
      double const secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (progress) {
        char line[160];
        std::snprintf(line, sizeof(line), "%s: %zu points in %.1f s", where.c_str(),
                      report->points.size(), secs);
        progress(line);
      }
      runs.push_back({arm.name, round, std::move(report).value()});
    }
  }
  return runs;
}

std::vector<PointComparison> compare_runs(std::vector<ArmRun> const& runs, AbOptions const& o) {
  // (arm, series, M) -> per-round points, in round order.
  using Key = std::tuple<std::string, std::string, int64_t>;
  std::map<Key, std::vector<ArmPoint const*>> by;
  std::vector<std::pair<std::string, int64_t>> order;
  std::set<std::pair<std::string, int64_t>> seen;
  for (auto const& run : runs) {
    for (auto const& p : run.report.points) {
      by[{run.arm, p.series, p.m}].push_back(&p);
      if (run.arm == o.arms.front().name && seen.insert({p.series, p.m}).second) {
        order.push_back({p.series, p.m});
      }
    }
  }
  auto digests = [](std::vector<ArmPoint const*> const& pts) {
    std::string out;
    std::set<std::string> uniq;
    for (auto const* p : pts) {
      if (uniq.insert(p->digest).second) out += (out.empty() ? "" : "|") + p->digest;
    }
    return out;
  };
  auto median_of_medians = [](std::vector<ArmPoint const*> const& pts) {
    std::vector<double> m;
    for (auto const* p : pts) m.push_back(core::median(p->samples_us));
    return core::median(m);
  };
  std::vector<PointComparison> out;
  std::string const& base = o.arms.front().name;
  for (auto const& [series, m] : order) {
    auto const& a = by[{base, series, m}];
    for (size_t i = 1; i < o.arms.size(); ++i) {
      auto const& b = by[{o.arms[i].name, series, m}];
      PointComparison c;
      c.series = series;
      c.m = m;
      c.arm_a = base;
      c.arm_b = o.arms[i].name;
      c.expected_equal = o.expect_equal_digests;
      c.digest_a = digests(a);
      c.digest_b = b.empty() ? "missing" : digests(b);
      c.digests_equal = c.digest_a == c.digest_b && c.digest_a.find('|') == std::string::npos;
      c.config_a = a.front()->config;
      c.config_b = b.empty() ? "" : b.front()->config;
      c.a_median_us = median_of_medians(a);
      c.b_median_us = b.empty() ? 0 : median_of_medians(b);
      std::vector<RoundSamples> rounds;
      for (size_t r = 0; r < std::min(a.size(), b.size()); ++r) {
        rounds.push_back({a[r]->samples_us, b[r]->samples_us});
      }
      c.delta = compare_arms(rounds, o.seed + static_cast<uint64_t>(m), o.margin);
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::string describe(PointComparison const& c, double margin) {
  std::string const ci = "95% CI [" + pct(c.delta.ci_low) + ", " + pct(c.delta.ci_high) + "]";
  switch (c.delta.verdict) {
    case AbVerdict::kBFaster:
      return c.arm_b + " faster by " + pct(-c.delta.delta, false) + " (" + ci + ")";
    case AbVerdict::kBSlower:
      return c.arm_b + " slower by " + pct(c.delta.delta, false) + " (" + ci + ")";
    case AbVerdict::kNoDifference: break;
  }
  std::string why = c.delta.rounds < 2 ? "fewer than 2 rounds"
                    : (c.delta.ci_low <= 0 && c.delta.ci_high >= 0)
                        ? "contains 0"
                        : "does not clear the " + pct(margin, false) + " margin";
  return "no difference (" + pct(c.delta.delta) + ", " + ci + " " + why + ")";
}

std::string ab_csv(std::vector<PointComparison> const& cmp, double margin) {
  std::string out =
      csv_line({"ab_csv_version", "series", "M", "arm_a", "arm_b", "rounds", "a_median_us",
                "b_median_us", "delta", "ci_low", "ci_high", "margin", "verdict", "digest_a",
                "digest_b", "digests_equal", "expected_equal", "config_a", "config_b"}) +
      "\n";
  for (auto const& c : cmp) {
    out += csv_line({std::to_string(kAbCsvVersion), c.series, std::to_string(c.m), c.arm_a, c.arm_b,
                     std::to_string(c.delta.rounds), num(c.a_median_us), num(c.b_median_us),
                     num(c.delta.delta), num(c.delta.ci_low), num(c.delta.ci_high), num(margin),
                     std::string(to_string(c.delta.verdict)), c.digest_a, c.digest_b,
                     c.digests_equal ? "1" : "0", c.expected_equal ? "1" : "0", c.config_a,
                     c.config_b}) +
           "\n";
  }
  return out;
}

std::string ab_samples_csv(std::vector<ArmRun> const& runs) {
  std::string out = csv_line({"ab_csv_version", "arm", "round", "series", "M", "digest",
                              "median_us", "config", "fast_paths", "commit", "samples_us"}) +
                    "\n";
  for (auto const& r : runs) {
    for (auto const& p : r.report.points) {
      std::string samples;
      for (double s : p.samples_us) samples += (samples.empty() ? "" : " ") + num(s);
      out += csv_line({std::to_string(kAbCsvVersion), r.arm, std::to_string(r.round + 1), p.series,
                       std::to_string(p.m), p.digest, num(core::median(p.samples_us)), p.config,
                       p.fast_paths, r.report.commit, samples}) +
             "\n";
    }
  }
  return out;
}

}  // namespace moetune::bench
