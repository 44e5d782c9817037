// A tuned row's source and reproducing command; see tune_provenance.hpp.
#include "tuner/tune_provenance.hpp"

#include <sstream>

#include "tuner/store.hpp"

namespace moetune::tuner {

core::Source tuned_source(BucketResult const& r, TunedSourceInfo const& info) {
  core::Source s;
  s.kind = "tuned";
  s.date = utc_now().substr(0, 10);
  s.device = info.device;
  std::ostringstream protocol;
  protocol << "moetune-tune-v6: worker process, check vs fp64 reference, ";
  if (r.per_gemm) {
    protocol << "per GEMM per block_m (GEMM1 with GEMM2 at a base, then GEMM2 with GEMM1 at the "
             << "fastest; whole-layer timing), ";
  }
  protocol << (info.exhaustive ? "exhaustive (no halving, every candidate at full reps)"
                               : "successive halving (x3 reps per round; the best third "
                                 "and those the cut line does not beat beyond the CI by the "
                                 "margin, at most half as many again)")
           << ", finalists: incumbent + "
           << (r.per_gemm
                   ? "per block_m the cross product of each stage's fastest and up to " +
                         std::to_string(kStageTiesCarried) +
                         " near ties (not beaten beyond the CI by twice the margin in every "
                         "stage round: the nearest, then the earliest in search order, which "
                         "breaks final ties)"
                   : std::string("best 3"))
           << ", final " << info.reps << " reps in " << kFinalPasses << " interleaved passes after "
           << info.warmup
           << " warm-up, median + 95% bootstrap CI, incumbent kept unless beaten beyond the CI by "
           << info.margin * 100
           << (info.paired_passes ? "% and by a paired t-test over the passes" : "%")
           << "; tied only where the interval of the time ratio lies within the margin on both "
              "sides and the pooled medians within "
           << kTieMaxPooledGap * 100
           << "% (the winner then the earliest challenger tied with the fastest), routing "
           << core::format_routing(info.routing) << "; verdict " << r.verdict;
  if (r.tie) protocol << " with " << core::short_string(r.challenger) << " (both in the store)";
  s.protocol = protocol.str();
  auto const rejected = r.outcomes.find(Outcome::kRejected);
  s.numbers = {{"time_us", r.winner_stats.median_us},
               {"ci_low_us", r.winner_stats.ci_low_us},
               {"ci_high_us", r.winner_stats.ci_high_us},
               {"default_us", r.incumbent_ok ? r.incumbent_stats.median_us : 0},
               {"challenger_us", r.has_challenger ? r.challenger_stats.median_us : 0},
               {"tie", r.tie ? 1.0 : 0.0},
               {"candidates", double(r.candidates)},
               {"rejected", double(rejected == r.outcomes.end() ? 0 : rejected->second)},
               {"measured", double(r.measured)}};
  if (r.repeats > 0) s.numbers["agreement"] = double(r.agreeing) / r.repeats;
  s.digest = r.digest;
  s.command = info.command;
  return s;
}

std::string reproduce_command(TuneRequest const& request, std::string const& backend,
                              int64_t bucket, std::string const& out_dir, bool retargeted) {
  std::ostringstream out;
  out << "moetune tune --recipe " << request.recipe_path << " --buckets " << bucket << " --backend "
      << backend << " --out " << out_dir << " --merge --reps " << request.reps << " --warmup "
      << request.warmup << " --margin " << request.margin << " --timeout-s " << request.timeout_s;
  if (request.exhaustive) out << " --exhaustive";
  if (request.stage2_gemm1s != 1) out << " --stage2-gemm1s " << request.stage2_gemm1s;
  if (!request.paired_passes) out << " --no-paired-passes";
  if (retargeted) out << " --retarget-device";
  return out.str();
}

core::TableRow tuned_row(TuneRequest const& request, ShapePlan const& plan, BucketResult const& r,
                         std::string const& command) {
  core::TableRow row{
      .config = r.winner,
      .source = tuned_source(r, TunedSourceInfo{.device = plan.device.name,
                                                .reps = request.reps,
                                                .warmup = request.warmup,
                                                .margin = request.margin,
                                                .exhaustive = request.exhaustive,
                                                .paired_passes = request.paired_passes,
                                                .routing = plan.shape->routing,
                                                .command = command})};
  if (!plan.retargeted_from.empty()) {
    row.source->protocol += "; retargeted (--retarget-device): the recipe's device is " +
                            plan.retargeted_from + ", measured on " + plan.device_label;
  }
  return row;
}

}  // namespace moetune::tuner
