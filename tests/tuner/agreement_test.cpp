// Repeated tunes in simulation: their winners lie within 1% of each other (issue 54's target for
// the shipped winners, which replaces issue 4's "same winner or declared tie"), and every tie they
// declare lies within kTieMaxPooledGap of its winner, both judged by the model's own times. The
// cpu backend's real spaces and checks, with timings from a cost model whose landscape has a
// family of near-equal configs per GEMM (within 1%, as the H200 tunes showed: group_m 1 or 8, 4 or
// 5 stages) and noise of the sizes in the stores of four H200 tunes of S1: 0.4% per sample, a
// per-tune offset of each config (0.4%: one config's final median moved 0.1-0.8% between tunes of
// one device call, at most 1.6%) and a slow drift over the requests. A second model adds each
// timing request's own offset of its config, which reproduces one way tunes disagreed on the
// device (a stage's order flipping between rounds). Under the earlier tie rule (tied: neither
// beats the other) every bucket "agreed" by tie sets, but those sets held 561-2185 ties reaching
// 2.8%, 7.7% and 16.7% from their winners under the three noises here, and the winners spread up
// to 2.2%, 6.7% and 8.1%; under the rule now, 1.3%, 0.01% and none, with winners within 0.8%, 1.1%
// and 5.9%. The negative twins show both measurements can fail.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tuner/in_process_worker.hpp"
#include "tuner/search.hpp"
#include "tuner/tuner_test_util.hpp"

namespace moetune::tuner {
namespace {

using testing::InProcessWorker;
using testing::tiny_task;

uint64_t mix(uint64_t h) {  // splitmix64 finaliser
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

uint64_t key(core::KernelConfig const& k, uint64_t salt) {
  return mix(std::hash<std::string>{}(core::short_string(k)) ^ mix(salt));
}

double unit(uint64_t h) { return double(h >> 11) * 0x1.0p-53; }

constexpr double kFamily = 0.1;  ///< share of a GEMM's candidates within 1% of its best

/// Landscape `salt`: per GEMM, a tenth of the candidates lie within 1% of the best, the rest 3-13%
/// behind.
double landscape(core::MoeConfig const& c, uint64_t salt) {
  auto part = [&](core::KernelConfig const& k, uint64_t s) {
    double const u = unit(key(k, s));
    return u < kFamily ? 0.01 * u / kFamily : 0.03 + 0.1 * u;
  };
  return 100.0 * (1.0 + part(c.gemm1, salt * 2 + 1) + part(c.gemm2, salt * 2 + 2));
}

/// Samples t * (1 + per-tune offset of the config) * (1 + drift) * (1 + per-sample noise), seeded
/// per tune; the drift is an AR(1) walk over the timing requests (stationary sd ~7x drift_sd), so
/// candidates timed one after another in a halving round see different machine states.
class NoisyWorker : public InProcessWorker {
 public:
  NoisyWorker(uint64_t salt, uint64_t tune, double sample_sd, double offset_sd, double drift_sd,
              double request_sd)
      : InProcessWorker([salt](core::MoeConfig const& c) { return landscape(c, salt); }),
        salt_(salt),
        tune_(tune),
        sample_sd_(sample_sd),
        offset_sd_(offset_sd),
        drift_sd_(drift_sd),
        request_sd_(request_sd),
        rng_(mix(salt * 1000 + tune)) {}

  Reply call(Request const& request, double timeout_s) override {
    if (request.op != "time") return InProcessWorker::call(request, timeout_s);
    requests.push_back(request);
    std::normal_distribution<double> noise(0.0, 1.0);
    auto gauss = [](uint64_t h) {  // a deterministic standard normal per (config, tune)
      double const u1 = std::max(unit(h), 1e-12), u2 = unit(mix(h));
      return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    };
    uint64_t const c = key(request.config.gemm1, 11) ^ mix(key(request.config.gemm2, 13));
    double const t = landscape(request.config, salt_) *
                     (1 + offset_sd_ * gauss(mix(c ^ mix(tune_ * 7919 + salt_))));
    Response r;
    drift_ = 0.99 * drift_ + drift_sd_ * noise(rng_);  // AR(1) drift, one step per request
    double const own = 1 + request_sd_ * noise(rng_);  // this request's own offset
    for (int i = 0; i < request.reps; ++i)
      r.samples_us.push_back(t * (1 + drift_) * own * (1 + sample_sd_ * noise(rng_)));
    return Reply{.response = r};
  }

 private:
  uint64_t salt_, tune_;
  double sample_sd_, offset_sd_, drift_sd_, request_sd_;
  std::mt19937_64 rng_;
  double drift_ = 0;
};

/// Device-like options (the tuner's defaults) with short request timeouts.
SearchOptions options(double margin, bool paired_passes) {
  SearchOptions o;
  o.paired_passes = paired_passes;
  o.timeout_s = 5;
  o.prepare_timeout_s = 30;
  o.margin = margin;
  return o;
}

struct Noise {
  double sample_sd, offset_sd, drift_sd;
  double request_sd = 0;  ///< each timing request's own offset of its config (all its samples)
};

/// The modelled H200 noise: 0.4% per sample, 0.4% per tune and config, 0.2% drift, and each
/// timing request moving its config by `request_sd`.
Noise h200_noise(double request_sd = 0) {
  return {.sample_sd = 0.004, .offset_sd = 0.004, .drift_sd = 0.002, .request_sd = request_sd};
}

/// What `tunes` tunes of each of `landscapes` buckets named, judged by the model's own times (the
/// landscape, without the noise).
struct Agreement {
  int buckets = 0;
  /// Buckets whose tunes' winners all lie within 1% of each other (issue 54's target for the
  /// shipped winners, measured on the device by pooled times).
  int within_1pct = 0;
  double widest = 0;  ///< the largest (slowest winner / fastest winner - 1) of a bucket
  /// Buckets where one config is, for every tune, its winner or a finalist it declared tied with
  /// the winner (bench/tuner_targets.py's rule; issue 4's target c).
  int one_named = 0;
  int tied = 0;              ///< declared ties, over all tunes
  double tied_farthest = 0;  ///< the largest |tied / its winner - 1| of a declared tie
};

std::string describe(Agreement const& a) {
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "%d of %d buckets within 1%% (widest %.2f%%), %d named one config; %d ties, "
                "farthest %.2f%% from its winner",
                a.within_1pct, a.buckets, 100 * a.widest, a.one_named, a.tied,
                100 * a.tied_farthest);
  return buf;
}

/// paired_passes: the final's paired test over passes (the tuner's default); off here unless a test
/// asks for it, so the tests written before it keep checking the pooled rule.
Agreement simulate(int landscapes, int tunes, Noise noise, double margin,
                   bool paired_passes = false) {
  Agreement a;
  for (int l = 0; l < landscapes; ++l) {
    auto model = [&](core::MoeConfig const& c) { return landscape(c, uint64_t(l)); };
    std::vector<std::vector<core::MoeConfig>> named;
    double fastest = 0, slowest = 0;
    for (int t = 0; t < tunes; ++t) {
      NoisyWorker worker(uint64_t(l), uint64_t(t), noise.sample_sd, noise.offset_sd, noise.drift_sd,
                         noise.request_sd);
      auto store = Store::open(":memory:");
      BucketTask task = tiny_task();
      task.tune_hash = "agree-" + std::to_string(l) + "-" + std::to_string(t);
      auto r = tune_bucket(worker, **store, task, options(margin, paired_passes));
      EXPECT_TRUE(r.ok() && r->ok) << (r.ok() ? "no winner" : r.error().to_string());
      if (!r.ok()) return a;
      double const w = model(r->winner);
      fastest = t == 0 ? w : std::min(fastest, w);
      slowest = std::max(slowest, w);
      for (core::MoeConfig const& c : r->tied) {
        ++a.tied;
        a.tied_farthest = std::max(a.tied_farthest, std::abs(model(c) / w - 1));
      }
      std::vector<core::MoeConfig> s = r->tied;
      s.push_back(r->winner);
      named.push_back(std::move(s));
    }
    ++a.buckets;
    a.widest = std::max(a.widest, slowest / fastest - 1);
    if (slowest <= fastest * 1.01) ++a.within_1pct;
    for (core::MoeConfig const& c : named.front()) {
      bool everywhere = true;
      for (auto const& s : named)
        everywhere = everywhere && std::find(s.begin(), s.end(), c) != s.end();
      if (everywhere) {
        ++a.one_named;
        break;
      }
    }
  }
  return a;
}

TEST(Agreement, FiveTunesUnderModelledH200NoiseNameWinnersWithinOnePercent) {
  // Winners within 1% of each other in every bucket (widest 0.79% when measured), and every
  // declared tie within kTieMaxPooledGap of its winner by the model (farthest 1.29%).
  Agreement const a = simulate(8, 5, h200_noise(), 0.01);
  ASSERT_EQ(a.buckets, 8);
  EXPECT_EQ(a.within_1pct, 8) << describe(a);
  EXPECT_LE(a.tied_farthest, kTieMaxPooledGap) << describe(a);
}

TEST(Agreement, FiveTunesWhoseRequestsMoveConfigsApartNameWinnersWithinOneAndAHalfPercent) {
  // Each timing request also moves its config by its own 2% (sd): on the H200 a pair of configs
  // moved 1-3% against each other between halving rounds seconds apart (in a tune's store), so a
  // stage's last round alone put the config other tunes named out of the final round. The winners
  // lay within 1.08% of each other when measured (6 of 8 buckets within 1%).
  Agreement const a = simulate(8, 5, h200_noise(0.02), 0.01);
  ASSERT_EQ(a.buckets, 8);
  EXPECT_LE(a.widest, 0.015) << describe(a);
  EXPECT_LE(a.tied_farthest, kTieMaxPooledGap) << describe(a);
}

TEST(Agreement, WhereRequestsMoveConfigsBy4PercentNoTieIsDeclaredBeyondTheCap) {
  // Requests moving their config by 4% (sd), as one config's pass medians spanned 12% in an H200
  // final (S1 M = 8192): four passes cannot show configs within 1% equal, so ties are few, and
  // none lies further than kTieMaxPooledGap from its winner by the model. The winners then spread
  // (5.9% when measured, 2 of 8 buckets within 1%): the noise, no longer hidden in tie sets.
  Agreement const a = simulate(8, 5, h200_noise(0.04), 0.01, /*paired_passes=*/true);
  ASSERT_EQ(a.buckets, 8);
  EXPECT_LE(a.tied_farthest, kTieMaxPooledGap) << describe(a);
}

TEST(Agreement, WithAFivePercentMarginTiesReachFurtherThanTheCap) {
  // The negative twin: the same noise with ties allowed 5% either way; the measurement of how far
  // a tie reaches must be able to fail (4.4% when measured).
  Agreement const a = simulate(8, 5, h200_noise(0.04), 0.05, /*paired_passes=*/true);
  ASSERT_EQ(a.buckets, 8);
  EXPECT_GT(a.tied_farthest, kTieMaxPooledGap) << describe(a);
}

TEST(Agreement, WithoutAMarginAndWithLargeOffsetsWinnersSpread) {
  // Negative twin of the winners' spread: per-tune offsets of 3% (sd) and no margin.
  Agreement const a =
      simulate(8, 5, {.sample_sd = 0.004, .offset_sd = 0.03, .drift_sd = 0.002}, 0.0);
  ASSERT_EQ(a.buckets, 8);
  EXPECT_LT(a.within_1pct, 8) << describe(a);
}

}  // namespace
}  // namespace moetune::tuner
