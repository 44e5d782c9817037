// Medians, bootstrap intervals and the incumbent rule; see stats.hpp.
#include "tuner/stats.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace moetune::tuner {

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

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::kIncumbentFaster: return "incumbent_faster";
    case Verdict::kChallengerWins: return "challenger_wins";
    case Verdict::kTie: return "tie";
  }
  return "tie";
}

Verdict decide(TimingStats const& incumbent, TimingStats const& challenger, double margin) {
  if (!(challenger.median_us < incumbent.median_us)) return Verdict::kIncumbentFaster;
  if (challenger.ci_high_us < incumbent.ci_low_us * (1 - margin)) return Verdict::kChallengerWins;
  return Verdict::kTie;
}

double speedup_margin(double incumbent_us, double challenger_us) {
  if (incumbent_us <= 0) return 0;
  return (incumbent_us - challenger_us) / incumbent_us;
}

}  // namespace moetune::tuner
