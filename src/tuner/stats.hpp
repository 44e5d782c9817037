// Statistics of the tuner: the median of timing samples, a seeded bootstrap confidence interval of
// the median, and the incumbent rule (a challenger wins only beyond both intervals and a margin).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace moetune::tuner {

/// Median and confidence interval of one candidate's samples, in microseconds.
struct TimingStats {
  double median_us = 0;
  double ci_low_us = 0;   ///< lower bound of the bootstrap interval of the median
  double ci_high_us = 0;  ///< upper bound
  int samples = 0;
};

/// The median (mean of the middle two for an even count); 0 for no samples.
double median(std::vector<double> samples);

/// Bootstrap interval of the median: `resamples` draws with replacement (seeded: the same input
/// gives the same interval), percentiles (1-confidence)/2 and (1+confidence)/2. One sample gives
/// [x, x]. NaN samples are dropped first.
TimingStats bootstrap_median(std::vector<double> const& samples_us, uint64_t seed,
                             int resamples = 1000, double confidence = 0.95);

/// What selection decided between the incumbent and the fastest challenger.
enum class Verdict {
  kIncumbentFaster,  ///< the incumbent's median is the lowest: it stays
  kChallengerWins,   ///< challenger.ci_high < incumbent.ci_low * (1 - margin): it replaces it
  kTie,              ///< the challenger's median is lower but not beyond the intervals and margin
};
std::string_view to_string(Verdict v);  ///< "incumbent_faster", "challenger_wins", "tie"

/// The incumbent rule. `margin` is a fraction (0.01 = the challenger's whole interval must sit 1%
/// below the incumbent's).
Verdict decide(TimingStats const& incumbent, TimingStats const& challenger, double margin);

/// (incumbent - challenger) / incumbent of the medians: 0.05 = the challenger is 5% faster.
double speedup_margin(double incumbent_us, double challenger_us);

}  // namespace moetune::tuner
