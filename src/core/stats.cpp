// Medians, bootstrap intervals and the incumbent rule; see stats.hpp.
#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace moetune::core {

double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  size_t const mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + mid, samples.end());
  double const upper = samples[mid];
  if (samples.size() % 2 == 1) return upper;
  double const lower = *std::max_element(samples.begin(), samples.begin() + mid);
  return 0.5 * (lower + upper);
}

TimingStats bootstrap_median(std::vector<double> const& samples_us, uint64_t seed, int resamples,
                             double confidence) {
  std::vector<double> clean;
  for (double s : samples_us) {
    if (std::isfinite(s)) clean.push_back(s);
  }
  TimingStats out;
  out.samples = static_cast<int>(clean.size());
  if (clean.empty()) return out;
  out.median_us = median(clean);
  if (clean.size() == 1 || resamples < 1) {
    out.ci_low_us = out.ci_high_us = out.median_us;
    return out;
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, clean.size() - 1);
  std::vector<double> medians(static_cast<size_t>(resamples));
  std::vector<double> draw(clean.size());
  for (double& m : medians) {
    for (double& d : draw) d = clean[pick(rng)];
    m = median(draw);
  }
  std::sort(medians.begin(), medians.end());
  auto at = [&](double q) {
    double const pos = q * static_cast<double>(medians.size() - 1);
    return medians[static_cast<size_t>(std::lround(pos))];
  };
  out.ci_low_us = at((1 - confidence) / 2);
  out.ci_high_us = at((1 + confidence) / 2);
  return out;
}

std::vector<std::vector<double>> remove_pass_drift(
    std::vector<std::vector<std::vector<double>>> const& by_pass) {
  size_t passes = 0;
  for (auto const& c : by_pass) passes = std::max(passes, c.size());
  auto finite = [](std::vector<double> const& v) {
    std::vector<double> out;
    for (double s : v) {
      if (std::isfinite(s)) out.push_back(s);
    }
    return out;
  };
  // Per candidate timed in every pass: its pass medians over its overall median.
  std::vector<std::vector<double>> ratios(passes);
  for (auto const& c : by_pass) {
    if (c.size() != passes) continue;
    std::vector<double> pooled;
    std::vector<double> pass_medians;
    for (auto const& p : c) {
      std::vector<double> const f = finite(p);
      if (f.empty()) break;
      pass_medians.push_back(median(f));
      pooled.insert(pooled.end(), f.begin(), f.end());
    }
    double const overall = median(pooled);
    if (pass_medians.size() != passes || !(overall > 0)) continue;
    for (size_t p = 0; p < passes; ++p) ratios[p].push_back(pass_medians[p] / overall);
  }
  std::vector<double> factor(passes, 1.0);
  if (passes > 1 && !ratios.empty() && ratios[0].size() >= 3) {
    for (size_t p = 0; p < passes; ++p) factor[p] = median(ratios[p]);
  }
  std::vector<std::vector<double>> out(by_pass.size());
  for (size_t i = 0; i < by_pass.size(); ++i) {
    for (size_t p = 0; p < by_pass[i].size(); ++p) {
      for (double s : by_pass[i][p]) out[i].push_back(factor[p] > 0 ? s / factor[p] : s);
    }
  }
  return out;
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kIncumbentFaster: return "incumbent_faster";
    case Verdict::kChallengerWins: return "challenger_wins";
    case Verdict::kTie: return "tie";
    case Verdict::kUndecided: return "undecided";
  }
  return "undecided";
}

namespace {
/// t(0.975, df) for df = 1..30 (two-sided 95%); the normal 1.96 beyond.
double student_t_975(size_t df) {
  static constexpr double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  return df >= 1 && df <= 30 ? kT[df - 1] : 1.96;
}
}  // namespace

std::optional<RatioInterval> pooled_ratio_interval(TimingStats const& incumbent,
                                                   TimingStats const& challenger) {
  if (!(incumbent.ci_low_us > 0) || incumbent.samples == 0 || challenger.samples == 0) {
    return std::nullopt;
  }
  return RatioInterval{.low = challenger.ci_low_us / incumbent.ci_high_us,
                       .high = challenger.ci_high_us / incumbent.ci_low_us};
}

std::optional<RatioInterval> paired_ratio_interval(std::vector<double> const& incumbent_pass_us,
                                                   std::vector<double> const& challenger_pass_us) {
  size_t const n = std::min(incumbent_pass_us.size(), challenger_pass_us.size());
  if (n < 2) return std::nullopt;
  std::vector<double> r;
  for (size_t p = 0; p < n; ++p) {
    if (!(incumbent_pass_us[p] > 0)) return std::nullopt;
    r.push_back(challenger_pass_us[p] / incumbent_pass_us[p]);
  }
  double mean = 0;
  for (double x : r) mean += x;
  mean /= static_cast<double>(n);
  double ss = 0;
  for (double x : r) ss += (x - mean) * (x - mean);
  double const sd = std::sqrt(ss / static_cast<double>(n - 1));
  double const half = student_t_975(n - 1) * sd / std::sqrt(static_cast<double>(n));
  return RatioInterval{.low = mean - half, .high = mean + half};
}

bool paired_passes_beat(std::vector<double> const& incumbent_pass_us,
                        std::vector<double> const& challenger_pass_us, double margin) {
  auto const r = paired_ratio_interval(incumbent_pass_us, challenger_pass_us);
  return r && r->high < 1 - margin;
}

namespace {
/// Both carry pass medians of the same passes, enough to pair (the final rounds' paired test).
bool paired(TimingStats const& a, TimingStats const& b) {
  return a.pass_medians_us.size() >= 3 && a.pass_medians_us.size() == b.pass_medians_us.size();
}
}  // namespace

bool within_margin(TimingStats const& incumbent, TimingStats const& challenger, double margin) {
  auto inside = [&](std::optional<RatioInterval> const& r) {
    return r && r->low >= 1 - margin && r->high <= 1 + margin;
  };
  if (!inside(pooled_ratio_interval(incumbent, challenger))) return false;
  return !paired(incumbent, challenger) ||
         inside(paired_ratio_interval(incumbent.pass_medians_us, challenger.pass_medians_us));
}

Verdict decide(TimingStats const& incumbent, TimingStats const& challenger, double margin) {
  bool const lower = challenger.median_us < incumbent.median_us;
  if (lower && challenger.ci_high_us < incumbent.ci_low_us * (1 - margin) &&
      (!paired(incumbent, challenger) ||
       paired_passes_beat(incumbent.pass_medians_us, challenger.pass_medians_us, margin))) {
    return Verdict::kChallengerWins;
  }
  if (within_margin(incumbent, challenger, margin)) return Verdict::kTie;
  return lower ? Verdict::kUndecided : Verdict::kIncumbentFaster;
}

bool needs_settling(TimingStats const& incumbent, TimingStats const& challenger, double margin) {
  return decide(incumbent, challenger, margin) == Verdict::kUndecided &&
         challenger.median_us < incumbent.median_us * (1 - margin);
}

size_t halving_keep(std::vector<TimingStats> const& ranked, size_t keep, size_t cap,
                    double margin) {
  size_t n = std::min(keep, ranked.size());
  cap = std::min(std::max(cap, n), ranked.size());
  while (n > 0 && n < cap && decide(ranked[n], ranked[n - 1], margin) != Verdict::kChallengerWins) {
    ++n;
  }
  return n;
}

size_t halving_cap(size_t alive, size_t keep, size_t slack) {
  return std::max(keep, std::min(keep + (keep + 1) / 2, alive > slack ? alive - slack : 0));
}

double speedup_margin(double incumbent_us, double challenger_us) {
  if (incumbent_us <= 0) return 0;
  return (incumbent_us - challenger_us) / incumbent_us;
}

}  // namespace moetune::core
