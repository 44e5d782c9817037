// Statistics of timing samples, shared by the tuner's search and the bench's A/B: the median, a
// seeded bootstrap confidence interval of the median, and the incumbent rule (a challenger wins
// only beyond both intervals and a margin; it ties only where the interval of the time ratio lies
// within the margin on both sides).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace moetune::core {

/// Median and confidence interval of one candidate's samples, in microseconds.
struct TimingStats {
  double median_us = 0;
  double ci_low_us = 0;   ///< lower bound of the bootstrap interval of the median
  double ci_high_us = 0;  ///< upper bound
  int samples = 0;
  /// Final rounds with SearchOptions::paired_passes: each pass's median of the raw samples, in
  /// pass order (settling rounds append theirs); empty elsewhere, which leaves `decide` to the
  /// intervals alone.
  std::vector<double> pass_medians_us;
};

/// The median (mean of the middle two for an even count); 0 for no samples.
double median(std::vector<double> samples);

/// Bootstrap interval of the median: `resamples` draws with replacement (seeded: the same input
/// gives the same interval), percentiles (1-confidence)/2 and (1+confidence)/2. One sample gives
/// [x, x]. NaN samples are dropped first.
TimingStats bootstrap_median(std::vector<double> const& samples_us, uint64_t seed,
                             int resamples = 1000, double confidence = 0.95);

/// Samples of several candidates timed in interleaved passes, `by_pass[candidate][pass]`, with
/// the drift common to all of them removed: pass p's factor is the median, over the candidates
/// timed in every pass, of (their median in pass p / their median over all passes), and each
/// sample of pass p is divided by it. Returns each candidate's samples of all passes, pooled.
/// A clock or thermal change between passes moves every candidate alike, so it no longer widens
/// the intervals the incumbent rule compares (on the H200 one pass of a final ran 15-17% slower
/// for every finalist, and a challenger 13% faster in each pass was called a tie). With fewer
/// than 3 such candidates the samples are pooled unchanged (a median of two ratios would let one
/// candidate's own change move the other's samples).
std::vector<std::vector<double>> remove_pass_drift(
    std::vector<std::vector<std::vector<double>>> const& by_pass);

/// What selection decided between the incumbent and the fastest challenger.
enum class Verdict {
  kIncumbentFaster,  ///< the incumbent's median is the lowest and no tie is shown: it stays
  kChallengerWins,   ///< challenger.ci_high < incumbent.ci_low * (1 - margin): it replaces it
  kTie,        ///< shown equal: the ratio's interval lies within 1 -+ margin (`within_margin`)
  kUndecided,  ///< the challenger's median is lower, but neither a win nor a tie is shown:
               ///< the incumbent stays, and more data may settle it (`needs_settling`)
};
/// "incumbent_faster", "challenger_wins", "tie", "undecided"
std::string_view to_string(Verdict v);

/// An interval of the time ratio challenger / incumbent (0.97 = the challenger 3% faster).
struct RatioInterval {
  double low = 0;
  double high = 0;
};

/// Every ratio the two bootstrap intervals allow together: [challenger.ci_low /
/// incumbent.ci_high, challenger.ci_high / incumbent.ci_low]. nullopt when the incumbent's interval
/// does not lie above 0 (no samples).
std::optional<RatioInterval> pooled_ratio_interval(TimingStats const& incumbent,
                                                   TimingStats const& challenger);
/// Paired over the passes both were timed in: r_p = challenger / incumbent of pass p's medians (a
/// drift common to the pass cancels in the ratio), and the 95% Student-t interval of their mean,
/// mean(r) -+ t(0.975, n - 1) sd(r) / sqrt(n). nullopt for fewer than 2 passes or an incumbent pass
/// median not above 0.
std::optional<RatioInterval> paired_ratio_interval(std::vector<double> const& incumbent_pass_us,
                                                   std::vector<double> const& challenger_pass_us);

/// The tie rule: the interval of challenger / incumbent lies within [1 - margin, 1 + margin], on
/// both sides: pooled_ratio_interval's and, when both carry pass medians of the same passes (at
/// least 3), paired_ratio_interval's too. An interval that merely overlaps the other, or reaches
/// past the margin on one side, is not a tie: on the H200 a rule that called every pair it could
/// not separate a tie put configs up to 15.8% behind the winner into S1's tie sets (issue 54).
bool within_margin(TimingStats const& incumbent, TimingStats const& challenger, double margin);

/// The incumbent rule. `margin` is a fraction (0.01 = the challenger's whole interval must sit 1%
/// below the incumbent's). When both carry pass medians of the same passes (at least 3), the
/// challenger must also win paired_passes_beat: a win by the intervals whose passes disagree is
/// not a win. Else kTie when within_margin, else kIncumbentFaster when the challenger's median is
/// not lower, else kUndecided.
Verdict decide(TimingStats const& incumbent, TimingStats const& challenger, double margin);
/// paired_ratio_interval's upper bound below 1 - margin. The passes are the replicates: on the
/// H200 (S1 M = 8192) one finalist's pass medians in a final spanned 12% (1899-2127 us) and the
/// pooled intervals still separated it from the winner (1972-2072 against 1887-1906 us), a win,
/// while the per-pass ratio's interval (0.896-1.004) did not; the other four tunes had the two in
/// the other order.
bool paired_passes_beat(std::vector<double> const& incumbent_pass_us,
                        std::vector<double> const& challenger_pass_us, double margin);
/// An undecided verdict that more data may settle: `decide` says kUndecided, and the challenger's
/// median sits below the incumbent's by more than `margin` (the gain is there in the medians, the
/// intervals are too wide to show it). Undecided within the margin by the medians is not settled:
/// the incumbent stays.
bool needs_settling(TimingStats const& incumbent, TimingStats const& challenger, double margin);

/// Successive halving's cut over `ranked` (fastest median first): the first `keep` survive, and so
/// does each next one that the last survivor does not beat by `decide` (beyond both intervals and
/// `margin`), up to `cap` in all (at least `keep`, at most ranked.size()). A candidate the cut
/// line cannot separate from it (tied or undecided) is then not dropped on noise: on the H200 a
/// fifth tune dropped the config four tunes named at M = 4 where its median equalled the last
/// survivor's.
size_t halving_keep(std::vector<TimingStats> const& ranked, size_t keep, size_t cap, double margin);
/// halving_keep's `cap` for a round of `alive` candidates that keeps `keep`: half as many again,
/// but `slack` fewer than alive (1: every round of three or more shrinks; 2 where the incumbent
/// may be added back), and never under `keep`.
size_t halving_cap(size_t alive, size_t keep, size_t slack);

/// (incumbent - challenger) / incumbent of the medians: 0.05 = the challenger is 5% faster.
double speedup_margin(double incumbent_us, double challenger_us);

}  // namespace moetune::core
