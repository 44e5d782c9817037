// The bounded in-process sweep of knobs "auto"; see auto_tune.hpp.
#include "runtime/auto_tune.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <vector>

#include "kernels/cpu/output_check.hpp"
#include "kernels/testbed.hpp"

namespace moetune::runtime {
namespace {

using Clock = std::chrono::steady_clock;

struct Timed {
  core::MoeConfig config;
  std::vector<double> samples_us;
  double median_us = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t const n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string today() {
  std::time_t const t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

/// The default first, then the search space without duplicates, pruned by can_implement.
std::vector<core::MoeConfig> candidates(core::Backend const& backend, core::MoeProblem const& p) {
  std::vector<core::MoeConfig> out = {backend.default_config(p)};
  for (core::MoeConfig const& c : backend.search_space(p)) {
    if (std::find(out.begin(), out.end(), c) != out.end()) continue;
    if (backend.can_implement(p, c).ok()) out.push_back(c);
  }
  return out;
}

/// Every candidate in order until the deadline (the default, first, always runs, so an
/// exhausted budget still yields a measured answer): those that pass their check, timed once.
std::vector<Timed> screen(kernels::Testbed& testbed, std::vector<core::MoeConfig> const& space,
                          kernels::Tolerance const& tol, Clock::time_point deadline, int first_reps,
                          int* tried) {
  std::vector<Timed> passed;
  for (size_t i = 0; i < space.size(); ++i) {
    if (i > 0 && Clock::now() >= deadline) break;
    ++*tried;
    auto check = testbed.check(space[i]);
    if (!check.ok() || !kernels::cpu::check_passed(*check, tol)) continue;
    auto t = testbed.time(space[i], 1, first_reps);
    if (!t.ok()) continue;
    passed.push_back({space[i], t->samples_us, t->median_us});
  }
  return passed;
}

/// Finalists: the default (first, when it passed) and the three fastest others, re-timed in up
/// to three interleaved passes before the deadline; their medians over all samples.
std::vector<Timed> final_round(kernels::Testbed& testbed, std::vector<Timed> const& passed,
                               bool default_passed, Clock::time_point deadline, int final_reps) {
  std::vector<Timed> finals(passed.begin() + (default_passed ? 1 : 0), passed.end());
  std::sort(finals.begin(), finals.end(),
            [](Timed const& a, Timed const& b) { return a.median_us < b.median_us; });
  if (finals.size() > 3) finals.resize(3);
  if (default_passed) finals.insert(finals.begin(), passed.front());
  for (int pass = 0; pass < 3 && Clock::now() < deadline; ++pass) {
    for (Timed& f : finals) {
      auto t = testbed.time(f.config, 0, std::max(1, final_reps / 3));
      if (t.ok())
        f.samples_us.insert(f.samples_us.end(), t->samples_us.begin(), t->samples_us.end());
    }
  }
  for (Timed& f : finals) f.median_us = median(f.samples_us);
  return finals;
}

/// The result's row source: what was measured, how, and the command that repeats it.
core::Source auto_source(std::string const& backend_name, core::Backend const& backend,
                         core::MoeProblem const& problem, int64_t bucket,
                         core::RoutingProfile const& routing, AutoTuneOptions const& options) {
  core::Source src;
  src.kind = "tuned";
  src.date = today();
  src.device = backend.device().name;
  src.protocol = "moetune-auto-v1: in-process sweep, budget " +
                 std::to_string(static_cast<int>(options.budget_s)) +
                 " s, reference check, median; routing " + core::format_routing(routing);
  src.command = "moetune run --backend " + backend_name + " --problem " +
                core::format_problem_spec(problem) + " --m " + std::to_string(bucket) +
                " --knobs auto";
  return src;
}

}  // namespace

core::Result<AutoTuneResult> auto_tune_bucket(std::string const& backend_name,
                                              core::Backend const& backend,
                                              core::MoeProblem problem, int64_t bucket,
                                              core::RoutingProfile const& routing,
                                              AutoTuneOptions const& options) {
  auto const deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options.budget_s));
  problem.num_tokens = bucket;
  auto testbed = kernels::make_testbed(backend_name);
  if (!testbed.ok()) return testbed.error();
  (*testbed)->set_fast_paths(options.fast_paths);
  MOETUNE_RETURN_IF_ERROR((*testbed)->prepare(problem, routing, options.seed));
  std::vector<core::MoeConfig> const space = candidates(backend, problem);
  int tried = 0;
  std::vector<Timed> const passed = screen(**testbed, space, kernels::tolerance_for(problem),
                                           deadline, options.first_reps, &tried);
  if (passed.empty()) {
    return core::make_error(core::ErrorCode::kInternal, "auto " + core::to_string(problem),
                            "no candidate passed its check (not even the default); run "
                            "`moetune tune` to see each candidate's outcome");
  }
  bool const default_passed = passed.front().config == space.front();
  std::vector<Timed> const finals =
      final_round(**testbed, passed, default_passed, deadline, options.final_reps);
  auto best = std::min_element(finals.begin(), finals.end(), [](Timed const& a, Timed const& b) {
    return a.median_us < b.median_us;
  });
  bool keep_default =
      default_passed && best->median_us > finals.front().median_us * (1.0 - options.margin);
  Timed const& winner = keep_default ? finals.front() : *best;

  AutoTuneResult r;
  r.config = winner.config;
  r.candidates_tried = tried;
  r.default_kept = keep_default;
  r.source = auto_source(backend_name, backend, problem, bucket, routing, options);
  r.source.numbers = {{"time_us", winner.median_us},
                      {"candidates", static_cast<double>(tried)},
                      {"space", static_cast<double>(space.size())}};
  if (default_passed) r.source.numbers["default_us"] = finals.front().median_us;
  return r;
}

}  // namespace moetune::runtime
