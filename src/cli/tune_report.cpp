// tune's report: lines, JSON and progress; see tune_report.hpp.
#include "cli/tune_report.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/cli_common.hpp"
#include "cli/json_out.hpp"
#include "core/json_text.hpp"
#include "tuner/store.hpp"

namespace moetune::cli {
namespace {

std::string timing_text(core::TimingStats const& s) {
  return format_us(s.median_us) + " us [" + format_us(s.ci_low_us) + ", " +
         format_us(s.ci_high_us) + "]";
}

std::string stats_json(core::TimingStats const& s) {
  return "{\"median_us\": " + json_number(s.median_us) +
         ", \"ci_low_us\": " + json_number(s.ci_low_us) +
         ", \"ci_high_us\": " + json_number(s.ci_high_us) +
         ", \"samples\": " + std::to_string(s.samples) + "}";
}

/// "per_gemm": bool, "joint_product": N, "groups": [{block_m, gemm1/gemm2 list sizes, base,
/// gemm1_winner, winner (short strings; "" when the stage named none), winner_us, carried (the
/// group's other finalists: the cross product of both stages' tops)}].
std::string groups_json(tuner::BucketResult const& r) {
  std::vector<std::string> groups;
  for (tuner::GroupResult const& g : r.groups) {
    groups.push_back(
        "{\"block_m\": " + std::to_string(g.block_m) +
        ", \"gemm1_candidates\": " + std::to_string(g.gemm1_candidates) +
        ", \"gemm2_candidates\": " + std::to_string(g.gemm2_candidates) +
        ", \"base\": " + json_quote(core::short_string(g.base)) +
        ", \"gemm1_winner\": " + json_quote(g.gemm1_ok ? core::short_string(g.gemm1_winner) : "") +
        ", \"winner\": " + json_quote(g.ok ? core::short_string(g.winner) : "") +
        ", \"winner_us\": " + json_number(g.ok ? g.winner_stats.median_us : 0) +
        ", \"carried\": " + std::to_string(g.carried) + "}");
  }
  return "\"per_gemm\": " + std::string(r.per_gemm ? "true" : "false") +
         ", \"joint_product\": " + std::to_string(r.joint_product) + ", \"groups\": [" +
         join(groups, ", ") + "]";
}

std::string counts_json(tuner::BucketResult const& r) {
  std::vector<std::string> outcomes;
  for (auto const& [o, n] : r.outcomes) {
    outcomes.push_back(json_quote(tuner::to_string(o)) + ": " + std::to_string(n));
  }
  std::vector<std::string> pruned;
  for (auto const& [why, n] : r.pruned)
    pruned.push_back(json_quote(why) + ": " + std::to_string(n));
  return "\"candidates\": " + std::to_string(r.candidates) + ", \"outcomes\": {" +
         join(outcomes, ", ") + "}, \"pruned\": {" + join(pruned, ", ") +
         "}, \"resumed\": " + std::to_string(r.resumed) +
         ", \"not_run\": " + std::to_string(r.not_run) +
         ", \"measured\": " + std::to_string(r.measured) +
         ", \"precompiles\": " + std::to_string(r.precompiles) + ", " + groups_json(r);
}

/// The finalists tied with the winner, by their short names: ["m128n256...", ...].
std::string tied_json(tuner::BucketResult const& r) {
  std::vector<std::string> names;
  for (core::MoeConfig const& c : r.tied) names.push_back(json_quote(core::short_string(c)));
  return "[" + join(names, ", ") + "]";
}

}  // namespace

std::string bucket_line(tuner::BucketResult const& r) {
  std::string out = "bucket " + std::to_string(r.bucket) + ": " + core::short_string(r.winner) +
                    "  " + timing_text(r.winner_stats);
  if (r.incumbent_ok) {
    char m[32];
    std::snprintf(m, sizeof(m), "%+.1f%%",
                  100 * core::speedup_margin(r.incumbent_stats.median_us,
                                             r.has_challenger ? r.challenger_stats.median_us
                                                              : r.incumbent_stats.median_us));
    out += "  incumbent " + core::short_string(r.incumbent) + " " + timing_text(r.incumbent_stats);
    if (r.has_challenger) {
      out += "  best challenger " + core::short_string(r.challenger) + " margin " + m;
    }
    out += r.tie                      ? "  tie (incumbent kept)"
           : r.verdict == "undecided" ? "  undecided (incumbent kept)"
           : r.incumbent_kept         ? "  incumbent kept"
                                      : "  challenger wins";
    if (r.settle_rounds > 0) {
      out += " after " + std::to_string(r.settle_rounds) + " settling final round" +
             (r.settle_rounds > 1 ? "s" : "");
    }
  } else {
    out += "  (incumbent " + core::short_string(r.incumbent) + " failed)";
  }
  out += "  [" + r.summary;
  if (r.per_gemm) {
    out += "; per GEMM: " + std::to_string(r.measured) + " checked, joint product " +
           std::to_string(r.joint_product);
  }
  if (!r.tied.empty()) {
    out += "; tied with " + std::to_string(r.tied.size()) + ": " + core::short_string(r.tied[0]);
    if (r.tied.size() > 1) out += ", ...";
  }
  if (r.repeats > 0) {
    out += "; agreement " + std::to_string(r.agreeing) + "/" + std::to_string(r.repeats);
  }
  if (r.resumed > 0) out += "; " + std::to_string(r.resumed) + " from the store";
  return out + "]";
}

std::string pruned_line(tuner::BucketResult const& r) {
  int total = 0;
  std::vector<std::string> parts;
  for (auto const& [why, n] : r.pruned) {
    total += n;
    parts.push_back(why + " " + std::to_string(n));
  }
  if (total == 0) return "";
  return "  pruned " + std::to_string(total) + " by can_implement (" + join(parts, ", ") + ")";
}

void TuneJson::begin_shape(std::string const& name, std::string const& table,
                           std::string const& backend) {
  if (!enabled_) return;
  shape_head_ = "{\"name\": " + json_quote(name) + ", \"table\": " + json_quote(table) +
                ", \"backend\": " + json_quote(backend);
  buckets_.clear();
}

void TuneJson::pinned_bucket(int64_t bucket, core::MoeConfig const& config,
                             tuner::BucketResult const* measured) {
  if (!enabled_) return;
  std::string text = "{\"bucket\": " + std::to_string(bucket) +
                     ", \"outcome\": \"pinned\", \"winner\": " + core::to_json_text(config, -1);
  if (measured != nullptr) {
    text += ", \"pinned\": " +
            (measured->incumbent_ok ? stats_json(measured->incumbent_stats) : "null") +
            ", \"tuner_winner\": " + json_quote(core::short_string(measured->winner)) +
            ", \"tuner\": " + stats_json(measured->winner_stats) +
            ", \"verdict\": " + json_quote(measured->verdict);
  }
  buckets_.push_back(text + "}");
}

void TuneJson::tuned_bucket(tuner::BucketResult const& r, std::string const& command) {
  if (!enabled_) return;
  double const challenger_us =
      r.has_challenger ? r.challenger_stats.median_us : r.incumbent_stats.median_us;
  buckets_.push_back(
      "{\"bucket\": " + std::to_string(r.bucket) +
      ", \"outcome\": \"tuned\", \"winner\": " + core::to_json_text(r.winner, -1) +
      ", \"winner_short\": " + json_quote(core::short_string(r.winner)) + ", \"time_us\": " +
      json_number(r.winner_stats.median_us) + ", \"winner_stats\": " + stats_json(r.winner_stats) +
      ", \"incumbent\": " + core::to_json_text(r.incumbent, -1) +
      ", \"incumbent_ok\": " + (r.incumbent_ok ? "true" : "false") +
      ", \"incumbent_stats\": " + (r.incumbent_ok ? stats_json(r.incumbent_stats) : "null") +
      ", \"challenger\": " + (r.has_challenger ? core::to_json_text(r.challenger, -1) : "null") +
      ", \"challenger_stats\": " + (r.has_challenger ? stats_json(r.challenger_stats) : "null") +
      ", \"margin\": " +
      json_number(core::speedup_margin(r.incumbent_stats.median_us, challenger_us)) +
      ", \"verdict\": " + json_quote(r.verdict) + ", \"tie\": " + (r.tie ? "true" : "false") +
      ", \"incumbent_kept\": " + (r.incumbent_kept ? "true" : "false") +
      ", \"settle_rounds\": " + std::to_string(r.settle_rounds) + ", \"tied\": " + tied_json(r) +
      ", \"repeats\": " + std::to_string(r.repeats) +
      ", \"agreeing\": " + std::to_string(r.agreeing) + ", " + counts_json(r) +
      ", \"digest\": " + json_quote(r.digest) + ", \"command\": " + json_quote(command) + "}");
}

void TuneJson::failed_bucket(tuner::BucketResult const& r) {
  if (!enabled_) return;
  buckets_.push_back(
      "{\"bucket\": " + std::to_string(r.bucket) +
      ", \"outcome\": \"all_failed\", \"aborted\": " + (r.aborted ? "true" : "false") +
      ", \"summary\": " + json_quote(r.summary) + ", " + counts_json(r) + "}");
}

void TuneJson::end_shape() {
  if (!enabled_) return;
  shapes_.push_back("    " + shape_head_ + ", \"buckets\": [\n      " +
                    join(buckets_, ",\n      ") + "\n    ]}");
}

void TuneJson::finish(std::ostream& out, std::string const& store, int64_t run,
                      double elapsed_s) const {
  if (!enabled_) return;
  out << "{\n  \"shapes\": [\n"
      << join(shapes_, ",\n") << "\n  ],\n  \"store\": " << json_quote(store)
      << ",\n  \"run\": " << run << ",\n  \"elapsed_s\": " << json_number(elapsed_s) << "\n}\n";
}

ProgressBar::ProgressBar(int total_buckets, bool tty) : total_(total_buckets), tty_(tty) {}

void ProgressBar::update(int64_t bucket, int index, double fraction) {
  double const elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double const overall = (index - 1 + fraction) / std::max(1, total_);
  double const eta = overall > 0 ? elapsed / overall - elapsed : 0;
  char line[160];
  if (tty_) {
    if (elapsed - last_draw_s_ < 0.1 && fraction < 1) return;  // redraw at most 10 times a second
    last_draw_s_ = elapsed;
    int const width = 30;
    int const filled = static_cast<int>(std::lround(overall * width));
    std::snprintf(line, sizeof(line), "\r[%-*s] %3.0f%%  bucket %lld (%d/%d)  %.0f s, ETA %.0f s ",
                  width, std::string(static_cast<size_t>(filled), '#').c_str(), 100 * overall,
                  static_cast<long long>(bucket), index, total_, elapsed, eta);
    std::cerr << line << std::flush;
  } else if (fraction >= 1 && index != last_printed_) {
    last_printed_ = index;
    std::snprintf(line, sizeof(line), "tune: bucket %lld done (%d/%d), %.1f s, ETA %.0f s\n",
                  static_cast<long long>(bucket), index, total_, elapsed, eta);
    std::cerr << line << std::flush;
  }
}

void ProgressBar::done() {
  if (tty_) std::cerr << "\r" << std::string(78, ' ') << "\r" << std::flush;
}

}  // namespace moetune::cli
