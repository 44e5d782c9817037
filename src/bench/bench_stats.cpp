// Summaries and the A/B delta; see bench_stats.hpp.
#include "bench/bench_stats.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/stats.hpp"

namespace moetune::bench {

double percentile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  double const pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(samples.size() - 1);
  return samples[static_cast<size_t>(std::lround(pos))];
}

SampleSummary summarize(std::vector<double> const& samples_us, uint64_t seed) {
  std::vector<double> clean;
  for (double s : samples_us) {
    if (std::isfinite(s)) clean.push_back(s);
  }
  core::TimingStats const t = core::bootstrap_median(clean, seed);
  SampleSummary out;
  out.median_us = t.median_us;
  out.ci_low_us = t.ci_low_us;
  out.ci_high_us = t.ci_high_us;
  out.samples = t.samples;
  out.p10_us = percentile(clean, 0.1);
  out.p90_us = percentile(clean, 0.9);
  return out;
}

std::string_view to_string(AbVerdict v) {
  switch (v) {
    case AbVerdict::kNoDifference: return "no_difference";
    case AbVerdict::kBFaster: return "b_faster";
    case AbVerdict::kBSlower: return "b_slower";
  }
  return "no_difference";
}

namespace {

double ratio_delta(std::vector<double> const& a, std::vector<double> const& b) {
  double const ma = core::median(a);
  return ma > 0 ? core::median(b) / ma - 1 : 0;
}

}  // namespace

AbDelta compare_arms(std::vector<RoundSamples> const& rounds, uint64_t seed, double margin,
                     int resamples) {
  std::vector<RoundSamples> usable;
  for (auto const& r : rounds) {
    if (!r.a_us.empty() && !r.b_us.empty()) usable.push_back(r);
  }
  AbDelta out;
  out.rounds = static_cast<int>(usable.size());
  if (usable.empty()) return out;
  double sum = 0;
  for (auto const& r : usable) sum += ratio_delta(r.a_us, r.b_us);
  out.delta = sum / static_cast<double>(usable.size());
  out.ci_low = out.ci_high = out.delta;
  if (usable.size() < 2) return out;  // one round says nothing about the noise between rounds

  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick_round(0, usable.size() - 1);
  std::vector<double> means(static_cast<size_t>(resamples));
  std::vector<double> a, b;
  for (double& m : means) {
    double acc = 0;
    for (size_t i = 0; i < usable.size(); ++i) {
      RoundSamples const& r = usable[pick_round(rng)];
      a.resize(r.a_us.size());
      b.resize(r.b_us.size());
      std::uniform_int_distribution<size_t> pa(0, r.a_us.size() - 1), pb(0, r.b_us.size() - 1);
      for (double& x : a) x = r.a_us[pa(rng)];
      for (double& x : b) x = r.b_us[pb(rng)];
      acc += ratio_delta(a, b);
    }
    m = acc / static_cast<double>(usable.size());
  }
  std::sort(means.begin(), means.end());
  auto at = [&](double q) {
    return means[static_cast<size_t>(std::lround(q * static_cast<double>(means.size() - 1)))];
  };
  out.ci_low = at(0.025);
  out.ci_high = at(0.975);
  if (out.ci_high < -margin) {
    out.verdict = AbVerdict::kBFaster;
  } else if (out.ci_low > margin) {
    out.verdict = AbVerdict::kBSlower;
  }
  return out;
}

}  // namespace moetune::bench
