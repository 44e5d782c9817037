// Statistics of the bench and A/B protocol: per-point summaries of timing samples (median, p10,
// p90, seeded bootstrap interval of the median) and the A/B delta between two arms, bootstrapped
// over rounds. A delta whose interval contains 0, or does not clear the margin, is "no
// difference" and never a win (seed 000 withdrew a 4.6% claim that came from arms that were not
// comparable; the verdict here is made only from intervals).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace moetune::bench {

/// Summary of one point's samples, in microseconds.
struct SampleSummary {
  double median_us = 0;
  double p10_us = 0;
  double p90_us = 0;
  double ci_low_us = 0;  ///< bootstrap interval of the median (95%)
  double ci_high_us = 0;
  int samples = 0;
};

/// Percentile `q` in [0, 1] by nearest rank on sorted samples (the rule sm90_bench uses); 0 when
/// empty.
double percentile(std::vector<double> samples, double q);

/// Median, p10, p90 and the 95% bootstrap interval of the median (seeded: same samples and seed,
/// same interval). Non-finite samples are dropped.
SampleSummary summarize(std::vector<double> const& samples_us, uint64_t seed);

/// One round of an A/B pair at one point: both arms' samples from the same round.
struct RoundSamples {
  std::vector<double> a_us;
  std::vector<double> b_us;
};

/// What the A/B comparison concluded for B against A.
enum class AbVerdict {
  kNoDifference,  ///< the interval contains 0 or does not clear the margin
  kBFaster,       ///< the whole interval is below -margin
  kBSlower,       ///< the whole interval is above +margin
};
std::string_view to_string(AbVerdict v);  ///< "no_difference", "b_faster", "b_slower"

/// The relative delta of B against A: (t_B / t_A - 1), so -0.05 = B is 5% faster.
struct AbDelta {
  double delta = 0;   ///< mean over rounds of median(B) / median(A) - 1
  double ci_low = 0;  ///< 95% interval of `delta`
  double ci_high = 0;
  int rounds = 0;
  AbVerdict verdict = AbVerdict::kNoDifference;
};

/// Bootstraps the delta hierarchically: resample rounds, and within each drawn round resample
/// both arms' samples, so the interval holds the noise between rounds and within them. Seeded.
/// `margin` is a fraction (0.01: B must be at least 1% away from A over its whole interval).
/// Fewer than 2 rounds can never give a verdict other than kNoDifference.
AbDelta compare_arms(std::vector<RoundSamples> const& rounds, uint64_t seed, double margin,
                     int resamples = 2000);

}  // namespace moetune::bench
